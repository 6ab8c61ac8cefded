"""Watching the cacheable prefix from one launch of an agent to the next.

At every launch the parts that make up the prefix (each rendered section, the
skills index, the template, the order and delivery, the provider CLI's version
and the flags it is started with) are hashed and compared with the previous
launch of the same agent, kept in ``<state dir>/prefix/AGENT.json``. When
something changed, one line says what: the next model call then writes the
cache again instead of reading it.

A CLI that records a conversation's system prompt and re-sends that record on
every resume (Claude Code 2.1.332's ``--system-prompt-snapshot``, on by default)
sends a resumed session the instructions it started with, whatever this launch
rendered: those parts are compared as the session recorded them (kept per
session in ``<state dir>/prefix/AGENT.sessions.json``), and an edit the session
does not get is reported apart (:class:`PrefixReport`'s ``held``), never as a
change that costs a cache write.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Sequence
from hashlib import sha256
from pathlib import Path
from typing import Any

from agentlaunch.datarecord import datarecord, field
from agentlaunch.definitions.rendered import INSTRUCTIONS_TEMPLATE, Rendered, template_search, template_source
from agentlaunch.definitions.spec import AgentSpec
from agentlaunch.errors import DefinitionError
from agentlaunch.fsutil import read_regular, write_atomic

PREFIX_DIR = "prefix"
VERSIONS_FILE = "cli-versions.json"
VERSION_TIMEOUT = 15.0
# Arguments that name the session rather than shape the prompt.
SESSION_FLAGS = {"--session-id", "--resume", "-r"}
SESSION_SWITCHES = {"--continue", "-c"}
LAUNCH_PARTS = ("CLI version", "flags")
"""The parts a resumed request always takes from the launch (the tools come with the CLI and its flags); the
others make up the instructions text, which a CLI that records the system prompt re-sends as recorded."""
SESSIONS_KEPT = 256  # sessions whose recorded instruction parts are kept per agent (the oldest are forgotten)


@datarecord(frozen=True)
class PrefixReport:
    """What a launch's prefix check found."""

    changed: list[str] = field(default_factory=list)
    """What differs in what the CLI really sends, since the agent's previous launch (a cache write)."""
    held: list[str] = field(default_factory=list)
    """What was edited since the resumed session recorded its system prompt, and does not reach it."""


def _digest(text: str) -> str:
    return sha256(text.encode("utf-8")).hexdigest()[:16]


def fingerprint(
    spec: AgentSpec,
    rendered: Rendered,
    templates_dir: Path | None,
    cli_version: str,
    flags: Sequence[str],
) -> dict[str, str]:
    """Hashes of everything that shapes the prefix, by the name a person knows it by (in prefix order).

    The sections come from the launch's own rendering (``rendered.parts``), not rendered again.
    """
    parts: dict[str, str] = {label: _digest(text) for label, text in rendered.parts}
    parts["skills index"] = _digest(json.dumps([[s.name, s.description] for s in spec.skills]))
    found = template_source(template_search(templates_dir), [INSTRUCTIONS_TEMPLATE])
    if found is None:
        raise DefinitionError(f"{INSTRUCTIONS_TEMPLATE}: template not found in {template_search(templates_dir)}")
    parts["template"] = _digest(found[0])
    parts["order"] = spec.prefix_order + ":" + ",".join(k for k in parts if k.startswith(("soul", "agent", "bundle")))
    parts["delivery"] = spec.delivery
    parts["CLI version"] = cli_version
    parts["flags"] = _digest("\0".join(flags))
    return parts


def launch_flags(argv: Sequence[str], session_id: str) -> list[str]:
    """The CLI arguments without the command path and without what names the session."""
    flags: list[str] = []
    skip = False
    for arg in argv[1:]:
        if skip:
            skip = False
            continue
        if arg in SESSION_FLAGS:
            skip = True
            continue
        if arg in SESSION_SWITCHES or arg == session_id:
            continue
        flags.append(arg)
    return flags


def changes(previous: dict[str, str], current: dict[str, str]) -> list[str]:
    """What differs between two fingerprints, named for a person."""
    named: list[str] = []
    for key, value in current.items():
        old = previous.get(key)
        if old == value:
            continue
        if key == "CLI version":
            named.append(f"CLI version {old or '?'} -> {value}")
        elif old is None:
            named.append(f"{key} (added)")
        elif key == "order":
            named.append("section order")
        else:
            named.append(key)
    for key in previous:
        if key not in current:
            named.append(f"{key} (removed)")
    return named


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_regular(path, 4 << 20))  # never blocks on a FIFO left in its place
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    # The record is advice, never a reason to refuse a launch.
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(data, indent=1, sort_keys=True).encode(), durable=False)


