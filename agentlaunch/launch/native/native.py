"""The native mode: the provider CLI's own interface in the user's terminal, agentlaunch's meters beside it.

``agentlaunch run AGENT`` at a terminal starts the CLI's interactive interface
(``claude``, ``codex``, ``gemini``) on a PTY and relays it byte for byte
(:mod:`agentlaunch.launch.native.relay`), the terminal in raw mode and restored on
every way out (:mod:`agentlaunch.launch.native.terminal`). The agent's instructions
are delivered as for a headless run; a new session's startup message is the
CLI's first prompt (never on resume). Meters and states come from the CLI's
structured sources, never from the screen: each adapter's
``native_extras(ctx)`` (:mod:`agentlaunch.providers.native.source`) adds the
flags that make the CLI report and the sources the relay waits on (a Codex
launch goes through an app-server agentlaunch owns instead, where it can:
:mod:`agentlaunch.launch.native.native_remote`; its sends are ``turn/start``). Their
events go through :meth:`Launch.handle <agentlaunch.launch.session.Launch.handle>`
(metered, priced, stored, shown by the status record and tmux exactly as
headless), their states through :meth:`Launch.set_state`.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentlaunch import runtime_dirs
from agentlaunch.errors import AgentlaunchError, ExitCode, ProviderMissing, UsageError
from agentlaunch.events import CallUsage, SessionStarted, Text, TextDelta, TurnEnd
from agentlaunch.fsutil import remove_tree
from agentlaunch.launch import early_interface, prespawn
from agentlaunch.launch.control import SOCKET_NAME, ControlServer, SendRequest
from agentlaunch.launch.control_door import close_control, launch_busy, open_control
from agentlaunch.launch.early_appserver import EarlyAppServer
from agentlaunch.launch.early_interface import EarlyInterface
from agentlaunch.launch.loop import Timer
from agentlaunch.launch.native import cli_activity
from agentlaunch.launch.native.interrupt_watch import RETRY_INTERRUPTED, InterruptWatch
from agentlaunch.launch.native.relay import Relay, RelayResult
from agentlaunch.launch.native.terminal import MIN_COLS, MIN_ROWS, ScreenModes, raw_terminal, saved_mode, write_all
from agentlaunch.launch.start import instructions_digest
from agentlaunch.launch.transport import Child, window_size
from agentlaunch.launch.turn_answer import MeterTotals, TurnAnswer
from agentlaunch.launch.turn_cycle import first_message
from agentlaunch.providers.native import hook_http
from agentlaunch.providers.native.source import NativeContext, NativeExtras, NativeItem, NativeSource, PromptTyped, ToolAsked
from agentlaunch.sinks import PromptSent, StateChanged, TurnDone

if TYPE_CHECKING:
    from agentlaunch.launch.native import native_remote
    from agentlaunch.launch.session import Launch
    from agentlaunch.live.interface_view import InterfaceView

TITLE_PUSH, TITLE_POP = b"\x1b[22;2t", b"\x1b[23;2t"  # xterm's title stack (ignored where unknown)
QUICK_EXIT = 10.0  # seconds: a CLI that fails sooner than this shows its last words after the terminal is restored
TURN_STATES = ("thinking", "tool", "asking", "retrying")
IDLE_STATES = ("starting", "waiting")
ANSWER_GRACE = 0.3
"""Seconds after a turn's end before a sent prompt's answer is read when the CLI did not report the turn's last message
itself (Claude Code's Stop hook does): the transcript's last line may lag."""
STARTUP_GRACE = 5.0  # seconds after which a CLI that reported nothing yet takes a sent prompt (a resumed Gemini is silent)
STARTUP_TURN_WAIT = 60.0  # seconds a sent prompt waits for the startup message's turn to begin, at most
NO_TURN_WAIT = 20.0
"""Seconds after typing a sent text within which its turn must begin; later it is released and reported. The CLIs
report a turn within a second or two of Enter (Claude Code's and Codex's hooks, Gemini's session file); a text the
interface did not take as a message (a menu took the Enter, a command ran) never opens one."""
COMMAND_MIN = 2.0  # seconds a sent command is given to open a turn (a custom command is a prompt) before it may be done
COMMAND_QUIET = 1.0  # seconds without output from the CLI after which a sent command's output has settled
COMMAND_WAIT = 10.0  # seconds after which a sent command is done even if the CLI still draws (a spinner, a clock)
BUSY_LOOK = 1.0  # seconds between two looks at a CLI silent past ready_timeout, while it is still busy starting
NOT_READY = "the CLI waits on its own screen: it has not reported that it is up"
"""Why a CLI that reported nothing within the launch's ``ready_timeout`` is ``asking`` (a dialog, a login, a trust
prompt: something only the person at the pane can answer)."""

InterfaceSpawner = Callable[[Sequence[str], Mapping[str, str], Path, tuple[int, int], Any], Child]


def spawn_interface(argv: Sequence[str], env: Mapping[str, str], cwd: Path, size: tuple[int, int], mode: Any) -> Child:
    """The real child: the CLI's interface on a PTY whose settings start as the user's terminal's."""
    return Child(argv, env, cwd, size=size, terminal=mode)


def remote_route(launch: Launch, prompt: str) -> bool:
    """Codex's interface on agentlaunch's app-server (:func:`agentlaunch.launch.native.native_remote.applies`); its module,
    with the app-server's client and the WebSocket, is imported only for an adapter that has that route (Codex)."""
    if not getattr(launch.adapter, "remote_interface", False):
        return False
    from agentlaunch.launch.native import native_remote

    return native_remote.applies(launch, prompt)


def make_runtime_dir() -> Path:
    """A private folder for this launch's sockets and scripts (:func:`agentlaunch.runtime_dirs.make_for_launch`)."""
    return runtime_dirs.make_for_launch()


def fork_ids(fork: tuple[str, Mapping[str, object]] | None) -> tuple[str, ...]:
    """A fork's parent as its files name it: the session id, and the thread its provider keeps (Codex)."""
    if fork is None:
        return ()
    thread = fork[1].get("thread_id")
    return (fork[0], thread) if isinstance(thread, str) and thread != fork[0] else (fork[0],)


def check_size(size: tuple[int, int], cli: str) -> None:
    """Refuse a terminal too small to draw the CLI's interface in, with what to do instead."""
    cols, rows = size
    if cols < MIN_COLS or rows < MIN_ROWS:
        raise UsageError(
            f"the terminal is {cols}x{rows}; {cli}'s interface needs at least {MIN_COLS}x{MIN_ROWS}",
            hint="enlarge the window, or use the line chat: agentlaunch run AGENT --line",
        )


class NativeRun:
    """One native launch: the CLI's interface relayed, its sources followed, the session recorded."""

    def __init__(
        self, launch: Launch, view: InterfaceView | None = None, *, tty_in: int = 0, tty_out: int = 1,
        spawn: InterfaceSpawner = spawn_interface,
    ) -> None:  # fmt: skip
        self.launch, self.view = launch, view
        self.tty_in, self.tty_out = tty_in, tty_out
        self.spawn = spawn
        self.modes = ScreenModes()
        self.relay: Relay | None = None
        self.sources: list[NativeSource] = []
        self._in_turn = False
        self._turned = False  # a turn was opened in this launch
        self._registered = False
        self._started_at = 0.0
        self.control: ControlServer | None = None
        self.answer = TurnAnswer()
        self._sends: list[_Send] = []  # sent prompts whose answer is awaited (--wait), oldest first
        self._heard = False  # a source reported a state: the interface is up
        self._startup_turn = False  # a new session's startup message is the CLI's first prompt: its turn comes first
        self._startup_text = ""
        self._turn_error: str | None = None  # the turn under way ended on an error (Claude Code's StopFailure)
        self._answering: Timer | None = None  # a turn a sent prompt began is over: its answer is read soon
        self._not_ready: Timer | None = None  # the CLI has not reported yet: asking, once options.ready_timeout is over
        self._last_look: cli_activity.Activity | None = None  # the silent CLI's tree at the last look past ready_timeout
        self.remote: native_remote.RemoteCodex | None = None  # Codex's interface on agentlaunch's app-server

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
            runtime, sockets, listener = pending.hand_over()
            bound: dict[str, Any] = {**sockets, **({hook_http.BOUND: listener} if listener is not None else {})}
        else:
            runtime, bound = (server.hand_over() if server is not None else make_runtime_dir()), {}
        try:
            return self._run(runtime, size, pending, bound, server)
        finally:
            prespawn.discard(server)  # never adopted (the route did not apply, or the start failed first)
            self._close_control()
            for source in self.sources:
                with contextlib.suppress(Exception):
                    source.close()
            if self.remote is not None:
                self.remote.close()
            remove_tree(runtime, ignore_errors=True)

    def _run(
        self, runtime: Path, size: tuple[int, int], pending: EarlyInterface | None, bound: dict[str, Any],
        server: EarlyAppServer | None,
    ) -> int:  # fmt: skip
        launch = self.launch
        ctx = NativeContext(
            agent=launch.spec.name, session_id=None if self._learns_id else launch.session_id, resumed=launch.resumed,
            working_dir=launch.working_dir, env=dict(launch.env), runtime_dir=runtime,
            started_at=pending.started_at if pending is not None else time.time(), python=sys.executable,
            status_path=self._status_path(), provider_state=dict(launch.provider_state), gated=launch.gates.active,
            bound=bound, forked=launch.fork is not None, forked_from=fork_ids(launch.fork),
        )  # fmt: skip
        new = not launch.resumed and launch.fork is None  # a fork's conversation is under way: no startup message
        prompt = first_message(launch, "", id_known=not self._learns_id) if new else ""
        self._startup_turn = bool(prompt)
        self._startup_text = prompt.strip()
        argv, extras = self._interface(ctx, runtime, prompt, server)
        self.sources = list(extras.sources)
        for notice in extras.notices:
            launch.notice(notice)
        env = {**launch.env, **extras.env}
        mode = saved_mode(self.tty_in)
        self._started_at = time.monotonic()
        child = self._early_child(pending, argv, env)
        try:
            child = child or self.spawn(argv, env, launch.working_dir, size, mode)
        except ProviderMissing as exc:
            raise ProviderMissing(exc.message, hint=launch.adapter.install_hint) from None
        self._remember(argv, env, runtime, ctx.status_path, extras.listener)
        launch.adopt(child)
        # "starting" until the CLI itself reports (a hook, its session file); past the bound it waits on its screen.
        self._not_ready = launch.loop.call_later(launch.options.ready_timeout, self._still_starting)
        if self._knows_session():
            self._register(launch.session_id)
        interrupts = InterruptWatch(launch.loop, lambda: launch.state, self._last_output, self._retry_interrupted)
        self.relay = Relay(
            launch.loop, launch.signals, child, self, tty_in=self.tty_in, tty_out=self.tty_out, sources=self.sources,
            modes=self.modes, size=lambda: window_size(self.tty_out), on_keys=interrupts.keys,
        )  # fmt: skip
        self._open_control(runtime)
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
        if (launch.stopped is not None or self._server_gone) and launch.child is not None:
            # A budget ended the session (or the app-server died): the CLI is ended now, so that what it wrote last is read below.
            launch.child.stop()
        self.relay.read_sources(arm=False)  # after the CLI's exit: what they still have (their files are complete now)
        self._close_turn()
        self._keep_state()
        self._end_sends(result)
        return self._outcome(result)

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
            launch.spec, launch.command, session_id=launch.session_id, resumed=launch.resumed, state=launch.provider_state,
            placement_argv=launch.placement_argv, extra_argv=extras.argv, prompt=prompt, fork=launch.fork,
        )  # fmt: skip
        return argv, extras

    # -- the early start (agentlaunch.launch.early_interface) ------------------------------------
    def _early_child(self, pending: EarlyInterface | None, argv: list[str], env: dict[str, str]) -> Child | None:
        """The interface the entry point started from the last plan, when it was started exactly as this one."""
        launch = self.launch
        if pending is None:
            return None
        plan = launch.plan
        if plan is None or (plan.placement.skills is not None and plan.placement.skills.changed):
            prespawn.discard(pending)  # it may have listed the skills before this launch rewrote them
            return None
        return early_interface.adopt(pending, argv, env, launch.working_dir, instructions_digest(plan))

    def _remember(
        self, argv: list[str], env: dict[str, str], runtime: Path, status: Path | None, listener: tuple[int, str] | None
    ) -> None:
        """Keep this start for the next launch's early start: a new session of an agent without ``env``."""
        launch = self.launch
        key, plan = launch.options.plan_key, launch.plan
        if key is None or plan is None or launch.resumed or launch.spec.env or not launch.adapter.early_interface:
            return
        spec = launch.spec
        inputs = [part.path for part in (spec.soul, spec.instructions, *spec.bundles) if part is not None]
        early_interface.remember(
            key, launch.state_dir, argv=argv, env=env, cwd=launch.working_dir, runtime=runtime, status=status,
            session_id=launch.session_id, instructions=plan.placement.path, digest=instructions_digest(plan),
            agent_yaml=spec.agent_dir / "agent.yaml", inputs=inputs, now=prespawn.moment() or launch.clock.now(),
            listener=listener,
        )  # fmt: skip

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
                    self._state(item.state, item.reason)
                elif isinstance(item, ToolAsked):
                    self.launch.gates.check(self.launch)  # the asking call is counted: a spent budget refuses the tool
                    held = self.launch.stopped or self.launch.paused  # a pause refuses it and ends the turn too
                    item.answer(held is None, held.message if held is not None else "")
                    if self.launch.paused is not None:
                        # The refusal ends the turn (continue: false) and Claude Code then reports no Stop
                        # (measured on 2.1.332): the turn is over here, or a resumed session would stay in it.
                        self._state("waiting")
                elif isinstance(item, PromptTyped):
                    if item.text.strip() != self._startup_text:
                        self.launch.emit(PromptSent(item.text))  # the person's first prompt is the session's title
                else:
                    self._event(item)
            except AgentlaunchError as exc:  # the store refused a write, say: shown after the session, never fatal
                self.launch.notice(f"agentlaunch could not record what {self.launch.spec.provider} reported: {exc.message}")
        if self.launch.stopped is not None and self.relay is not None:
            self.relay.stop()  # a budget is spent: the interface ends, and the launch exits with the budget's error
        if self._server_gone and self.relay is not None:
            self.relay.stop()  # the app-server died: the interface, attached to it, can do nothing more

    def _event(self, event: Any) -> None:
        launch = self.launch
        if isinstance(event, Text | TextDelta):
            # The answer, read from the transcript: kept for a sent prompt, not handled (a late read is no new turn).
            self.answer.add(event)
            return
        if isinstance(event, TurnEnd):
            self._turn_error = event.error or "the provider reported an error" if event.is_error else None
            if not event.is_error and event.result:
                self.answer.last_message = event.result  # the CLI's own word on the turn's last message
            return  # how the turn ended, for a sent prompt: the turn itself is counted from the states
        if isinstance(event, SessionStarted) and not self._registered:
            if self._learns_id and event.session_id:
                # Codex's thread id is the session's: -r and -c find it
                launch.session_state.learn_id(event.session_id, launch.adapter.resume_state(event.session_id, None))
            self._register(launch.session_id)
            return
        if isinstance(event, CallUsage) and not self._in_turn and not self._turned:
            # A call before any state said a turn began (a source that reports no states): it opens one. A call
            # reported after its turn ended (a transcript read late) belongs to that turn: it opens none.
            self._open_turn()
        launch.handle(event)

    def _last_output(self) -> float:
        return self.relay.last_output if self.relay is not None else 0.0

    def _retry_interrupted(self) -> None:
        """The person's Esc ended the CLI's retry loop, which it reports nowhere
        (:mod:`~agentlaunch.launch.native.interrupt_watch`)."""
        self._state("waiting", RETRY_INTERRUPTED)

    def _still_starting(self) -> None:
        """``ready_timeout`` passed with no report from the CLI: it waits on its own screen, for the person, unless
        it is still busy starting (a loaded machine): then it is looked at again a second later."""
        self._not_ready = None
        launch = self.launch
        if self._heard or launch.state != "starting":
            return
        now = cli_activity.activity(launch.child.pid) if launch.child is not None else None
        last, self._last_look = self._last_look, now
        if cli_activity.still_starting(last, now):
            self._not_ready = launch.loop.call_later(BUSY_LOOK, self._still_starting)
            return
        launch.set_state("asking", reason=NOT_READY)

    def _state(self, state: str, reason: str | None = None) -> None:
        launch = self.launch
        self._heard = True
        if self._not_ready is not None:
            self._not_ready.cancel()
            self._not_ready = None
        if state in TURN_STATES and not self._in_turn:
            self._open_turn()
        if state == "exited":
            return  # the launch says so itself once the CLI is ended
        if state == "waiting" and self._in_turn and self._turn_error:
            reason = f"its last turn failed: {self._turn_error}"
        launch.set_state(state, reason=reason, always=state == "retrying")  # each attempt: its reason is news
        if state == "waiting":
            self._close_turn()
            if any(send.opened for send in self._sends) and self._answering is None:
                if self.answer.last_message is not None:
                    self._answer_sends(read=False)  # the CLI said its last message: no transcript line to wait for
                else:
                    self._answering = launch.loop.call_later(ANSWER_GRACE, self._answer_sends)

    def _open_turn(self) -> None:
        self._in_turn = self._turned = True
        self.launch.session_state.count_turn()
        self.answer.start()
        self._turn_error = None
        for send in self._sends:
            send.opened = True
            if send.timer is not None:
                send.timer.cancel()
                send.timer = None

    def _close_turn(self) -> None:
        if self._in_turn:
            self._in_turn = False
            self._startup_turn = False  # the first turn (the startup message's, when there is one) is over
            self.launch.emit(TurnDone())

    # -- prompts from agentlaunch send ---------------------------------------------------------
    def _open_control(self, runtime: Path) -> None:
        """The socket agentlaunch send reaches this session through, named in the status record."""
        self.control = open_control(self.launch, runtime / SOCKET_NAME, "session", on_request=self._on_sends)

    def _close_control(self) -> None:
        if self.control is None:
            return
        close_control(self.launch, self.control)
        self.control = None

    def _on_sends(self) -> None:
        assert self.control is not None and self.relay is not None
        for request in self.control.take():  # typed in this callback: a request taken was not cancelled
            if self._starting():
                # agentlaunch send asks again, for a while: a script may send right after tmux up said "started".
                request.refuse(f"{self.launch.spec.name} is still starting", "starting", retry=True)
                continue
            self.launch.gates.check(self.launch)  # a budget spent meanwhile: paused before anything is typed
            typed, bad = self._typing_of(request)
            if typed is None:
                request.refuse(bad or "", self.launch.state, bad_input=True)
                continue
            why = self._cannot_take(request)
            if why is not None:
                request.refuse(why, self.launch.state)
                continue
            if self.remote is not None and not request.command:
                self.remote.turn_start(typed)  # a turn of the thread, as the interface's own; no key typed
            else:
                self.relay.type_prompt(typed)
            request.accept(self.launch.session_id)
            loop = self.launch.loop
            send = _Send(request, MeterTotals.of(self.launch.meter), loop.clock.monotonic())
            self._sends.append(send)  # the door stays shut to other sends until its turn begins, or it is released
            send.timer = loop.call_later(COMMAND_MIN if request.command else NO_TURN_WAIT, partial(self._no_turn_yet, send))

    def _typing_of(self, request: SendRequest) -> tuple[str | None, str | None]:
        """What to type for ``request`` so that the model reads it as written (a command: as it is), or why nothing."""
        if request.command or self.remote is not None:
            return request.prompt, None  # turn/start takes the text as it is written
        cli = self.launch.adapter.descriptor
        typed = cli.interface_input.typed(request.prompt)
        if typed is not None:
            return typed, None
        mode = cli.interface_input.mode_of(request.prompt)
        what = mode.what if mode is not None else "does not take it as a message"
        first = repr(mode.char) if mode is not None else "its first character"
        return None, (
            f"{cli.name}'s interface {what} when the text starts with {first}; the model would not read it as written, "
            "so it was not typed (put a word first, or send a slash command with --command)"
        )

    def _no_turn_yet(self, send: _Send) -> None:
        """A sent text's bound passed without a turn: a command is done once the CLI is quiet, a prompt is released."""
        send.timer = None
        if send.opened or send not in self._sends:
            return
        loop, relay = self.launch.loop, self.relay
        now = loop.clock.monotonic()
        if send.request.command:
            quiet_at = (relay.last_output if relay is not None else 0.0) + COMMAND_QUIET
            if now < quiet_at and now - send.typed_at < COMMAND_WAIT:  # still drawing its output: look again then
                send.timer = loop.call_later(quiet_at - now, partial(self._no_turn_yet, send))
                return
            self._sends.remove(send)
            usage, cost = send.before.since(self.launch.meter)
            send.request.answer(exit_code=0, answer="", usage=usage, cost_usd=cost)
            return
        self._sends.remove(send)
        name = self.launch.spec.name
        error = (
            f"{name}'s interface began no turn within {NO_TURN_WAIT:g}s of the sent text; it may have taken it as "
            "something else (a menu, a command), or left it in its input box"
        )
        if send.request.wait:
            usage, cost = send.before.since(self.launch.meter)
            send.request.answer(exit_code=int(ExitCode.TURN_FAILED), answer="", error=error, usage=usage, cost_usd=cost)
        else:
            self.launch.notice(error)

    def _cannot_take(self, request: SendRequest) -> str | None:
        """Why the interface cannot take a sent prompt now, or None."""
        launch, cli = self.launch, self.launch.adapter.descriptor.name
        name = launch.spec.name
        state = "thinking" if self._in_turn and launch.state in IDLE_STATES else launch.state
        if (why := launch_busy(launch, state)) is not None:
            return why
        if any(not send.opened for send in self._sends):
            return f"a prompt sent to {name} earlier has not started yet"
        if "\n" in request.prompt and self.remote is None and self.relay is not None and not self.relay.takes_paste:
            return f"{cli}'s interface does not take pasted text now; send a prompt of one line"
        return None

    def _starting(self) -> bool:
        """The interface is not up yet, or its startup message's turn is not over (the status may say waiting)."""
        elapsed = time.monotonic() - self._started_at
        if not self._heard and elapsed < STARTUP_GRACE:
            return True
        if not self._startup_turn:
            return False
        # Begun: it will end. Not begun within STARTUP_TURN_WAIT: its source reports no turns; stop waiting for it.
        return self._turned or elapsed < STARTUP_TURN_WAIT

    def _answer_sends(self, *, read: bool = True) -> None:
        """A turn that a sent prompt started is over: its answer, read from the sources once more, goes back."""
        self._answering = None
        if read and self.relay is not None:
            self.relay.read_sources()
        if self._in_turn:
            return  # another turn began meanwhile: the answer comes at its end
        done = [send for send in self._sends if send.opened]
        self._sends = [send for send in self._sends if not send.opened]
        code, error = (1, f"the turn failed: {self._turn_error}") if self._turn_error else (0, None)
        for send in done:
            usage, cost = send.before.since(self.launch.meter)
            send.request.answer(exit_code=code, answer=self.answer.text, error=error, usage=usage, cost_usd=cost)

    def _end_sends(self, result: RelayResult) -> None:
        """The interface ended: a sent prompt still waiting learns how (a budget, the CLI's exit, a signal)."""
        if self._answering is not None:
            self._answering.cancel()
            self._answer_sends(read=False)  # the turn ended (waiting) just before the CLI did: its answer is complete
        launch, cli = self.launch, self.launch.adapter.descriptor.name
        for send in self._sends:
            if send.timer is not None:
                send.timer.cancel()
            usage, cost = send.before.since(launch.meter)
            if launch.stopped is not None:
                code, error = int(launch.stopped.exit_code), launch.stopped.message
            elif result.terminated is not None:
                code, error = 128 + result.terminated, f"agentlaunch was ended by signal {result.terminated} before the turn did"
            elif self._server_gone:
                code, error = int(ExitCode.TURN_FAILED), "codex app-server exited before the turn ended"
            else:
                cli_code = self._exit_code(result)
                how = f"exited (code {cli_code})" if cli_code is not None else "ended"
                code, error = int(ExitCode.TURN_FAILED), f"{cli} {how} before the turn ended"
            send.request.answer(exit_code=code, answer=self.answer.text, error=error, usage=usage, cost_usd=cost)
        self._sends = []

    def on_source_error(self, source: NativeSource, error: Exception) -> None:
        self.launch.notice(
            f"agentlaunch stopped reading one of {self.launch.spec.provider}'s reports ({type(error).__name__}: {error}); "
            "the session goes on, its figures may be incomplete"
        )

    def on_child_signal(self) -> None:
        self.launch.on_child_signal()

    # -- the end ---------------------------------------------------------------------------------
    def _outcome(self, result: RelayResult) -> int:
        """agentlaunch's exit code, and what the person should know once the terminal is theirs again."""
        if result.terminated is not None:
            return 128 + result.terminated
        if self.launch.stopped is not None:
            return 0  # agentlaunch ended the CLI (a budget): the caller raises the budget's error, exit 6
        if self.remote is not None and self._server_gone:
            error = self.remote.failed("exited during the session; Codex's interface was ended with it", wait=5.0)
            from agentlaunch.launch.native.native_remote import AppServerFailed

            raise AppServerFailed(error.message, hint=self._resume_hint())
        code = self._exit_code(result)
        if code in (0, None):
            return 0
        cli = self.launch.adapter.descriptor.name
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        quick = time.monotonic() - self._started_at < QUICK_EXIT
        words = last_words(result.tail) if quick else []
        said = ("; its last words: " + " / ".join(words)) if words else ""
        raise InterfaceFailed(f"{cli} {how}{said}", hint=self._resume_hint())

    def _exit_code(self, result: RelayResult) -> int | None:
        """The CLI's exit code (negative: its signal), also when the relay ended on its output's end first."""
        code = result.exit_code
        if code is None and self.launch.child is not None:
            code = self.launch.child.poll()
        return code

    @property
    def _server_gone(self) -> bool:
        return self.remote is not None and self.remote.gone

    def _resume_hint(self) -> str | None:
        if not self._registered:
            return None
        return f"resume the session with: agentlaunch run {self.launch.spec.name} -r {self.launch.session_id}"


