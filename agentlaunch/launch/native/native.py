"""The native mode: the provider CLI's own interface in the user's terminal, agentlaunch's meters beside it.

``agentlaunch run AGENT`` at a terminal starts the CLI's interactive interface (``claude``, ``codex``, ``gemini``)
on a PTY and relays it (:mod:`agentlaunch.launch.native.relay`), the terminal in raw mode and restored on every way
out (:mod:`agentlaunch.launch.native.terminal`). The agent's instructions are delivered as for a headless run; a new
session's startup message is the CLI's first prompt (never on resume). Meters and states come from the CLI's
structured sources and its own OSC 7501 reports (:mod:`.cli_report`), never from the screen: each adapter's
``native_extras(ctx)`` (:mod:`agentlaunch.providers.native.source`) adds the flags that make the CLI report and the
sources the relay waits on (a Codex launch goes through an app-server agentlaunch owns instead, where it can:
:mod:`agentlaunch.launch.native.native_remote`; its sends are ``turn/start``). Their events go through
:meth:`Launch.handle <agentlaunch.launch.session.Launch.handle>` (metered, priced, stored, shown by the status record
and tmux exactly as headless), their states through :meth:`Launch.set_state`.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentlaunch.errors import AgentlaunchError, ProviderMissing
from agentlaunch.events import CallUsage, SessionStarted, Text, TextDelta, TurnEnd
from agentlaunch.fsutil import remove_tree
from agentlaunch.launch.early import prespawn
from agentlaunch.launch.early.early_appserver import EarlyAppServer
from agentlaunch.launch.early.early_interface import EarlyInterface
from agentlaunch.launch.loop import Timer
from agentlaunch.launch.native import cli_activity
from agentlaunch.launch.native.cli_report import CLI_SOURCE, INTERRUPTED, CliReports
from agentlaunch.launch.native.interface_start import (
    InterfaceSpawner,
    adopt_early,
    check_size,
    fork_ids,
    make_runtime_dir,
    remember_start,
    remote_route,
    spawn_interface,
)
from agentlaunch.launch.native.interrupt_watch import RETRY_INTERRUPTED, InterruptWatch
from agentlaunch.launch.native.outcome import outcome
from agentlaunch.launch.native.relay import Relay
from agentlaunch.launch.native.sends import NativeSends
from agentlaunch.launch.native.terminal import ScreenModes, raw_terminal, saved_mode, write_all
from agentlaunch.launch.transport import window_size
from agentlaunch.launch.turn_answer import TurnAnswer
from agentlaunch.launch.turn_cycle import first_message
from agentlaunch.providers.native.source import NativeContext, NativeExtras, NativeItem, NativeSource, PromptTyped, ToolAsked
from agentlaunch.sinks import PromptSent, StateChanged, TurnDone

if TYPE_CHECKING:
    from agentlaunch.launch.native import native_remote
    from agentlaunch.launch.native.native_launch import NativeLaunch
    from agentlaunch.live.interface_view import InterfaceView

TITLE_PUSH, TITLE_POP = b"\x1b[22;2t", b"\x1b[23;2t"  # xterm's title stack (ignored where unknown)
TURN_STATES = ("thinking", "tool", "asking", "retrying")
BUSY_LOOK = 1.0  # seconds between two looks at a CLI silent past ready_timeout, while it is still busy starting
NOT_READY = "the CLI waits on its own screen: it has not reported that it is up"  # asking: only the person can help


class NativeRun:
    """One native launch: the CLI's interface relayed, its sources followed, the session recorded."""

    def __init__(
        self,
        launch: NativeLaunch,
        view: InterfaceView | None = None,
        *,
        tty_in: int = 0,
        tty_out: int = 1,
        spawn: InterfaceSpawner = spawn_interface,
    ) -> None:
        self.launch, self.view = launch, view
        self.tty_in, self.tty_out = tty_in, tty_out
        self.spawn = spawn
        self.modes = ScreenModes()
        self.relay: Relay | None = None
        self.sources: list[NativeSource] = []
        self.in_turn = False
        self.turned = False  # a turn was opened in this launch
        self._registered = False
        self.started_at = 0.0
        self.answer = TurnAnswer()
        self.sends = NativeSends(self)  # prompts from agentlaunch send
        self.heard = False  # a source reported a state: the interface is up
        self.startup_turn = False  # a new session's startup message is the CLI's first prompt: its turn comes first
        self._startup_text = ""
        self.turn_error: str | None = None  # the turn under way ended on an error (Claude Code's StopFailure)
        self._not_ready: Timer | None = None  # the CLI has not reported yet: asking, once options.ready_timeout is over
        self._last_look: cli_activity.Activity | None = None  # the silent CLI's tree at the last look past ready_timeout
        self.remote: native_remote.RemoteCodex | None = None  # Codex's interface on agentlaunch's app-server
        self._cli_turn = False  # the turn under way was opened by the CLI's own report, no other source spoke yet
        self.reports = CliReports(launch, self._state, lambda delay, then: launch.loop.call_later(delay, then))  # OSC 7501

    # -- the run -----------------------------------------------------------------------------
    def run(self) -> int:
        """Relay the CLI's interface until it exits; agentlaunch's exit code."""
        launch = self.launch
        size = window_size(self.tty_out)
        check_size(size, launch.adapter.descriptor.name)
        early = launch.take_prespawned()
        pending = early if isinstance(early, EarlyInterface) else None
        server = early if isinstance(early, EarlyAppServer) else None  # Codex's app-server (launch.early_appserver)
        if pending is not None:
            runtime, bound = pending.hand_over()
        else:
            runtime, bound = (server.hand_over() if server is not None else make_runtime_dir()), {}
        try:
            return self._run(runtime, size, pending, bound, server)
        finally:
            prespawn.discard(server)  # never adopted (the route did not apply, or the start failed first)
            self.sends.close()
            for source in self.sources:
                with contextlib.suppress(Exception):
                    source.close()
            if self.remote is not None:
                self.remote.close()
            remove_tree(runtime, ignore_errors=True)

    def _run(
        self,
        runtime: Path,
        size: tuple[int, int],
        pending: EarlyInterface | None,
        bound: dict[str, Any],
        server: EarlyAppServer | None,
    ) -> int:
        launch = self.launch
        ctx = NativeContext(
            agent=launch.spec.name,
            session_id=None if self._learns_id else launch.session_id,
            resumed=launch.resumed,
            working_dir=launch.working_dir,
            env=dict(launch.env),
            runtime_dir=runtime,
            started_at=pending.started_at if pending is not None else time.time(),
            python=sys.executable,
            status_path=self._status_path(),
            provider_state=dict(launch.provider_state),
            gated=launch.gates.active,
            bound=bound,
            forked=launch.fork is not None,
            forked_from=fork_ids(launch.fork),
        )
        new = not launch.resumed and launch.fork is None  # a fork's conversation is under way: no startup message
        prompt = first_message(launch, "", id_known=not self._learns_id) if new else ""
        self.startup_turn = bool(prompt)
        self._startup_text = prompt.strip()
        argv, extras = self._interface(ctx, runtime, prompt, server)
        self.sources = list(extras.sources)
        for notice in extras.notices:
            launch.notice(notice)
        env = {**launch.env, **extras.env}
        mode = saved_mode(self.tty_in)
        self.started_at = time.monotonic()
        child = adopt_early(self.launch, pending, argv, env)
        try:
            child = child or self.spawn(argv, env, launch.working_dir, size, mode)
        except ProviderMissing as exc:
            raise ProviderMissing(exc.message, hint=launch.adapter.install_hint) from None
        remember_start(self.launch, argv, env, runtime, ctx.status_path)
        launch.adopt(child)
        # "starting" until the CLI itself reports (a hook, its session file); past the bound it waits on its screen.
        self._not_ready = launch.loop.call_later(launch.options.ready_timeout, self._still_starting)
        if self._knows_session():
            self._register(launch.session_id)
        interrupts = InterruptWatch(launch.loop, lambda: launch.state, self._last_output, self._retry_interrupted)
        self.relay = Relay(
            launch.loop,
            launch.signals,
            child,
            self,
            tty_in=self.tty_in,
            tty_out=self.tty_out,
            sources=self.sources,
            modes=self.modes,
            size=lambda: window_size(self.tty_out),
            on_keys=interrupts.keys,
            status=self.reports.status,
        )
        self.reports.inject = self.relay.inject
        self.sends.open(runtime)
        if self.view is not None:
            self.view.relaying(self.relay)
        titled = self.view is not None and self.view.title
        if titled:
            write_all(self.tty_out, TITLE_PUSH)  # the title agentlaunch sets is the terminal's own again afterwards
        try:
            with raw_terminal(self.tty_in, self.tty_out, self.modes):
                result = self.relay.run()
        finally:
            interrupts.close()
            if titled:
                write_all(self.tty_out, TITLE_POP)
        if result.terminated is not None or (result.exit_code or 0) < 0:
            # The CLI was stopped mid-screen: what agentlaunch prints next starts on a line of its own.
            write_all(self.tty_out, b"\r\n")
        if self.view is not None:
            self.view.relaying(None)  # from here notices print again, under what the CLI left on screen
        if (launch.stopped is not None or self.server_gone) and launch.child is not None:
            # A budget ended the session (or the app-server died): the CLI is ended now, so that what it wrote last is read below.
            launch.child.stop()
        self.relay.read_sources(arm=False)  # after the CLI's exit: what they still have (their files are complete now)
        self._close_turn()
        self._keep_state()
        self.sends.end(result)
        return outcome(launch, result, remote=self.remote, started_at=self.started_at, registered=self._registered)

    def _interface(
        self, ctx: NativeContext, runtime: Path, prompt: str, server: EarlyAppServer | None
    ) -> tuple[list[str], NativeExtras]:
        """The interface's argv and what follows it: through agentlaunch's app-server (Codex; ``server`` the one
        the entry point started, adopted when it was started so), else the CLI's own."""
        launch = self.launch
        assert launch.command is not None
        if remote_route(launch, prompt):
            from agentlaunch.launch.native.native_remote import RemoteCodex

            self.remote = remote = RemoteCodex(launch, runtime, server)
            source = remote.start(prompt)  # the thread open, the startup message's turn under way
            return remote.interface_argv(), NativeExtras(sources=[source])
        prespawn.discard(server)  # the direct route: its interface runs an app-server of its own
        extras = launch.adapter.native_extras(ctx)
        argv = launch.adapter.interface_argv(
            launch.spec,
            launch.command,
            session_id=launch.session_id,
            resumed=launch.resumed,
            state=launch.provider_state,
            placement_argv=launch.placement_argv,
            extra_argv=extras.argv,
            prompt=prompt,
            fork=launch.fork,
        )
        return argv, extras

    # -- what the session is ---------------------------------------------------------------
    @property
    def _learns_id(self) -> bool:
        """A new session of a CLI that cannot be told its id (Codex): its sources report it."""
        return not self.launch.resumed and not self.launch.adapter.chooses_session_id

    def _knows_session(self) -> bool:
        """The session can be recorded now: agentlaunch chose its id, or resumes one the store knows."""
        launch = self.launch
        if launch.resumed:
            return launch.store.get_session(launch.session_id) is not None
        return not self._learns_id

    def _register(self, session_id: str) -> None:
        if self._registered:
            return
        self._registered = True
        self.launch.handle(SessionStarted(session_id, self.launch.spec.model, str(self.launch.working_dir)))
        self._keep_state()

    def _keep_state(self) -> None:
        """What a later headless or native turn of this session needs (Codex's thread and running total, say)."""
        launch = self.launch
        if not self._registered or launch.persistent:
            return
        if self.remote is not None:
            state = self.remote.kept_state(launch.provider_state)  # the thread's running total as it reported it
        else:
            state = launch.adapter.state_after_interface(launch.session_id, launch.provider_state, launch.env)
        launch.keep_provider_state(state)

    def _status_path(self) -> Path | None:
        for sink in self.launch.sinks:
            path = getattr(sink, "path", None)
            if isinstance(path, Path):
                return path
        return None

    # -- what the sources report (RelayHost) ---------------------------------------------------
    def on_items(self, items: list[NativeItem]) -> None:
        if items:
            self.launch.liveness.progress()  # a hook, a transcript line, a session file's record: the CLI is alive
        for item in items:
            try:
                if isinstance(item, StateChanged):
                    self._state(item.state, item.reason, item.source or "hooks")
                elif self.sends.asked(item):  # a question agentlaunch answer can answer: kept open for it
                    continue
                elif isinstance(item, ToolAsked):
                    ended = self.launch.gates.asked(self.launch, item)  # the budget, its asking call counted or bounded
                    if ended is not None:  # the refusal ended the turn: over here, or a resumed session would stay in it
                        self._state("waiting", ended or None)
                elif isinstance(item, PromptTyped):
                    if item.text.strip() != self._startup_text:
                        self.launch.emit(PromptSent(item.text))  # the person's first prompt is the session's title
                else:
                    self._event(item)
            except AgentlaunchError as exc:  # the store refused a write, say: shown after the session, never fatal
                self.launch.notice(f"agentlaunch could not record what {self.launch.spec.provider} reported: {exc.message}")
        if self.launch.stopped is not None and self.relay is not None:
            self.relay.stop()  # a budget is spent: the interface ends, and the launch exits with the budget's error
        if self.server_gone and self.relay is not None:
            self.relay.stop()  # the app-server died: the interface, attached to it, can do nothing more

    def _event(self, event: Any) -> None:
        launch = self.launch
        if isinstance(event, Text | TextDelta):
            # The answer, read from the transcript: kept for a sent prompt, not handled (a late read is no new turn).
            self.answer.add(event)
            return
        if isinstance(event, TurnEnd):
            self.turn_error = event.error or "the provider reported an error" if event.is_error else None
            if self.turn_error and not self.in_turn and launch.state == "waiting":  # the CLI's own "done" came first
                launch.set_state("waiting", reason=f"its last turn failed: {self.turn_error}", always=True, source="hooks")
            if not event.is_error and event.result:
                self.answer.last_message = event.result  # the CLI's own word on the turn's last message
            return  # how the turn ended, for a sent prompt: the turn itself is counted from the states
        if isinstance(event, SessionStarted) and not self._registered:
            if self._learns_id and event.session_id:
                # Codex's thread id is the session's: -r and -c find it
                launch.session_state.learn_id(event.session_id, launch.adapter.resume_state(event.session_id, None))
            self._register(launch.session_id)
            return
        if isinstance(event, CallUsage) and not self.in_turn and not self.turned:
            # A call before any state said a turn began (a source that reports no states): it opens one. A call
            # reported after its turn ended (a transcript read late) belongs to that turn: it opens none.
            self._open_turn()
        launch.handle(event)

    def _last_output(self) -> float:
        return self.relay.last_output if self.relay is not None else 0.0

    def _retry_interrupted(self) -> None:
        """The person's Esc ended the CLI's retry loop, and it did not report it (:mod:`.interrupt_watch`)."""
        self._state("waiting", RETRY_INTERRUPTED)

    def _still_starting(self) -> None:
        """No report by ``ready_timeout``: the CLI waits on its screen for the person, unless still busy starting."""
        self._not_ready = None
        launch = self.launch
        if self.heard or launch.state != "starting":
            return
        now = cli_activity.activity(launch.child.pid) if launch.child is not None else None
        last, self._last_look = self._last_look, now
        if cli_activity.still_starting(last, now):
            self._not_ready = launch.loop.call_later(BUSY_LOOK, self._still_starting)
            return
        launch.set_state("asking", reason=NOT_READY)

    def _state(self, state: str, reason: str | None = None, source: str = "agentlaunch") -> None:
        launch = self.launch
        self.heard = True
        if self._not_ready is not None:
            self._not_ready.cancel()
            self._not_ready = None
        if state in TURN_STATES and not self.in_turn and (state, source) != ("asking", "cli"):  # a dialog: no turn
            self._open_turn()
            self._cli_turn = source == "cli"
        elif self._cli_turn and source != "cli":  # a source's first word in a turn the CLI's "working" opened:
            self._cli_turn = False  # its thinking is the prompt taken; text read before it (history) is no answer
            if state == "thinking":
                self.answer.start()
        if state == "exited":
            return  # the launch says so itself once the CLI is ended
        if state == "waiting" and source == CLI_SOURCE and self._cli_turn and reason == INTERRUPTED and self.in_turn:
            self.in_turn = self._cli_turn = False  # the CLI's working, then its idle, and no source saw a prompt
            self.launch.session_state.uncount_turn()  # (Codex, as it starts): no turn, nothing interrupted
            reason = None
        if state == "waiting" and self.in_turn and self.turn_error:
            reason = f"its last turn failed: {self.turn_error}"
        launch.set_state(state, reason=reason, always=state == "retrying" or source == "cli", source=source)  # news each time
        self.reports.state_set()  # a question named ends a blocked's wait; the merged state passed on
        if state == "waiting":
            self._close_turn()
            self.sends.turn_over()

    def _open_turn(self) -> None:
        self.in_turn = self.turned = True
        self.launch.session_state.count_turn()
        self.answer.start()
        self.turn_error = None
        self.sends.turn_opened()

    def _close_turn(self) -> None:
        if self.in_turn:
            self.in_turn = False
            self.startup_turn = False  # the first turn (the startup message's, when there is one) is over
            self.launch.emit(TurnDone())

    def on_source_error(self, source: NativeSource, error: Exception) -> None:
        self.launch.notice(
            f"agentlaunch stopped reading one of {self.launch.spec.provider}'s reports ({type(error).__name__}: {error}); "
            "the session goes on, its figures may be incomplete"
        )

    def on_child_signal(self) -> None:
        self.launch.on_child_signal()

    @property
    def server_gone(self) -> bool:
        return self.remote is not None and self.remote.gone