def cli_version(command: str, state_dir: Path) -> str:
    """``COMMAND --version``, cached per binary (real path, mtime, size): no extra process while it is unchanged."""
    try:
        real = os.path.realpath(command)
        st = os.stat(real)
    except OSError:
        return "unknown"
    key = f"{st.st_mtime_ns}:{st.st_size}"
    cache_path = state_dir / VERSIONS_FILE
    cache = _read_json(cache_path)
    entry = cache.get(real)
    if isinstance(entry, dict) and entry.get("key") == key and isinstance(entry.get("version"), str):
        return str(entry["version"])
    try:
        done = subprocess.run(
            [command, "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        lines = (done.stdout or done.stderr).strip().splitlines()
        version = lines[0].strip() if done.returncode == 0 and lines else "unknown"
    except (OSError, subprocess.SubprocessError):
        version = "unknown"
    cache[real] = {"key": key, "version": version}
    _write_json(cache_path, cache)
    return version


def record_prefix(
    spec: AgentSpec,
    rendered: Rendered,
    templates_dir: Path | None,
    command: str,
    argv: Sequence[str],
    session_id: str,
    state_dir: Path,
    *,
    interface: bool = False,
    resumed: bool = False,
    recorded_prompt: bool = False,
    forked_from: str | None = None,
) -> PrefixReport:
    """Record this launch's prefix; what changed since the agent's previous launch, named for a person.

    ``interface``: the CLI's own interface (the native mode). Each provider's interface sends other tools than
    its headless mode (measured: Claude Code 2.1.332 describes its Agent tool otherwise, Codex 0.171.0 has 13
    tools against 10, Gemini 0.61.0 more tools), so its prefix is compared with the previous launch in the same
    mode, and switching modes alone is not reported as a change; ``agentlaunch doctor AGENT --live`` measures
    the difference between the modes.

    ``recorded_prompt``: the CLI re-sends a resumed session's recorded system prompt (``resumed``), so the
    instruction parts sent are the ones the session recorded, and an edit since then is ``held``, not ``changed``.
    ``forked_from``: this new session is a fork of that one, and carries its record (measured on Claude Code
    2.1.332: ``--fork-session`` keeps the recorded system prompt), which becomes the fork's own.
    """
    version = cli_version(command, state_dir)
    current = fingerprint(spec, rendered, templates_dir, version, launch_flags(argv, session_id))
    path = state_dir / PREFIX_DIR / f"{spec.name}{'.interface' if interface else ''}.json"
    raw = _read_json(path).get("parts")
    previous = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else None
    sessions_path = state_dir / PREFIX_DIR / f"{spec.name}.sessions.json"
    sessions = _read_json(sessions_path)
    source = session_id if resumed else forked_from
    mine = sessions.get(source) if source else None
    prompt = {k: v for k, v in current.items() if k not in LAUNCH_PARTS}
    sent, held = current, []
    if source and recorded_prompt:
        # Unknown session (resumed from before agentlaunch kept this, or started elsewhere): its record is
        # taken to be the previous launch's, the likeliest (a session is mostly resumed right after itself).
        recorded = mine if isinstance(mine, dict) else {k: v for k, v in (previous or {}).items() if k not in LAUNCH_PARTS}
        if recorded:
            recorded = {str(k): str(v) for k, v in recorded.items()}
            held = changes(recorded, prompt)
            sent = {**recorded, **{k: current[k] for k in LAUNCH_PARTS}}
            prompt = recorded
    _write_json(path, {"parts": sent})
    if not (resumed and isinstance(mine, dict)):
        # What the session's system prompt was recorded from: its first launch. A resume with the snapshot off
        # sends its own text but does not record it (measured on 2.1.332: the next resume with it on sends the
        # first launch's text again), so a known session's record is never replaced.
        sessions.pop(session_id, None)
        sessions[session_id] = prompt
        while len(sessions) > SESSIONS_KEPT:
            sessions.pop(next(iter(sessions)))
        _write_json(sessions_path, sessions)
    if previous is None:
        return PrefixReport([], held)
    return PrefixReport(changes(previous, sent), held)


def prefix_notice(changed: Sequence[str]) -> str | None:
    """The one line that says what changed, or None when nothing did."""
    if not changed:
        return None
    what = ", ".join(changed)
    return f"the instructions prefix changed since the last launch ({what}): the next call pays the cache-write price"


def held_notice(held: Sequence[str], session_id: str, rewrite: str = "", forked_from: str | None = None) -> str | None:
    """The one line at a resume whose CLI re-sends the system prompt it recorded: the edit does not reach it.

    ``rewrite`` says what getting it costs (the context written to the cache again), when known; ``forked_from``:
    the session is a fork of that one, carrying its record.
    """
    if not held:
        return None
    if forked_from is not None:
        return (
            f"session {session_id[:8]}, a fork of {forked_from[:8]}, starts with the instructions {forked_from[:8]} "
            f"recorded when it started: your edit ({', '.join(held)}) does not reach it (Claude Code's --fork-session "
            "keeps a conversation's recorded system prompt): a new session gets the new text"
        )
    return (
        f"session {session_id[:8]} resumes with the instructions it recorded when it started: your edit "
        f"({', '.join(held)}) reaches new sessions only (Claude Code re-sends a conversation's recorded system prompt "
        "until it is compacted; a --fork-session fork keeps it too). For the new text here, add "
        f"`--system-prompt-snapshot off` to provider_flags{rewrite}, or start a new session"
    )
