"""Start the CLI's own interface from the last plan while agentlaunch itself is still starting (the native mode).

`agentlaunch run AGENT` at a terminal spends a hundred milliseconds or more on
imports, the definition and the placement before it starts the CLI's
interface. When the previous launch of the same agent from the same place was
one too, it left a plan: the CLI's argv and environment additions, its working
directory, the files and hook sockets its native extras made in the launch's
runtime folder, the digests of the definition's files and of the delivered
instructions, and the ten minutes its startup message names. The entry point
(:func:`agentlaunch.launch.early.prespawn.start`) then makes a runtime folder, binds
the sockets, writes the files and starts the interface on a PTY at once, with
stdlib imports only. The full launch computes everything as usual and
:func:`adopt` s that child only when it was started exactly so (argv, whole
environment, working directory, instructions bytes); otherwise it is killed
(within the launch's first few hundred milliseconds, before the CLI has read
its first prompt) and the interface starts as it always did.

Nothing is started early when a definition file (or the agent folder's list of
files), the delivered instructions or
the ten minutes of the startup message changed, when the agent has an ``env``
(kept in no plan: it may hold secrets), when stdin or stdout is not a terminal,
TERM cannot draw, or the terminal is smaller than the interface needs. Only
adapters whose native extras live entirely in the runtime folder take part
(``early_interface``: Claude Code). ``AGENTLAUNCH_NO_PRESPAWN=1`` turns it off.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from hashlib import sha256
from pathlib import Path
from typing import Any
from uuid import uuid4

from agentlaunch import runtime_dirs
from agentlaunch.fsutil import read_regular, remove_tree
from agentlaunch.launch.early.early_child import Prespawned
from agentlaunch.launch.early.early_plans import CACHE_DIR, PLANS_KEEP, env_of, write_if_changed
from agentlaunch.launch.native.terminal import MIN_COLS, MIN_ROWS, saved_mode
from agentlaunch.launch.reaper import become_subreaper
from agentlaunch.launch.transport import Child, window_size

SUFFIX = ".interface"
SESSION, RUNTIME, STATUS = "{session}", "{runtime}", "{status}"
STREAM = "-held.sock"
"""A socket named so is a listening stream socket (``providers/native/hook_held``); any other a datagram socket."""
FILE_LIMIT = 64 << 20


class EarlyInterface(Prespawned):
    """An interface started from the last plan, with the runtime folder and sockets made for it."""

    __slots__ = ("runtime", "sockets", "started_at", "cwd")
    interface = True

    def __init__(
        self,
        child: Child,
        session_id: str,
        argv: list[str],
        env: dict[str, str],
        digest: str,
        runtime: Path,
        sockets: dict[str, socket.socket],
        started_at: float,
        cwd: Path,
    ) -> None:
        super().__init__(child, session_id, argv, env, digest)
        self.runtime: Path | None = runtime
        self.sockets = sockets
        self.started_at = started_at
        self.cwd = cwd

    def hand_over(self) -> tuple[Path, dict[str, socket.socket]]:
        """The runtime folder and its bound sockets, now the launch's to use and remove (once)."""
        runtime, sockets = self.runtime, self.sockets
        assert runtime is not None
        self.runtime, self.sockets = None, {}
        return runtime, sockets

    def release(self) -> None:
        for sock in self.sockets.values():
            sock.close()
        self.sockets = {}
        if self.runtime is not None:
            remove_tree(self.runtime, ignore_errors=True)
            self.runtime = None


def plan_path(state_dir: Path, key: str) -> Path:
    return state_dir / CACHE_DIR / f"{key}{SUFFIX}.json"


def time_bucket(now: datetime) -> str:
    """The ten minutes a startup message names (as :func:`agentlaunch.definitions.rendered.quantize_time` rounds)."""
    local = now.astimezone()
    return local.replace(minute=local.minute - local.minute % 10, second=0, microsecond=0).isoformat()


def _digest(path: Path) -> str:
    return sha256(read_regular(path, FILE_LIMIT)).hexdigest()


def _holds(plan: Mapping[str, Any], now: datetime) -> bool:
    """The plan still describes this launch: same ten minutes, same definition files and instructions, no env."""
    return plan["bucket"] == time_bucket(now) and inputs_hold(plan)


def inputs_hold(plan: Mapping[str, Any]) -> bool:
    """The definition files, the agent folder's list of files and the instructions are as the plan found them, and
    the agent has no env (:func:`keep_plan` kept them)."""
    if any(_digest(Path(path)) != digest for path, digest in plan["inputs"].items()):
        return False
    if sorted(os.listdir(Path(plan["agent_yaml"]).parent)) != plan["agent_files"]:
        return False  # a part added or removed (a soul.md where there was none)
    if _digest(Path(plan["instructions"])) != plan["digest"]:
        return False
    return env_of(Path(plan["agent_yaml"]), plan) == {}


