"""Watching the cacheable prefix from one launch of an agent to the next.

At every launch the parts that make up the prefix (each rendered section, the
skills index, the template, the order and delivery, the provider CLI's version
and the flags it is started with) are hashed and compared with the previous
launch of the same agent, kept in ``<state dir>/prefix/AGENT.json``. When
something changed, one line says what: the next model call then writes the
cache again instead of reading it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentlaunch.definitions.render import INSTRUCTIONS_TEMPLATE, Rendered, make_env
from agentlaunch.definitions.spec import AgentSpec
from agentlaunch.fsutil import read_regular, write_atomic

PREFIX_DIR = "prefix"
VERSIONS_FILE = "cli-versions.json"
VERSION_TIMEOUT = 15.0
# Arguments that name the session rather than shape the prompt.
SESSION_FLAGS = {"--session-id", "--resume", "-r"}
SESSION_SWITCHES = {"--continue", "-c"}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


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
    env = make_env(templates_dir)
    parts: dict[str, str] = {label: _digest(text) for label, text in rendered.parts}
    parts["skills index"] = _digest(json.dumps([[s.name, s.description] for s in spec.skills]))
    loader = env.loader
    assert loader is not None
    source, _, _ = loader.get_source(env, INSTRUCTIONS_TEMPLATE)
    parts["template"] = _digest(source)
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
        write_atomic(path, json.dumps(data, indent=1, sort_keys=True).encode())


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
) -> list[str]:
    """Record this launch's prefix; what changed since the agent's previous launch, named for a person ([] if nothing).

    ``interface``: the CLI's own interface (the native mode). Each provider's interface sends other tools than
    its headless mode (measured: Claude Code 2.1.332 describes its Agent tool otherwise, Codex 0.171.0 has 13
    tools against 10, Gemini 0.61.0 more tools), so its prefix is compared with the previous launch in the same
    mode, and switching modes alone is not reported as a change; ``agentlaunch doctor AGENT --live`` measures
    the difference between the modes.
    """
    version = cli_version(command, state_dir)
    current = fingerprint(spec, rendered, templates_dir, version, launch_flags(argv, session_id))
    path = state_dir / PREFIX_DIR / f"{spec.name}{'.interface' if interface else ''}.json"
    previous = _read_json(path).get("parts")
    _write_json(path, {"parts": current})
    if not isinstance(previous, dict):
        return []
    return changes({str(k): str(v) for k, v in previous.items()}, current)


def prefix_notice(changed: Sequence[str]) -> str | None:
    """The one line that says what changed, or None when nothing did."""
    if not changed:
        return None
    what = ", ".join(changed)
    return f"the instructions prefix changed since the last launch ({what}): the next call pays the cache-write price"
