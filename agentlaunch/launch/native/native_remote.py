"""The native Codex mode through an app-server agentlaunch owns (issue #27).

``agentlaunch run AGENT`` of a Codex agent (and ``tmux up``) starts ``codex [-c …] app-server --listen
unix://PATH`` (the options ``codex exec`` and the headless app-server route run with, the instructions' ``-c
developer_instructions`` among them) in the launch's runtime folder, connects to it (WebSocket over the Unix
socket), then:

* a new session: ``thread/start``, and the startup message as its first ``turn/start``; a thread with a turn
  has its rollout, so Codex's interface can now resume it (before its first turn it cannot: "no rollout
  found", measured on 0.171.0). The turn runs while the interface starts, which shows it;
* a resumed one: ``thread/resume`` on this connection; no startup message;

and then runs ``codex [-c …] --remote unix://PATH resume [-m M] [flags] THREAD`` on the PTY, relayed as the
direct route's interface is. The thread is ours, so every turn of it reaches this connection
(:class:`~agentlaunch.providers.native.codex_remote.RemoteSource`): meters, states and answers, no rollout
read; ``agentlaunch send`` starts its turns with ``turn/start``.

Where the route does not apply, the direct one runs as before (Codex's interface with its own app-server
inside, hooks and rollout followed; :mod:`agentlaunch.providers.native.codex`): a fork (Codex forks in its
interface), an agent whose provider flags ``codex app-server`` does not take, a new session whose startup
message renders empty (no first turn: the interface could not resume the thread), and
``AGENTLAUNCH_CODEX_INTERFACE=direct``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

from agentlaunch.errors import AgentlaunchError, ExitCode, ProviderMissing
from agentlaunch.launch.early import early_appserver, prespawn
from agentlaunch.launch.early.early_appserver import LOG_NAME, ROUTE_ENV, SOCKET_NAME, EarlyAppServer
from agentlaunch.launch.placement import with_placement_argv
from agentlaunch.launch.start import instructions_digest
from agentlaunch.providers import codex_appserver as rpc
from agentlaunch.providers.codex import global_options, stored_total
from agentlaunch.providers.native.codex_remote import RemoteSource, refusal, thread_of
from agentlaunch.providers.native.unix_websocket import MAX_PATH, UnixWebSocket

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agentlaunch.launch.native.ports import InterfaceStarting, RemoteLaunch
    from agentlaunch.providers.base import ProviderState

START_TIMEOUT = 60.0
"""Seconds the app-server has to open its socket (0.171.0 takes about 0.5 s)."""
REQUEST_TIMEOUT = 60.0
"""Seconds a request of the start (initialize, thread/start, turn/start) has for its answer."""


class AppServerFailed(AgentlaunchError):
    """The app-server agentlaunch started for Codex's interface did not start, refused the thread, or died."""

    exit_code = ExitCode.TURN_FAILED


def applies(launch: InterfaceStarting, prompt: str) -> bool:
    """The native launch goes through agentlaunch's app-server (see the module doc for when it does not)."""
    if not getattr(launch.adapter, "remote_interface", False) or launch.fork is not None:
        return False
    if os.environ.get(ROUTE_ENV, launch.env.get(ROUTE_ENV, "")) == "direct":
        return False
    if not launch.resumed and not prompt.strip():
        return False
    assert launch.command is not None
    return rpc.app_server_argv(launch.command, launch.spec.provider_flags) is not None


def socket_path(runtime: Path) -> Path:
    """The app-server's socket in the launch's runtime folder; AppServerFailed when that path is too long."""
    path = runtime / SOCKET_NAME
    if len(os.fsencode(path)) > MAX_PATH:
        raise AppServerFailed(
            f"the app-server's socket path would be {len(os.fsencode(path))} bytes long; Unix sockets take {MAX_PATH}: {path}",
            hint="set XDG_RUNTIME_DIR to a short folder (or unset it: /tmp is used)",
        )
    return path


