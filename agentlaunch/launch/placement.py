"""Where an agent's instructions go: a file in the working directory, or a system-prompt file.

``delivery: file`` writes the provider's instructions file (CLAUDE.md / AGENTS.md /
GEMINI.md) into the working directory (the CLI reads it from there).
``delivery: system-prompt`` (Claude Code only) writes the same text into the
state directory, one file per agent, and passes it with the provider's
system-prompt flag (``--append-system-prompt-file``): the text then sits in the
system prompt, ahead of anything that names the working directory. Both go
through the same safe :func:`agentlaunch.definitions.deliver.deliver`.
``delivery: developer-instructions`` (Codex, its default) keeps the text in the
same per-agent state folder (AGENTS.md) and passes it on every ``codex exec`` as
``-c developer_instructions=<TOML string>``, behind the user's own ones
(:mod:`agentlaunch.providers.codex_instructions`); nothing goes into the working directory.
``delivery: gemini-home`` (Gemini, its default) keeps the text there too (GEMINI.md)
and builds a per-agent Gemini home whose global GEMINI.md carries it, passed as
``GEMINI_CLI_HOME`` on every turn (:mod:`agentlaunch.providers.gemini_home`).
A file delivered into a git working tree is added to the repository's
``info/exclude``, so it never shows in ``git status``. Every launch also
says, in one notice, when instructions files in the working directory load
text the model already gets (:mod:`agentlaunch.launch.double_load`).
The agent's skills are installed in the state directory where its CLI finds
them (:mod:`agentlaunch.definitions.skills_install`), when its descriptor's
skills route holds for the delivery. What each CLI is given for the text and
the skills (arguments, environment) is its adapter's ``deliver``: Claude Code
(and fake) get ``--add-dir`` of the agent's skills root, Gemini's per-agent home
links them, and a Codex agent with skills gets a per-agent ``CODEX_HOME`` that
links them beside the user's own entries (:mod:`agentlaunch.providers.codex_home`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from agentlaunch.datarecord import datarecord, field
from agentlaunch.definitions import render_cache
from agentlaunch.definitions.deliver import Ledger, deliver
from agentlaunch.definitions.git_exclude import exclude_from_git
from agentlaunch.definitions.rendered import Rendered
from agentlaunch.definitions.skills_install import InstalledSkills, install_skills
from agentlaunch.definitions.spec import AgentSpec
from agentlaunch.errors import StateError
from agentlaunch.launch.double_load import double_loading
from agentlaunch.providers import get_adapter

if TYPE_CHECKING:
    from agentlaunch.providers.base import Adapter

SYSTEM_PROMPT_DIR = "system-prompts"
FILE_DELIVERY = "file"
"""The one delivery every provider has: the instructions file in the working directory. Every other keeps the
text in the state directory (never in the working directory) and is its adapter's to carry."""


@datarecord(frozen=True)
class Placement:
    """The rendered instructions, where they were written, and the CLI arguments that point at them."""

    rendered: Rendered
    path: Path
    argv: list[str] = field(default_factory=list)
    """CLI arguments that carry or point at the instructions: for a persistent CLI, after its own;
    for a per-turn CLI, global options given on every turn (see :func:`with_placement_argv`)."""
    notices: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    """Environment the CLI gets on every turn, over everything else (gemini-home's ``GEMINI_CLI_HOME``;
    a codex agent with skills: its own ``CODEX_HOME``)."""
    skills: InstalledSkills | None = None
    """The agent's skills as installed for its CLI (None: it has none)."""
    fingerprint_argv: list[str] = field(default_factory=list)
    """``argv`` as the prefix fingerprint sees it: without the agent's own text, which it hashes section by
    section (so a changed soul is reported as the soul, not also as changed flags)."""


def system_prompt_path(state_dir: Path, agent: str, filename: str) -> Path:
    """The per-agent system-prompt file in the state directory (a stable path, launch after launch)."""
    return state_dir / SYSTEM_PROMPT_DIR / agent / filename


def instructions_path(spec: AgentSpec, working_dir: Path, state_dir: Path, filename: str) -> Path:
    """Where ``spec``'s rendered instructions are kept: the state directory's per-agent file, or the working directory."""
    if spec.delivery != FILE_DELIVERY:
        return system_prompt_path(state_dir, spec.name, filename)
    return working_dir / filename


def with_placement_argv(turn_argv: list[str], placement_argv: list[str]) -> list[str]:
    """A per-turn CLI's argv with the placement's arguments right after the command (global options:
    ``codex -c KEY=VALUE exec ...`` holds for ``exec`` and ``exec ... resume`` alike)."""
    if not placement_argv:
        return turn_argv
    return [turn_argv[0], *placement_argv, *turn_argv[1:]]


def place_instructions(
    spec: AgentSpec,
    working_dir: Path,
    state_dir: Path,
    today: date,
    templates_dir: Path | None = None,
    *,
    force: bool = False,
    hold: bool = True,
    env: Mapping[str, str] | None = None,
    adapter: Adapter | None = None,
) -> Placement:
    """Render ``spec``'s instructions and deliver them as its ``delivery`` says.

    What the provider's CLI gets is its adapter's to say (``adapter.deliver``: the
    arguments and environment that carry or point at the text and the skills);
    ``env`` (default: this process's environment plus ``spec.env``) is what it
    runs with, where the adapter finds the user's own CLI settings (Codex's
    config, the Gemini home linked into the agent's).
    """
    rendered = render_cache.instructions(spec, working_dir, today, state_dir, templates_dir)  # Jinja only when an input changed
    provider = adapter or get_adapter(spec.provider)
    # Only where the CLI will look; elsewhere an earlier launch's copy is removed.
    finds = provider.descriptor.finds_skills(spec.delivery)
    installed = install_skills(spec.skills if finds else (), spec.agents_dir, state_dir, spec.name)
    path = instructions_path(spec, working_dir, state_dir, rendered.filename)
    if spec.delivery != FILE_DELIVERY:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StateError(f"{path.parent}: cannot create the system-prompt folder ({exc.strerror})") from None
    seen = {**os.environ, **spec.env} if env is None else env
    delivered = provider.deliver(spec, rendered.text, path, installed, state_dir, seen)
    delivery = deliver(path, rendered.text, spec.name, state_dir, force=force, hold=hold)
    notices: list[str] = []
    if spec.delivery == FILE_DELIVERY:
        notices.extend(exclude_delivered(path, state_dir))
    if delivery.backup:
        notices.append(f"moved your {rendered.filename} aside to {delivery.backup}")
    if delivery.previous_agent:
        notices.append(f"{rendered.filename} held agent {delivery.previous_agent!r}'s instructions; now {spec.name!r}'s")
    twice = double_loading(working_dir, rendered.data, state_dir, path if spec.delivery == FILE_DELIVERY else None)
    if twice:
        notices.append(twice)
    return Placement(
        rendered=rendered,
        path=path,
        argv=delivered.argv,
        notices=notices,
        env=delivered.env,
        skills=installed,
        fingerprint_argv=delivered.argv if delivered.fingerprint_argv is None else delivered.fingerprint_argv,
    )


def exclude_delivered(path: Path, state_dir: Path) -> list[str]:
    """Keep a file delivered into a git working tree out of git; a notice when that could not be done.

    Under the delivery ledger's lock, so two launches adding lines to one exclude file do not lose one.
    """
    with Ledger(state_dir).locked():
        problem = exclude_from_git(path)
    return [problem] if problem else []
