"""A per-agent Claude Code folder (``CLAUDE_CONFIG_DIR``) for an agent with skills: its skills with no dialog.

Claude Code 2.1.332 lists the skills under ``$CLAUDE_CONFIG_DIR/skills`` (else
``~/.claude/skills``) as the user's own, in its system prompt and in ``/skills``.
The other ways measured on its interface (against the fake API, no key pressed):

- ``--add-dir <skills root>``: the skills are listed, but the interface stops on
  "Adding a new directory" at every launch and resume (cursor on "No, exit");
  a trust entry for the folder would have to be written into the user's
  ``~/.claude.json``;
- ``--settings`` with ``permissions.additionalDirectories``: no dialog, no skill
  ("No skills yet");
- ``--plugin-dir`` of a plugin holding the skills: no dialog, but each skill is
  renamed ``<plugin>:<name>`` and "locked by plugin";
- this folder: no dialog, each skill listed under its own name (``user``).

So an agent that has skills runs with ``CLAUDE_CONFIG_DIR`` at
``<state>/claude-homes/<agent>/``, a fixed path per agent, in which every entry
of the user's own folder (``$CLAUDE_CONFIG_DIR``, else ``~/.claude``:
settings.json, .credentials.json, projects/, plugins/ …) is a symlink to the
user's, and ``skills/`` is a folder of links to the agent's installed skills
and to the user's skills of other names. Nothing Claude Code writes for a
session stays in the agent's folder: the folders a session writes into
(:data:`SHARED_FOLDERS`: ``projects/`` for the transcripts, ``sessions/``,
``file-history/`` …) are made in the user's folder when missing, as Claude Code
makes them at a user's first session, and linked; ``history.jsonl`` is linked
before it exists (Claude Code creates it through the link); an entry Claude
Code makes there that nobody foresaw (a login's ``.credentials.json``,
``plugins/`` …) moves to the user's folder at the next launch
(:mod:`agentlaunch.providers.home_moves`, which also moves what earlier versions
left there), and becomes a link. So ``claude --resume``, ccusage and agentlaunch
find every session in the user's ``projects/``, whatever existed before.
``.claude.json`` links the user's own state file (``$CLAUDE_CONFIG_DIR/.claude.json``,
else ``~/.claude.json``: the onboarding, the trusted folders, the account, the
MCP servers), even before it exists (:mod:`agentlaunch.providers.claude_state_file`).
Measured: without that file Claude Code starts its onboarding and exits
("Unable to connect to Anthropic services"); through the link it starts at
once, and writes its own updates (startup counts, project entries) through it,
as it does without agentlaunch, the link staying a link.

Claude Code names its credential store after the folder (the keychain item on
macOS is ``Claude Code-credentials-<8 hex of the folder>`` when
``CLAUDE_CONFIG_DIR`` is set), so ``CLAUDE_SECURESTORAGE_CONFIG_DIR`` keeps the
user's own store: empty when the user has no ``CLAUDE_CONFIG_DIR`` (their
``~/.claude`` and the unsuffixed item), else theirs. Measured on Linux: an
OAuth login in the user's ``.credentials.json`` reaches the API as before
(``Authorization: Bearer`` of the user's token). A value the user set is kept.

Nothing is written into the working directory, and into the user's folder only
what Claude Code itself writes there without agentlaunch; an agent without
skills keeps the user's folder. Standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from agentlaunch.errors import StateError
from agentlaunch.providers.claude_state_file import link_state_file
from agentlaunch.providers.home_links import ensure_link, home_lock, link_entries, link_skills
from agentlaunch.providers.home_moves import move_into

HOMES_DIR = "claude-homes"
ENV_KEY = "CLAUDE_CONFIG_DIR"
STORE_KEY = "CLAUDE_SECURESTORAGE_CONFIG_DIR"
STATE_FILE = ".claude.json"
SKILLS = "skills"
KEPT = ".agentlaunch-kept"
"""Inside the agent's folder: a file of an earlier launch whose name the user's folder already held otherwise."""
OWN = frozenset({SKILLS, STATE_FILE, KEPT})
"""Entries of the agent's folder that are not one link to the user's entry of that name."""
SHARED_FOLDERS = (
    "projects",
    "sessions",
    "session-env",
    "file-history",
    "shell-snapshots",
    "todos",
    "plans",
    "backups",
    "plugins",
)
"""Folders Claude Code 2.1.332 writes into during a session (measured: a first session in an empty
``CLAUDE_CONFIG_DIR``): made in the user's folder when missing, so the link has a folder behind it (through a
link to a missing folder Claude Code wrote no transcript at all, and said nothing)."""
SHARED_FILES = frozenset({"history.jsonl"})
"""Files Claude Code appends to during a session: linked even before they exist (it creates them through the link)."""


def home_path(state_dir: Path, agent: str) -> Path:
    """The per-agent Claude Code folder (what ``CLAUDE_CONFIG_DIR`` is set to), stable launch after launch."""
    return state_dir / HOMES_DIR / agent


def user_folder(env: Mapping[str, str]) -> Path:
    """The user's own Claude Code folder: ``$CLAUDE_CONFIG_DIR`` when set (Claude Code's rule), else ``~/.claude``."""
    if env.get(ENV_KEY):
        return Path(env[ENV_KEY]).expanduser()
    return Path(env.get("HOME") or Path.home()).expanduser() / ".claude"


def user_state_file(env: Mapping[str, str]) -> Path:
    """The user's own ``.claude.json``: inside ``$CLAUDE_CONFIG_DIR`` when set, else in the home folder."""
    if env.get(ENV_KEY):
        return Path(env[ENV_KEY]).expanduser() / STATE_FILE
    return Path(env.get("HOME") or Path.home()).expanduser() / STATE_FILE


