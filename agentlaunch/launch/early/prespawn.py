"""Start the provider CLI while agentlaunch itself is still starting.

A headless `agentlaunch run AGENT PROMPT` on a new session spends a few
hundred milliseconds importing and validating before it can spawn the CLI,
which then spends about a second starting. When the previous launch of the
same agent from the same place left a plan (argv, environment additions,
instructions file digest), the entry point spawns the CLI from that plan
at once, with stdlib imports only. The full launch then computes the real
plan: when it is identical (same argv, same environment, same instructions
bytes) it adopts the running child; otherwise it kills the child unused and
spawns as usual. A child that is never adopted is killed at exit.

Which command lines start anything early is decided here, before the CLI framework is imported: the plain
forms `run AGENT [PROMPT]` with the few options of :data:`EARLY_OPTIONS` (:func:`read_run`). Any other (help, an
option it does not know, ``--``, combined short flags) starts nothing early; Typer reads every command line, this
one included, for the launch itself. A misreading could only waste a spawn (the launch adopts a child started
exactly as it would start it, else kills it unused); ``tests/test_fast_paths.py`` holds :func:`read_run` to click's
reading of generated command lines.

``AGENTLAUNCH_NO_PRESPAWN=1`` turns this off.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from hashlib import sha256
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import uuid4

from agentlaunch import paths
from agentlaunch.fsutil import read_regular
from agentlaunch.launch.early.early_child import Prespawned as Prespawned  # the launch's modules name it here
from agentlaunch.launch.early.early_plans import CACHE_DIR, PLANS_KEEP, env_of, write_if_changed
from agentlaunch.launch.reaper import become_subreaper
from agentlaunch.launch.transport import Child, window_size

SESSION = "{session}"
# `run`'s options the early start reads, each with its parameter's name and whether it takes a value (a test holds
# them to `run`'s click definition); any other option leaves the command line to the launch alone.
EARLY_OPTIONS = {
    "-p": ("prompt_opt", True),
    "--prompt": ("prompt_opt", True),  # a headless turn's prompt
    "--agents-dir": ("agents_dir", True),
    "--working-dir": ("working_dir", True),  # which plan applies (its key)
    "-q": ("quiet", False),
    "--quiet": ("quiet", False),  # no say in the plan
    "--json": ("as_json", False),
    "--line": ("line", False),  # headless, or the line chat: not the CLI's interface
}
INTERFACE_NOT = ("line", "as_json")  # without a prompt: the line chat, or refused (not the CLI's own interface)


if TYPE_CHECKING:
    from typing import Any


class EarlyTurn(Prespawned):
    """A per-turn CLI started with its first turn's argv, prompt included (:mod:`agentlaunch.launch.early.early_turn`):
    it waits for the end of its stdin, which only an adoption gives it, before it sends anything."""

    __slots__ = ()
    per_turn = True


_pending: Prespawned | None = None


def plan_key(agent: str, agents_dir: str | None, working_dir: str | None) -> str:
    """Which earlier plan a launch may reuse: same agent, same place, same options that shape the plan."""
    where = agents_dir or os.environ.get("AGENTLAUNCH_AGENTS_DIR") or ""
    identity = [
        agent,
        os.path.normpath(where) if where else "",
        os.path.normpath(working_dir) if working_dir else "",
        os.getcwd(),
    ]
    return sha256(json.dumps(identity).encode()).hexdigest()[:24]


def read_run(args: Sequence[str]) -> tuple[tuple[str, str | None, str | None], str | None, set[str]] | None:
    """A plain `run` of ``args``: the plan's place (agent, --agents-dir, --working-dir), its prompt (None: none
    given; ``-``: on stdin) and the flags given, by parameter name; None for anything else: not `run`, help, an
    option not in :data:`EARLY_OPTIONS`, ``--``, a value missing, empty or like an option, a prompt given twice,
    an argument too many."""
    if len(args) < 2 or args[0] != "run":
        return None
    given: dict[str, str] = {}
    flags: set[str] = set()
    positional: list[str] = []
    rest = iter(args[1:])
    for arg in rest:
        if arg == "-" or not arg.startswith("-"):
            positional.append(arg)
            continue
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name not in EARLY_OPTIONS:
            return None
        param, takes = EARLY_OPTIONS[name]
        if not takes:
            if eq:
                return None  # a flag given a value: click refuses it
            flags.add(param)
            continue
        value = value if eq else next(rest, "")
        if not value or value.startswith("-") or param in given:
            return None
        given[param] = value
    if not 1 <= len(positional) <= 2 or (len(positional) == 2 and "prompt_opt" in given):
        return None
    prompt = positional[1] if len(positional) == 2 else given.get("prompt_opt")
    return (positional[0], given.get("agents_dir"), given.get("working_dir")), prompt, flags


_moment: datetime | None = None


def moment() -> datetime | None:
    """The time the early start gave the startup message of the CLI it started (None: it started none).

    The launch's own startup message takes it too: a launch that crossed a ten-minute boundary (the message's
    time is rounded down to ten minutes) between its early start and its own rendering would otherwise name
    another time than the CLI it started early, and refuse it.
    """
    return _moment


def start(args: Sequence[str]) -> None:
    """At the entry point: spawn the CLI from the last plan, when there is one and it still holds."""
    global _pending, _moment
    if os.environ.get("AGENTLAUNCH_NO_PRESPAWN"):
        return
    now = datetime.now()
    parsed = read_run(args)
    if parsed is None:
        return
    shape, prompt, flags = parsed
    state_dir = paths.state_dir()
    if prompt is None:
        if not flags & set(INTERFACE_NOT):
            _start_interface(state_dir, plan_key(*shape), now)
        return
    try:
        plan = json.loads(read_regular(state_dir / CACHE_DIR / f"{plan_key(*shape)}.json", 1 << 20))
        instructions = Path(plan["instructions"])
        digest = sha256(read_regular(instructions, 64 << 20)).hexdigest()
        if digest != plan["digest"]:
            return
        agent_env = env_of(Path(plan["agent_yaml"]), plan)
        if agent_env is None:
            return
        session_id = str(uuid4())
        planned = [a.replace(SESSION, session_id) for a in plan["argv"]]
        argv, kind = planned, Prespawned
        if "prompt_at" in plan:  # a per-turn CLI: the prompt is in its argv
            from agentlaunch.launch.early.early_turn import with_prompt

            if (turn := with_prompt(planned, plan, prompt, session_id, now)) is None:
                return
            argv, kind = turn, EarlyTurn
        extra = {**plan["plan_env"], **agent_env}
        env = {**os.environ, **extra}
        become_subreaper()  # before the CLI starts: an orphan of its comes back here, and the reaper follows its tree
        child = Child(argv, env, Path(plan["cwd"]), size=window_size())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return
    except Exception:  # noqa: BLE001 - never let the shortcut break a launch
        return
    _pending, _moment = kind(child, session_id, argv, extra, digest), now
    started = _pending
    atexit.register(lambda: None if started.adopted else discard(started))


def _start_interface(state_dir: Path, key: str, now: datetime) -> None:
    """The CLI's own interface from its last plan (:mod:`agentlaunch.launch.early.early_interface`), or the app-server
    Codex's interface runs on (:mod:`agentlaunch.launch.early.early_appserver`)."""
    global _pending, _moment
    from agentlaunch.launch.early import early_interface

    try:
        _pending = early_interface.start(state_dir, key, now)
        if _pending is None:
            from agentlaunch.launch.early import early_appserver

            _pending = early_appserver.start(state_dir, key)
    except Exception:  # noqa: BLE001 - never let the shortcut break a launch
        return
    if _pending is not None:
        started, _moment = _pending, now
        atexit.register(lambda: None if started.adopted else discard(started))