def start(state_dir: Path, key: str, now: datetime) -> EarlyInterface | None:
    """Start the interface the plan under ``key`` describes, when a terminal is there and the plan still holds at
    ``now`` (the time its startup message names: :func:`agentlaunch.launch.early.prespawn.moment`)."""
    size = terminal_size()
    if size is None:
        return None
    try:
        plan = json.loads(read_regular(plan_path(state_dir, key), 1 << 20))
        if not _holds(plan, now):
            return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    runtime = runtime_dirs.make_for_launch()
    sockets: dict[str, socket.socket] = {}
    try:
        session_id = str(uuid4())
        status = Path(plan["status_dir"]) / f"{os.getpid()}.json" if plan["status_dir"] else None
        values = {SESSION: session_id, RUNTIME: str(runtime), STATUS: str(status)}
        for name in plan["sockets"]:
            sockets[str(runtime / name)] = _bind(runtime / name)
        for name, text in plan["files"].items():
            _write_new(runtime / name, fill(text, values).encode("utf-8"))
        argv = [fill(a, values) for a in plan["argv"]]
        env = {**os.environ, **{k: fill(v, values) for k, v in plan["env"].items()}}
        started_at = time.time()
        cwd = Path(plan["cwd"])
        become_subreaper()  # before the CLI starts: the reaper then reads agentlaunch's own tree, not all of /proc
        child = Child(argv, env, cwd, size=size, terminal=saved_mode(0))
    except BaseException:
        for sock in sockets.values():
            sock.close()
        remove_tree(runtime, ignore_errors=True)
        raise
    return EarlyInterface(child, session_id, argv, env, plan["digest"], runtime, sockets, started_at, cwd)


def terminal_size() -> tuple[int, int] | None:
    """The terminal's size when stdin and stdout are one that can draw the CLI's interface, else None."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()) or os.environ.get("TERM", "") in ("", "dumb"):
        return None
    size = window_size(1)
    return None if size[0] < MIN_COLS or size[1] < MIN_ROWS else size


def fill(text: str, values: Mapping[str, str]) -> str:
    for placeholder, value in values.items():
        text = text.replace(placeholder, value)
    return text


def _bind(path: Path) -> socket.socket:
    """A hook socket as :class:`agentlaunch.providers.native.hook_socket.HookSocket` binds it, or (a name ending
    :data:`STREAM`) the held hooks' listening socket as :func:`agentlaunch.providers.native.hook_held.listen` makes it."""
    stream = path.name.endswith(STREAM)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM if stream else socket.SOCK_DGRAM)
    try:
        sock.setblocking(False)
        sock.bind(str(path))
        os.chmod(path, 0o600)
        if stream:
            sock.listen(64)
    except OSError:
        sock.close()
        raise
    return sock


def _write_new(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def adopt(pending: EarlyInterface, argv: Sequence[str], env: Mapping[str, str], cwd: Path, digest: str) -> Child | None:
    """The early interface when it was started exactly as the launch would start it; else it is killed (None)."""
    if started_as(pending, argv, env, cwd, digest):
        pending.adopted = True
        return pending.child
    pending.discard()
    return None


def started_as(pending: Any, argv: Sequence[str], env: Mapping[str, str], cwd: Path, digest: str) -> bool:
    """``pending`` (an early interface or app-server) was started with exactly this argv, whole environment, working
    directory and instructions digest."""
    return bool(pending.argv == list(argv) and pending.env == dict(env) and pending.cwd == cwd and pending.digest == digest)


def remember(
    key: str,
    state_dir: Path,
    *,
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    runtime: Path,
    status: Path | None,
    session_id: str,
    instructions: Path,
    digest: str,
    agent_yaml: Path,
    inputs: Sequence[Path],
    now: datetime,
) -> None:
    """Keep this interface's start for the next launch's :func:`start` (the caller checked that the agent has no env).

    The session id, the runtime folder and the status record (named by the process id) are kept as placeholders.
    Nothing is kept when the environment drops a variable of agentlaunch's own or the runtime folder holds what
    the early start cannot make again.
    """
    if any(k not in env for k in os.environ) or status is not None and status.name != f"{os.getpid()}.json":
        return

    def blank(text: str) -> str:
        if status is not None:
            text = text.replace(str(status), STATUS)
        return text.replace(str(runtime), RUNTIME).replace(session_id, SESSION)

    files: dict[str, str] = {}
    sockets: list[str] = []
    try:
        for entry in os.scandir(runtime):
            info = entry.stat(follow_symlinks=False)
            if entry.name == runtime_dirs.OWNER:
                continue
            if stat.S_ISSOCK(info.st_mode):
                sockets.append(entry.name)
            elif stat.S_ISREG(info.st_mode):
                files[entry.name] = blank(read_regular(Path(entry.path), 1 << 20).decode("utf-8"))
            else:
                return
        record = {
            "argv": [blank(a) for a in argv],
            "env": {k: blank(v) for k, v in env.items() if os.environ.get(k) != v},
            "cwd": str(cwd),
            "files": files,
            "sockets": sorted(sockets),
            "status_dir": str(status.parent) if status is not None else None,
            "bucket": time_bucket(now),
        }
        keep_plan(plan_path(state_dir, key), record, instructions, digest, agent_yaml, inputs)
    except (OSError, UnicodeDecodeError):
        return  # a plan kept is advice for the next launch, never a reason to fail this one


def keep_plan(
    path: Path,
    record: Mapping[str, Any],
    instructions: Path,
    digest: str,
    agent_yaml: Path,
    inputs: Sequence[Path],
) -> None:
    """Write ``record`` at ``path`` with what :func:`inputs_hold` checks (the agent has no env); OSError when a file
    cannot be read or written."""
    full = {
        **record,
        "instructions": str(instructions),
        "digest": digest,
        "agent_yaml": str(agent_yaml),
        "agent_yaml_digest": _digest(agent_yaml),
        "agent_env": False,
        "inputs": {str(p): _digest(p) for p in inputs},
        "agent_files": sorted(os.listdir(agent_yaml.parent)),
    }
    if write_if_changed(path, json.dumps(full, sort_keys=True).encode()):
        from agentlaunch.fsutil import keep_newest

        keep_newest(path.parent, PLANS_KEEP)
