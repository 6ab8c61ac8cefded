"""Prompts from ``agentlaunch send`` to a native interface: typed into it (or a ``turn/start`` on Codex's app-server),
the door shut to other sends until the prompt's turn begins, and the turn's answer handed back when it ends.

:class:`NativeSends` is one native run's (:class:`~agentlaunch.launch.native.native.NativeRun`); it reads the run
through :class:`SendsRun`: its launch, relay and app-server route, the turn's answer, and what it knows of the turn.
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from agentlaunch.datarecord import replace
from agentlaunch.errors import ExitCode
from agentlaunch.launch.control import SOCKET_NAME, ControlServer, SendRequest
from agentlaunch.launch.control_door import ControlledLaunch, close_control, launch_busy, open_control
from agentlaunch.launch.native import screen_keys
from agentlaunch.launch.native.outcome import EndedLaunch, cli_exit_code
from agentlaunch.launch.questions import OpenQuestions
from agentlaunch.launch.tool_gates import GatedLaunch
from agentlaunch.launch.turn_answer import MeterTotals, TurnAnswer
from agentlaunch.live.needs_you_answer import QuestionOpen
from agentlaunch.providers.native.source import QuestionAsked

if TYPE_CHECKING:
    from agentlaunch.launch.loop import Timer
    from agentlaunch.launch.native.native_remote import RemoteCodex
    from agentlaunch.launch.native.relay import Relay, RelayResult
    from agentlaunch.launch.tool_gates import ToolGates
    from agentlaunch.providers.base import Adapter
    from agentlaunch.usage.meter import Meter

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
IDLE_STATES = ("starting", "waiting")


class SendingLaunch(ControlledLaunch, GatedLaunch, EndedLaunch, Protocol):
    """What the sends read of the launch beyond its socket's port, its gates' and its outcome's: the provider, the
    budget's gates (asked before a sent prompt is typed) and the meter (a sent turn's usage)."""

    @property
    def adapter(self) -> Adapter: ...
    @property
    def gates(self) -> ToolGates: ...
    @property
    def meter(self) -> Meter: ...


class SendsRun(Protocol):
    """What the sends read of the native run: its launch, relay and app-server route, the turn's answer, and what it
    knows of the turn (one under way, one opened yet, the interface heard from, the startup message's turn)."""

    @property
    def launch(self) -> SendingLaunch: ...
    @property
    def relay(self) -> Relay | None: ...
    @property
    def remote(self) -> RemoteCodex | None: ...
    @property
    def answer(self) -> TurnAnswer: ...
    @property
    def in_turn(self) -> bool: ...
    @property
    def turned(self) -> bool: ...
    @property
    def heard(self) -> bool: ...
    @property
    def startup_turn(self) -> bool: ...
    @property
    def started_at(self) -> float: ...
    @property
    def turn_error(self) -> str | None: ...
    @property
    def server_gone(self) -> bool: ...


class NativeSends:
    """One native run's socket for agentlaunch send, and the sent prompts whose turn or answer is awaited."""

    def __init__(self, run: SendsRun) -> None:
        self.run = run
        self.control: ControlServer | None = None
        self.waiting: list[Sent] = []  # sent prompts whose answer is awaited (--wait), oldest first
        self._answering: Timer | None = None  # a turn a sent prompt began is over: its answer is read soon
        # what the CLI asks, for agentlaunch answer
        self.questions = OpenQuestions(lambda: run.launch.spec.name, self.held, lambda: run.launch.state == "asking")

    def asked(self, item: object) -> bool:
        """``item`` is a question the CLI asks: open to agentlaunch answer (one answered with keys typed in the relay
        while the pane shows it) until the session is no longer asking; False for any other item."""
        if not isinstance(item, QuestionAsked):
            return False
        if item.answer is None:
            relay = self.run.relay
            item = replace(item, answer=partial(screen_keys.answer, relay, item) if relay is not None else None)
        self.run.launch.emit(QuestionOpen(self.questions.asked(item).shown()))  # the notify command gets it
        return True

    def held(self) -> str | None:
        """Why a budget holds tools now (spent, or paused), or None: an answer does not allow a tool then."""
        launch = self.run.launch
        launch.gates.check(launch)
        held = launch.stopped or launch.paused
        return held.message if held is not None else None

    def turn_opened(self) -> None:
        """A turn began: every prompt sent before it is under way (its release timer stopped)."""
        for send in self.waiting:
            send.opened = True
            if send.timer is not None:
                send.timer.cancel()
                send.timer = None

    def turn_over(self) -> None:
        """The interface is waiting again: the answer of a turn a sent prompt began goes back (soon, when the
        transcript may still lag)."""
        if any(send.opened for send in self.waiting) and self._answering is None:
            if self.run.answer.last_message is not None:
                self.answer_sends(read=False)  # the CLI said its last message: no transcript line to wait for
            else:
                self._answering = self.run.launch.loop.call_later(ANSWER_GRACE, self.answer_sends)

    def open(self, runtime: Path) -> None:
        """The socket agentlaunch send reaches this session through, named in the status record."""
        self.control = open_control(self.run.launch, runtime / SOCKET_NAME, "session", on_request=self.on_sends)
        if self.control is not None:
            self.control.on_question = self.questions.handle

    def close(self) -> None:
        if self.control is None:
            return
        close_control(self.run.launch, self.control)
        self.control = None

    def on_sends(self) -> None:
        assert self.control is not None and self.run.relay is not None
        for request in self.control.take():  # typed in this callback: a request taken was not cancelled
            if self.starting():
                # agentlaunch send asks again, for a while: a script may send right after tmux up said "started".
                request.refuse(f"{self.run.launch.spec.name} is still starting", "starting", retry=True)
                continue
            self.run.launch.gates.check(self.run.launch)  # a budget spent meanwhile: paused before anything is typed
            typed, bad = self.typing_of(request)
            if typed is None:
                request.refuse(bad or "", self.run.launch.state, bad_input=True)
                continue
            why = self.cannot_take(request)
            if why is not None:
                request.refuse(why, self.run.launch.state)
                continue
            if self.run.remote is not None and not request.command:
                self.run.remote.turn_start(typed)  # a turn of the thread, as the interface's own; no key typed
            else:
                self.run.relay.type_prompt(typed)
            request.accept(self.run.launch.session_id)
            loop = self.run.launch.loop
            send = Sent(request, MeterTotals.of(self.run.launch.meter), loop.clock.monotonic())
            self.waiting.append(send)  # the door stays shut to other sends until its turn begins, or it is released
            send.timer = loop.call_later(COMMAND_MIN if request.command else NO_TURN_WAIT, partial(self.no_turn_yet, send))

    def typing_of(self, request: SendRequest) -> tuple[str | None, str | None]:
        """What to type for ``request`` so that the model reads it as written (a command: as it is), or why nothing."""
        if request.command or self.run.remote is not None:
            return request.prompt, None  # turn/start takes the text as it is written
        cli = self.run.launch.adapter.descriptor
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

    def no_turn_yet(self, send: Sent) -> None:
        """A sent text's bound passed without a turn: a command is done once the CLI is quiet, a prompt is released."""
        send.timer = None
        if send.opened or send not in self.waiting:
            return
        loop, relay = self.run.launch.loop, self.run.relay
        now = loop.clock.monotonic()
        if send.request.command:
            quiet_at = (relay.last_output if relay is not None else 0.0) + COMMAND_QUIET
            if now < quiet_at and now - send.typed_at < COMMAND_WAIT:  # still drawing its output: look again then
                send.timer = loop.call_later(quiet_at - now, partial(self.no_turn_yet, send))
                return
            self.waiting.remove(send)
            usage, cost = send.before.since(self.run.launch.meter)
            send.request.answer(exit_code=0, answer="", usage=usage, cost_usd=cost)
            return
        self.waiting.remove(send)
        name = self.run.launch.spec.name
        error = (
            f"{name}'s interface began no turn within {NO_TURN_WAIT:g}s of the sent text; it may have taken it as "
            "something else (a menu, a command), or left it in its input box"
        )
        if send.request.wait:
            usage, cost = send.before.since(self.run.launch.meter)
            send.request.answer(exit_code=int(ExitCode.TURN_FAILED), answer="", error=error, usage=usage, cost_usd=cost)
        else:
            self.run.launch.notice(error)

    def cannot_take(self, request: SendRequest) -> str | None:
        """Why the interface cannot take a sent prompt now, or None."""
        launch, cli = self.run.launch, self.run.launch.adapter.descriptor.name
        name = launch.spec.name
        state = "thinking" if self.run.in_turn and launch.state in IDLE_STATES else launch.state
        if (why := launch_busy(launch, state)) is not None:
            return why
        if any(not send.opened for send in self.waiting):
            return f"a prompt sent to {name} earlier has not started yet"
        if "\n" in request.prompt and self.run.remote is None and self.run.relay is not None and not self.run.relay.takes_paste:
            return f"{cli}'s interface does not take pasted text now; send a prompt of one line"
        return None

    def starting(self) -> bool:
        """The interface is not up yet, or its startup message's turn is not over (the status may say waiting)."""
        elapsed = time.monotonic() - self.run.started_at
        if not self.run.heard and elapsed < STARTUP_GRACE:
            return True
        if not self.run.startup_turn:
            return False
        # Begun: it will end. Not begun within STARTUP_TURN_WAIT: its source reports no turns; stop waiting for it.
        return self.run.turned or elapsed < STARTUP_TURN_WAIT

    def answer_sends(self, *, read: bool = True) -> None:
        """A turn that a sent prompt started is over: its answer, read from the sources once more, goes back."""
        self._answering = None
        if read and self.run.relay is not None:
            self.run.relay.read_sources()
        if self.run.in_turn:
            return  # another turn began meanwhile: the answer comes at its end
        done = [send for send in self.waiting if send.opened]
        self.waiting = [send for send in self.waiting if not send.opened]
        code, error = (1, f"the turn failed: {self.run.turn_error}") if self.run.turn_error else (0, None)
        for send in done:
            usage, cost = send.before.since(self.run.launch.meter)
            send.request.answer(exit_code=code, answer=self.run.answer.text, error=error, usage=usage, cost_usd=cost)

    def end(self, result: RelayResult) -> None:
        """The interface ended: a sent prompt still waiting learns how (a budget, the CLI's exit, a signal)."""
        if self._answering is not None:
            self._answering.cancel()
            self.answer_sends(read=False)  # the turn ended (waiting) just before the CLI did: its answer is complete
        launch, cli = self.run.launch, self.run.launch.adapter.descriptor.name
        for send in self.waiting:
            if send.timer is not None:
                send.timer.cancel()
            usage, cost = send.before.since(launch.meter)
            if launch.stopped is not None:
                code, error = int(launch.stopped.exit_code), launch.stopped.message
            elif result.terminated is not None:
                code, error = 128 + result.terminated, f"agentlaunch was ended by signal {result.terminated} before the turn did"
            elif self.run.server_gone:
                code, error = int(ExitCode.TURN_FAILED), "codex app-server exited before the turn ended"
            else:
                cli_code = cli_exit_code(launch, result)
                how = f"exited (code {cli_code})" if cli_code is not None else "ended"
                code, error = int(ExitCode.TURN_FAILED), f"{cli} {how} before the turn ended"
            send.request.answer(exit_code=code, answer=self.run.answer.text, error=error, usage=usage, cost_usd=cost)
        self.waiting = []


class Sent:
    """A text from agentlaunch send, typed; ``opened`` once a turn began after it was typed.

    Until then it shuts the door to other sends; its timer releases it (a command once its output settles, a prompt
    after :data:`NO_TURN_WAIT`). Its answer goes back when ``wait`` asked for it (the request is closed otherwise).
    """

    def __init__(self, request: SendRequest, before: MeterTotals, typed_at: float) -> None:
        self.request, self.before, self.opened = request, before, False
        self.typed_at = typed_at  # the loop clock's time
        self.timer: Timer | None = None