def prepare_home(state_dir: Path, agent: str, env: Mapping[str, str], skills: Mapping[str, Path]) -> dict[str, str]:
    """Build (or bring up to date) ``agent``'s Claude Code folder; the environment that points Claude Code at it.

    ``skills`` maps each of the agent's installed skills to its folder. Idempotent, and one launch at a time
    (:func:`~agentlaunch.providers.home_links.home_lock`): what Claude Code made in the agent's folder moves
    to the user's (:func:`claim_entries`), a link whose entry is gone is removed. A state directory where the
    folder cannot be made is a :class:`StateError`.
    """
    home = home_path(state_dir, agent)
    source = user_folder(env)
    try:
        with home_lock(home):
            home.mkdir(parents=True, exist_ok=True)
            same = source.resolve() == home.resolve()
            if not same:
                claim_entries(home, source)
                link_state_file(home / STATE_FILE, user_state_file(env), home / KEPT / STATE_FILE)
            link_entries(home, None if same else source, OWN | SHARED_FILES, keep=OWN | SHARED_FILES)
            for name in () if same else SHARED_FILES:
                ensure_link(home / name, source / name)  # the file may not exist yet: Claude Code makes it through
            link_skills(home / SKILLS, None if same else source / SKILLS, skills)
    except OSError as exc:
        where = exc.filename or home
        raise StateError(f"{where}: cannot prepare the agent's Claude Code folder ({exc.strerror or exc})") from None
    placed = {ENV_KEY: str(home)}
    if STORE_KEY not in env:
        placed[STORE_KEY] = env.get(ENV_KEY, "")
    return placed


def claim_entries(home: Path, source: Path) -> None:
    """The user's folder made with the entries a session writes into (as Claude Code does at a first session), and
    each entry Claude Code made in the agent's folder moved there (:func:`~agentlaunch.providers.home_moves.move_into`)."""
    source.mkdir(parents=True, exist_ok=True)
    for name in SHARED_FOLDERS:
        (source / name).mkdir(exist_ok=True)
    for entry in sorted(home.iterdir()):
        if entry.name in OWN or entry.is_symlink() or _passing(entry.name):
            continue
        move_into(entry, source / entry.name, home / KEPT / entry.name)
        if not os.path.lexists(entry):
            ensure_link(entry, source / entry.name)


def _passing(name: str) -> bool:
    """A name of the moment, never moved: Claude Code's write lock folders and temporary files, a link in flight."""
    return name.endswith(".lock") or ".tmp." in name or name.startswith(".") and name.endswith(".link")
