"""Start native Codex's app-server from the last plan while agentlaunch itself is still starting.

A native Codex launch goes through an app-server agentlaunch owns
(:mod:`agentlaunch.launch.native.native_remote`): ``codex [-c …] app-server --listen
unix://RUNTIME/cx.sock``, then ``initialize``, ``thread/start``, the startup
message's ``turn/start`` and only then Codex's interface. The app-server takes
a few hundred milliseconds to open its socket (0.2-0.75 s on the development
machine), which the launch used to wait for after its imports and planning.
When the previous launch of the same agent from the same place went that way,
it left a plan: the app-server's argv and environment additions (the runtime
folder a placeholder), its working directory, the digests of the definition's
files and of the delivered instructions. The entry point
(:func:`agentlaunch.launch.early.prespawn.start`) then makes a runtime folder and
starts the app-server in it at once, with stdlib imports only, so it opens its
socket while agentlaunch imports and plans.

No model call can come from a plan that no longer holds: the app-server sends
nothing before a client's ``thread/start`` and ``turn/start`` (measured on
0.171.0 against the fake API's request log), and only the launch connects,
after :func:`adopt` found the server started exactly as it would start it
(argv, whole environment, working directory, instructions bytes). Otherwise the
server is ended (SIGTERM to its process group, SIGKILL after a bound), its
socket removed, and the launch starts its own in the same folder. One that is
never adopted is ended at exit (the atexit hook of :mod:`~agentlaunch.launch.early.prespawn`),
and one whose agentlaunch is killed first gets SIGTERM from the kernel
(``PR_SET_PDEATHSIG``; npm's node wrapper passes it on to the binary).

Nothing is started early when a definition file (or the agent folder's list of
files) or the delivered instructions changed, the agent has an ``env``, the
plan's ``--listen`` is not the runtime folder's socket, stdin or stdout is not
a terminal, or ``AGENTLAUNCH_CODEX_INTERFACE=direct``. ``AGENTLAUNCH_NO_PRESPAWN=1``
turns it off.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from uuid import uuid4

from agentlaunch import runtime_dirs
from agentlaunch.fsutil import read_regular, remove_tree
from agentlaunch.launch.early.early_child import Prespawned
from agentlaunch.launch.early.early_interface import RUNTIME, fill, inputs_hold, keep_plan, started_as, terminal_size
from agentlaunch.launch.early.early_plans import CACHE_DIR
from agentlaunch.launch.reaper import become_subreaper
from agentlaunch.platform_support import parent_death_signal

SUFFIX = ".appserver"
SOCKET_NAME = "cx.sock"
LOG_NAME = "app-server.log"
ROUTE_ENV = "AGENTLAUNCH_CODEX_INTERFACE"
"""``direct``: Codex's interface with its own app-server inside (no app-server of agentlaunch's to start)."""
LISTEN = f"unix://{RUNTIME}/{SOCKET_NAME}"
END_WAIT = 2.0  # seconds an app-server ended unused has after SIGTERM before SIGKILL


class EarlyAppServer(Prespawned):
    """An app-server started from the last plan, in the runtime folder made for it, waiting to be adopted."""

    __slots__ = ("server", "runtime", "cwd")
    interface = True  # it serves the CLI's own interface: a native launch of a new session takes it
    app_server = True

    def __init__(
        self, server: subprocess.Popen[bytes], argv: list[str], env: dict[str, str], digest: str, runtime: Path, cwd: Path
    ) -> None:
        super().__init__(None, str(uuid4()), argv, env, digest)  # type: ignore[arg-type]  # no PTY child here
        self.server = server
        self.runtime: Path | None = runtime
        self.cwd = cwd

    def hand_over(self) -> Path:
        """The runtime folder, now the launch's to use and remove (once)."""
        runtime = self.runtime
        assert runtime is not None
        self.runtime = None
        return runtime

    def end(self) -> None:
        """End the server unused: SIGTERM to its process group (npm's node wrapper and the binary), SIGKILL after
        :data:`END_WAIT`; its socket removed (the launch may start its own at that path)."""
        server = self.server
        for sig, wait in ((signal.SIGTERM, END_WAIT), (signal.SIGKILL, 5.0)):
            if server.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(server.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(wait)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server.pid, signal.SIGKILL)  # a binary the wrapper left behind
        with contextlib.suppress(OSError):
            os.unlink(socket_of(self.argv))

    def release(self) -> None:
        if self.runtime is not None:
            remove_tree(self.runtime, ignore_errors=True)
            self.runtime = None