def take() -> Prespawned | None:
    """The pre-started child, for the launch to adopt or refuse (once)."""
    global _pending
    pending, _pending = _pending, None
    return pending


def discard(pending: Prespawned | None = None) -> None:
    """Kill a pre-started child that will not be used."""
    target = pending or take()
    if target is not None:
        target.discard()


def adopt(
    pending: Prespawned | None, argv: Sequence[str], env_extra: Mapping[str, str], digest: str, stdin: bytes = b""
) -> Child | None:
    """The pre-started child when it was started exactly as the launch would start it, ``stdin`` included (else it
    is killed)."""
    if pending is None:
        return None
    same = pending.argv == list(argv) and pending.env == dict(env_extra) and pending.stdin == stdin
    if same and pending.digest == digest:
        pending.adopted = True
        return pending.child
    discard(pending)
    return None


def remember(
    key: str,
    argv: Sequence[str],
    session_id: str,
    plan_env: Mapping[str, str],
    instructions: Path,
    digest: str,
    agent_yaml: Path,
    agent_env: bool,
    cwd: Path,
    state_dir: Path,
    turn: Mapping[str, object] | None = None,
) -> None:
    """Keep this launch's plan for the next one (only what is not secret: the agent's env is re-read from agent.yaml);
    ``turn``: where a per-turn CLI's argv holds its prompt (:func:`agentlaunch.launch.early.early_turn.turn_record`)."""
    from agentlaunch.fsutil import keep_newest

    try:
        yaml_digest: str | None = sha256(agent_yaml.read_bytes()).hexdigest()
    except OSError:
        yaml_digest = None
    record: dict[str, Any] = {
        "agent_yaml_digest": yaml_digest,
        "agent_env": agent_env,
        "argv": [a.replace(session_id, SESSION) for a in argv],
        "plan_env": dict(plan_env),
        "instructions": str(instructions),
        "digest": digest,
        "agent_yaml": str(agent_yaml),
        "cwd": str(cwd),
        **(turn or {}),
    }
    path = state_dir / CACHE_DIR / f"{key}.json"
    # A plan kept is advice for the next launch, never a reason to fail this one.
    with contextlib.suppress(OSError):
        if write_if_changed(path, json.dumps(record, sort_keys=True).encode()):
            keep_newest(path.parent, PLANS_KEEP)
