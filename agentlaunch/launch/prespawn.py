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

``AGENTLAUNCH_NO_PRESPAWN=1`` turns this off.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import signal
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentlaunch.launch.transport import Child, window_size

CACHE_DIR = "launch-plans"
PLANS_KEEP = 64  # plans kept (the newest): one per agent, agents dir, working dir and current directory
SESSION = "{session}"
NO_VALUE = ("-c", "--continue", "-q", "--quiet", "--json", "--force")
WITH_VALUE = ("-p", "--prompt", "--timeout", "--working-dir", "--agents-dir", "--templates-dir")


class Prespawned:
    """A CLI started from the last plan, waiting to be adopted (a plain class: dataclasses cost ~10 ms to import)."""

    __slots__ = ("child", "session_id", "argv", "env", "digest", "adopted")

    def __init__(self, child: Child, session_id: str, argv: list[str], env: dict[str, str], digest: str) -> None:
        self.child, self.session_id, self.argv, self.env, self.digest = child, session_id, argv, env, digest
        self.adopted = False


_pending: Prespawned | None = None


def _state_dir() -> Path:
    # The same rule as paths.state_dir(), without importing platformdirs at this point.
    value = os.environ.get("AGENTLAUNCH_STATE_DIR")
    if value:
        return Path(value).expanduser()
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "agentlaunch"


def plan_key(agent: str, agents_dir: str | None, working_dir: str | None) -> str:
    """Which earlier plan a launch may reuse: same agent, same place, same options that shape the plan."""
    where = agents_dir or os.environ.get("AGENTLAUNCH_AGENTS_DIR") or ""
    identity = [
        agent,
        os.path.normpath(where) if where else "",
        os.path.normpath(working_dir) if working_dir else "",
        os.getcwd(),
    ]
    return hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:24]


def headless_new_session(args: Sequence[str]) -> tuple[str, str | None, str | None] | None:
    """(agent, --agents-dir, --working-dir) when ``args`` are a headless `run` of a new session, else None."""
    if not args or args[0] != "run":
        return None
    positional: list[str] = []
    options: dict[str, str] = {}
    i = 1
    while i < len(args):
        arg = args[i]
        name, _, inline = arg.partition("=")
        if arg in ("-r", "--resume", "-c", "--continue", "-h", "--help") or name == "--resume":
            return None
        if name in WITH_VALUE:
            if inline:
                options[name] = inline
            elif i + 1 < len(args):
                options[name] = args[i + 1]
                i += 1
        elif arg in NO_VALUE:
            pass
        elif arg.startswith("-") and arg != "-":
            return None  # an option this shortcut does not know: let the full launch decide
        else:
            positional.append(arg)
        i += 1
    has_prompt = len(positional) >= 2 or "-p" in options or "--prompt" in options
    if not positional or not has_prompt:
        return None
    return positional[0], options.get("--agents-dir"), options.get("--working-dir")


def _env_of(agent_yaml: Path, plan: Mapping[str, Any]) -> dict[str, str] | None:
    """The agent's ``env`` (re-read each launch, never cached: it may hold secrets); None when unreadable.

    An agent.yaml unchanged since the plan, which had no env then, has none now:
    no need to parse it (importing yaml alone takes ~20 ms before the spawn).
    """
    try:
        data_bytes = agent_yaml.read_bytes()
    except OSError:
        return None
    if plan.get("agent_yaml_digest") == hashlib.sha256(data_bytes).hexdigest() and plan.get("agent_env") is False:
        return {}
    import yaml

    try:
        data = yaml.safe_load(data_bytes.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError):
        return None
    env = data.get("env") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}


def start(args: Sequence[str]) -> None:
    """At the entry point: spawn the CLI from the last plan, when there is one and it still holds."""
    global _pending
    if os.environ.get("AGENTLAUNCH_NO_PRESPAWN"):
        return
    shape = headless_new_session(args)
    if shape is None:
        return
    try:
        plan = json.loads((_state_dir() / CACHE_DIR / f"{plan_key(*shape)}.json").read_text("utf-8"))
        instructions = Path(plan["instructions"])
        digest = hashlib.sha256(instructions.read_bytes()).hexdigest()
        if digest != plan["digest"]:
            return
        agent_env = _env_of(Path(plan["agent_yaml"]), plan)
        if agent_env is None:
            return
        session_id = str(uuid.uuid4())
        argv = [a.replace(SESSION, session_id) for a in plan["argv"]]
        extra = {**plan["plan_env"], **agent_env}
        env = {**os.environ, **extra}
        child = Child(argv, env, Path(plan["cwd"]), size=window_size())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return
    except Exception:  # noqa: BLE001 - never let the shortcut break a launch
        return
    _pending = Prespawned(child, session_id, argv, extra, digest)
    started = _pending
    atexit.register(lambda: None if started.adopted else discard(started))


def take() -> Prespawned | None:
    """The pre-started child, for the launch to adopt or refuse (once)."""
    global _pending
    pending, _pending = _pending, None
    return pending


def discard(pending: Prespawned | None = None) -> None:
    """Kill a pre-started child that will not be used."""
    target = pending or take()
    if target is None or target.adopted:
        return
    target.child.signal_group(signal.SIGKILL)
    with contextlib.suppress(Exception):
        target.child.wait(timeout=5)
    target.child.close()


def adopt(pending: Prespawned | None, argv: Sequence[str], env_extra: Mapping[str, str], digest: str) -> Child | None:
    """The pre-started child when it was started exactly as the launch would start it (else it is killed)."""
    if pending is None:
        return None
    if pending.argv == list(argv) and pending.env == dict(env_extra) and pending.digest == digest:
        pending.adopted = True
        return pending.child
    discard(pending)
    return None


def remember(
    key: str, argv: Sequence[str], session_id: str, plan_env: Mapping[str, str], instructions: Path, digest: str,
    agent_yaml: Path, agent_env: bool, cwd: Path, state_dir: Path,
) -> None:  # fmt: skip
    """Keep this launch's plan for the next one (only what is not secret: the agent's env is re-read from agent.yaml)."""
    from agentlaunch.definitions.deliver import keep_newest, write_atomic

    try:
        yaml_digest: str | None = hashlib.sha256(agent_yaml.read_bytes()).hexdigest()
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
    }
    path = state_dir / CACHE_DIR / f"{key}.json"
    data = json.dumps(record, sort_keys=True).encode()
    with contextlib.suppress(OSError):
        if path.exists() and path.read_bytes() == data:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data)
        keep_newest(path.parent, PLANS_KEEP)