def plan_path(state_dir: Path, key: str) -> Path:
    return state_dir / CACHE_DIR / f"{key}{SUFFIX}.json"


def socket_of(argv: Sequence[str]) -> str:
    """The socket path of an app-server's ``--listen unix://PATH`` (empty when there is none)."""
    at = list(argv).index("--listen") + 1 if "--listen" in argv else len(argv)
    return argv[at].removeprefix("unix://") if at < len(argv) else ""


def start(state_dir: Path, key: str) -> EarlyAppServer | None:
    """Start the app-server the plan under ``key`` describes, when a terminal is there and the plan still holds."""
    if terminal_size() is None or os.environ.get(ROUTE_ENV) == "direct":
        return None
    try:
        plan = json.loads(read_regular(plan_path(state_dir, key), 1 << 20))
        argv_plan: list[str] = plan["argv"]
        if argv_plan.count("--listen") != 1 or socket_of(argv_plan) != LISTEN.removeprefix("unix://"):
            return None  # only ever a socket in this launch's own runtime folder
        if not inputs_hold(plan):
            return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    runtime = runtime_dirs.make_for_launch()
    try:
        values = {RUNTIME: str(runtime)}
        argv = [fill(a, values) for a in argv_plan]
        extra = {k: fill(v, values) for k, v in plan["env"].items()}
        cwd = Path(plan["cwd"])
        become_subreaper()  # before the server starts: the reaper then reads agentlaunch's own tree
        with open(runtime / LOG_NAME, "wb") as log:
            server = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env={**os.environ, **extra},
                cwd=cwd,
                start_new_session=True,
                preexec_fn=parent_death_signal(signal.SIGTERM),
            )
    except BaseException:
        remove_tree(runtime, ignore_errors=True)
        raise
    return EarlyAppServer(server, argv, {**os.environ, **extra}, plan["digest"], runtime, cwd)


def adopt(
    pending: EarlyAppServer, argv: Sequence[str], env: Mapping[str, str], cwd: Path, digest: str
) -> subprocess.Popen[bytes] | None:
    """The early app-server when it was started exactly as the launch would start it and still runs; else it is
    ended (None)."""
    if started_as(pending, argv, env, cwd, digest) and pending.server.poll() is None:
        pending.adopted = True
        return pending.server
    pending.discard()
    return None


def remember(
    key: str,
    state_dir: Path,
    *,
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    runtime: Path,
    instructions: Path,
    digest: str,
    agent_yaml: Path,
    inputs: Sequence[Path],
) -> None:
    """Keep this app-server's start for the next launch's :func:`start` (the caller checked that the agent has no
    env). Nothing is kept when the environment drops a variable of agentlaunch's own."""
    if any(k not in env for k in os.environ):
        return
    where = str(runtime)
    record: dict[str, Any] = {
        "argv": [a.replace(where, RUNTIME) for a in argv],
        "env": {k: v.replace(where, RUNTIME) for k, v in env.items() if os.environ.get(k) != v},
        "cwd": str(cwd),
    }
    with contextlib.suppress(OSError):  # a plan kept is advice for the next launch, never a reason to fail this one
        keep_plan(plan_path(state_dir, key), record, instructions, digest, agent_yaml, inputs)