class RemoteCodex:
    """The app-server of one native launch, agentlaunch's connection to it, and the interface's argv."""

    def __init__(self, launch: RemoteLaunch, runtime: Path, early: EarlyAppServer | None = None) -> None:
        self.launch = launch
        self.runtime = runtime
        self.path = socket_path(runtime)
        self.log = runtime / LOG_NAME
        self.early = early
        """The app-server the entry point started from the last plan, in ``runtime`` (:mod:`.early_appserver`)."""
        self.server: subprocess.Popen[bytes] | None = None
        self.source: RemoteSource | None = None
        self.thread_id: str | None = None
        self._closing = False

    # -- the start ----------------------------------------------------------------------------------
    def start(self, prompt: str) -> RemoteSource:
        """The server up, the thread open (the startup message's turn started on a new one): the source."""
        launch = self.launch
        thread = str(launch.provider_state.get("thread_id") or launch.session_id) if launch.resumed else None
        conn = self._connect()
        total = stored_total(launch.provider_state.get("total")) if launch.resumed else None
        self.source = source = RemoteSource(conn, thread, total)
        hello, initialized = rpc.initialize(source.next_id())
        self._call(hello, "initialize")
        conn.send(initialized)
        what = "thread/resume" if thread else "thread/start"
        opened = rpc.open_thread(source.next_id(), str(launch.working_dir), thread, launch.spec.model, approval=None)
        self.thread_id = thread_of(self._call(opened, what))
        if self.thread_id is None:
            raise AppServerFailed(f"codex app-server answered {what} without a thread")
        source.parser.thread_id = self.thread_id
        if thread is None:
            self._call(rpc.turn_start(source.next_id(), self.thread_id, prompt), "the startup message's turn/start")
            self._remember()
        else:
            source.opened()
        return source

    def server_argv(self) -> list[str]:
        """``codex [-c …] app-server [flags] --listen unix://PATH``, the instructions' ``-c`` among the first."""
        launch = self.launch
        assert launch.command is not None
        argv = rpc.app_server_argv(launch.command, launch.spec.provider_flags, launch.spec.compaction_at)
        assert argv is not None, "applies() chose this route only when the app-server takes the agent's flags"
        return with_placement_argv([*argv, "--listen", f"unix://{self.path}"], launch.placement_argv)

    def _connect(self) -> UnixWebSocket:
        launch = self.launch
        argv = self.server_argv()
        self.server = self._adopt(argv)
        if self.server is None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()  # a socket an early app-server ended unused left: the new server's own must show
            with self.log.open("wb") as log:
                try:
                    self.server = subprocess.Popen(
                        argv,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=log,
                        env=dict(launch.env),
                        cwd=launch.working_dir,
                        start_new_session=True,  # the terminal's signals are the interface's
                    )
                except (FileNotFoundError, PermissionError) as exc:
                    raise ProviderMissing(f"{argv[0]}: provider CLI not found or not executable ({exc.strerror})") from None
        launch.reaper.watch(self.server.pid)
        end = time.monotonic() + START_TIMEOUT
        while True:
            if self.server.poll() is not None:
                raise self.failed("exited before it opened its socket")
            if self.path.exists():
                try:
                    return UnixWebSocket(str(self.path), max(end - time.monotonic(), 1.0))
                except OSError as exc:
                    raise self.failed(f"refused agentlaunch's connection ({exc})") from None
            if time.monotonic() > end:
                raise self.failed(f"opened no socket within {START_TIMEOUT:g}s")
            time.sleep(0.01)

    # -- the early start (agentlaunch.launch.early.early_appserver) -------------------------------------------
    def _adopt(self, argv: list[str]) -> subprocess.Popen[bytes] | None:
        """The app-server the entry point started, when it was started exactly as ``argv`` says (and the skills it
        may have listed are unchanged); else it is ended and None."""
        early, self.early = self.early, None
        plan = self.launch.plan
        if early is None:
            return None
        if plan is None or (plan.placement.skills is not None and plan.placement.skills.changed):
            prespawn.discard(early)  # it may have listed the skills before this launch rewrote them
            return None
        return early_appserver.adopt(early, argv, self.launch.env, self.launch.working_dir, instructions_digest(plan))

    def _remember(self) -> None:
        """Keep this app-server's start for the next launch's early start: a new session of an agent without ``env``."""
        launch = self.launch
        key, plan, spec = launch.options.plan_key, launch.plan, launch.spec
        if key is None or plan is None or launch.resumed or launch.fork is not None or spec.env:
            return
        inputs = [part.path for part in (spec.soul, spec.instructions, *spec.bundles) if part is not None]
        early_appserver.remember(
            key,
            launch.state_dir,
            argv=self.server_argv(),
            env=launch.env,
            cwd=launch.working_dir,
            runtime=self.runtime,
            instructions=plan.placement.path,
            digest=instructions_digest(plan),
            agent_yaml=spec.agent_dir / "agent.yaml",
            inputs=inputs,
        )

    def _call(self, message: dict[str, object], what: str) -> dict[str, object]:
        assert self.source is not None
        try:
            answer = self.source.call(message, REQUEST_TIMEOUT)
        except OSError as exc:
            raise self.failed(f"gave no answer to {what} ({exc})") from None
        if (why := refusal(answer)) is not None:
            raise AppServerFailed(f"codex app-server refused {what}: {why}", hint=self._hint())
        return answer

    def _hint(self) -> str | None:
        if self.launch.resumed:
            name = self.launch.spec.name
            return f"a thread Codex never ran a turn in cannot be resumed; start a new session: agentlaunch run {name}"
        return None

    # -- the interface --------------------------------------------------------------------------------
    def interface_argv(self) -> list[str]:
        """``codex [-c …] --remote unix://PATH resume [-m M] [flags] THREAD`` (the instructions are the thread's)."""
        launch = self.launch
        assert launch.command is not None and self.thread_id is not None
        argv = [launch.command, *global_options(launch.spec.compaction_at), "--remote", f"unix://{self.path}", "resume"]
        if launch.spec.model:
            argv += ["-m", launch.spec.model]
        return [*argv, *launch.spec.provider_flags, self.thread_id]

    # -- the session ------------------------------------------------------------------------------------
    @property
    def gone(self) -> bool:
        """The connection ended while the launch ran: the app-server exited (or closed it)."""
        return self.source is not None and self.source.gone and not self._closing

    def turn_start(self, text: str) -> None:
        """A sent prompt as a turn of the thread (``turn/start``); the interface shows it as its own."""
        assert self.source is not None
        self.source.turn_start(text)

    def kept_state(self, state: Mapping[str, object]) -> ProviderState:
        """The thread and its running total as the app-server reported them (no rollout read)."""
        kept: ProviderState = dict(state)
        parser = self.source.parser if self.source is not None else None
        if self.thread_id:
            kept["thread_id"] = self.thread_id
        if parser is not None and parser.total is not None:
            kept["total"] = parser.total.as_dict()
        return kept

    # -- the end ----------------------------------------------------------------------------------------
    def failed(self, what: str, wait: float = 0.0) -> AppServerFailed:
        """The error for a server that ``what`` (its exit code and last log lines named); ``wait``: seconds its exit
        is waited for (the connection ends before npm's node wrapper has seen its binary die)."""
        if self.server is not None and wait:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.server.wait(wait)
        code = self.server.poll() if self.server is not None else None
        how = f" (exit code {code})" if code is not None and code >= 0 else f" (signal {-code})" if code is not None else ""
        tail = last_lines(self.log)
        said = ("; its last words: " + " / ".join(tail)) if tail else ""
        return AppServerFailed(f"codex app-server {what}{how}{said}", hint=self._hint())

    def close(self) -> None:
        """The connection closed, the server ended (SIGTERM, then SIGKILL) and waited for."""
        self._closing = True
        if self.source is not None:
            with contextlib.suppress(OSError):
                self.source.close()
        server = self.server
        if server is None or server.poll() is not None:
            return
        server.terminate()
        try:
            server.wait(3)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def last_lines(log: Path, lines: int = 3) -> list[str]:
    """The app-server's last log lines (it logs to stderr), without escapes."""
    from agentlaunch.visible import visible

    try:
        with log.open("rb") as fh:
            fh.seek(max(fh.seek(0, os.SEEK_END) - 4096, 0))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return []
    found = [line.strip() for line in text.splitlines() if line.strip()]
    return [visible(line)[:300] for line in found[-lines:]]