class _Send:
    """A text from agentlaunch send, typed; ``opened`` once a turn began after it was typed.

    Until then it shuts the door to other sends; its timer releases it (a command once its output settles, a prompt
    after :data:`NO_TURN_WAIT`). Its answer goes back when ``wait`` asked for it (the request is closed otherwise).
    """

    def __init__(self, request: SendRequest, before: MeterTotals, typed_at: float) -> None:
        self.request, self.before, self.opened = request, before, False
        self.typed_at = typed_at  # the loop clock's time
        self.timer: Timer | None = None


class InterfaceFailed(AgentlaunchError):
    """The provider CLI's interface ended with an error (its exit code is not 0)."""

    exit_code = ExitCode.TURN_FAILED


def last_words(tail: bytes, lines: int = 3) -> list[str]:
    """The last lines of text the CLI wrote, without its escape sequences (what a person can read)."""
    from agentlaunch.visible import visible

    text = strip_escapes(tail.decode("utf-8", "replace"))
    found = [line.strip() for line in text.replace("\r", "\n").split("\n") if line.strip()]
    return [visible(line)[:300] for line in found[-lines:]]


def strip_escapes(text: str) -> str:
    """``text`` without terminal escape sequences (CSI, OSC, and two-byte ones)."""
    import re

    return re.sub(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[PX^_][^\x1b]*\x1b\\|\x1b.", "", text)
