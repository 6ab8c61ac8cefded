"""One turn of a launch, from the prompt to its end: what ``Launch.run_turn`` does.

The turn's loop is :class:`~agentlaunch.launch.turn.Turn`; this is what comes
before and after it, the same for both shapes of CLI (the driver sends the
turn and does the bookkeeping after it): a stopped session takes no new turn,
a cold cache is said, the startup message goes with a new session's first
prompt, the turn is counted, and what the CLI still had when it went is
handled. :class:`LaunchTurnHost` is what the turn's loop hands each output
line and each interrupt back to. Both read and ask the launch through :class:`TurningLaunch`, never the whole
``Launch``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from agentlaunch.errors import TurnTimeout
from agentlaunch.events import TurnEnd
from agentlaunch.launch.drivers import DrivenLaunch
from agentlaunch.launch.early import prespawn
from agentlaunch.launch.identity import startup_message
from agentlaunch.launch.thread_held import held_elsewhere
from agentlaunch.launch.tool_gates import GatedLaunch
from agentlaunch.launch.turn import Turn, TurnOutcome, TurnResult
from agentlaunch.sinks import PromptSent, TurnDone

if TYPE_CHECKING:
    from pathlib import Path

    from agentlaunch.clock import Clock
    from agentlaunch.definitions.spec import AgentSpec
    from agentlaunch.errors import AgentlaunchError
    from agentlaunch.events import Event
    from agentlaunch.launch.drivers import Driver
    from agentlaunch.launch.loop import Loop
    from agentlaunch.launch.options import LaunchOptions
    from agentlaunch.launch.permissions import AskPermission, PermissionPrompt
    from agentlaunch.launch.session_state import SessionState
    from agentlaunch.launch.signals import Signals
    from agentlaunch.launch.tool_gates import ToolGates
    from agentlaunch.launch.turn import ChildLike
    from agentlaunch.providers.base import Adapter, Parser
    from agentlaunch.sinks import SinkEvent


class TurningLaunch(Protocol):
    """What one turn reads of the launch and asks of it: the session's record (the startup message sent, the turn
    counted), the driver and parser of its CLI, its loop and signals, the sinks; and the turn under way."""

    @property
    def options(self) -> LaunchOptions: ...
    @property
    def spec(self) -> AgentSpec: ...
    @property
    def adapter(self) -> Adapter: ...
    @property
    def session_id(self) -> str: ...
    @property
    def session_state(self) -> SessionState: ...
    @property
    def working_dir(self) -> Path: ...
    @property
    def state_dir(self) -> Path: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def loop(self) -> Loop: ...
    @property
    def signals(self) -> Signals: ...
    @property
    def child(self) -> ChildLike | None: ...
    @property
    def persistent(self) -> bool: ...
    @property
    def driver(self) -> Driver: ...
    @property
    def parser(self) -> Parser: ...
    @property
    def gates(self) -> ToolGates: ...
    @property
    def stopped(self) -> AgentlaunchError | None: ...
    @property
    def paused(self) -> AgentlaunchError | None: ...

    def handle(self, event: Event) -> None: ...
    def emit(self, event: SinkEvent) -> None: ...
    def notice(self, message: str) -> None: ...
    def set_state(self, state: str, *, always: bool = False, reason: str | None = None, source: str = "agentlaunch") -> None: ...
    def on_child_signal(self) -> None: ...
    def cold_cache_notice(self) -> str | None: ...
    def last_words(self) -> tuple[str, ...]: ...
    def run_running(self, turn: Turn, ask: AskPermission | PermissionPrompt | None) -> TurnResult: ...


class TurnLaunch(TurningLaunch, DrivenLaunch, GatedLaunch, Protocol):
    """The launch as a turn hands it on: to its driver and to the budget's gates."""


class LaunchTurnHost:
    """What a turn hands back to its launch (:class:`~agentlaunch.launch.turn.TurnHost`)."""

    def __init__(self, launch: TurnLaunch) -> None:
        self.launch = launch

    def on_line(self, line: str) -> TurnEnd | None:
        """Handle one output line's events; the turn's end when this line reports it."""
        launch = self.launch
        for event in launch.driver.split(launch, launch.parser.feed(line)):
            launch.handle(event)
            if isinstance(event, TurnEnd):
                return event
        return None

    def notice(self, message: str) -> None:
        self.launch.notice(message)

    def interrupt(self) -> None:
        assert self.launch.child is not None
        self.launch.driver.interrupt(self.launch.child)

    def on_child_signal(self) -> None:
        self.launch.on_child_signal()


def first_message(launch: TurnLaunch, prompt: str, *, id_known: bool = True) -> str:
    """The user's text, behind the startup message on the first turn of a new session.

    ``id_known`` False: the CLI names the session as it starts and the launch takes that name (Codex's own
    interface), so the message names no id of agentlaunch's, which ``status`` and ``sessions`` would not show.
    """
    if not launch.session_state.startup_pending:
        return prompt
    launch.session_state.startup_sent(prompt)  # once; what a per-turn CLI's first argv ends with (early_turn's plan)
    sid = launch.session_id if id_known else None
    now = prespawn.moment() or launch.clock.now()  # the early-started CLI's startup message names the same time
    startup = startup_message(launch.spec, sid, launch.working_dir, now, launch.options.templates_dir, launch.state_dir)
    return startup + "\n" + prompt if prompt else startup


def run_turn(
    launch: TurnLaunch, prompt: str, *, timeout: float | None, ask_permission: AskPermission | PermissionPrompt | None
) -> TurnOutcome:
    """Send one user turn and run the loop until its end; Ctrl-C interrupts it, SIGTERM/SIGHUP end it.

    A stopped session (see :meth:`Launch.stop`) takes no new turn: its error is raised instead; a budget
    spent meanwhile (by agents beside this one, say) stops it here.
    """
    launch.gates.check(launch)
    if (held := launch.stopped or launch.paused) is not None:
        raise held  # a paused session's mode waits for the person before it asks for a turn
    if (cold := launch.cold_cache_notice()) is not None:
        launch.notice(cold)
    if launch.signals.termination is not None:
        return TurnOutcome(None, terminated=launch.signals.termination)
    launch.signals.forget_interrupts()
    text = first_message(launch, prompt)
    launch.session_state.count_turn()
    with launch.signals.turn():  # from here a Ctrl-C interrupts the turn instead of raising
        launch.driver.send(launch, text)
        # After the prompt is on its way: the sinks (the status file's write) do not delay the CLI.
        launch.set_state("thinking")
        launch.emit(PromptSent(prompt))
        assert launch.child is not None
        host = LaunchTurnHost(launch)
        turn = Turn(launch.loop, launch.signals, launch.child, host, persistent=launch.persistent, timeout=timeout)
        result = launch.run_running(turn, ask_permission)
        if result.terminated is not None:
            return TurnOutcome(None, interrupted=result.interrupted, terminated=result.terminated)
        if result.cli_gone:
            for event in launch.parser.finish():
                launch.handle(event)
        code = launch.driver.after_turn(launch, result.cli_gone)
        if (refused := held_elsewhere(launch, result.end, launch.last_words())) is not None:
            launch.session_state.uncount_turn()  # refused before it began: no turn of this session
            raise refused
        launch.emit(TurnDone())  # the turn happened, even unfinished: the recorder counts it
        outcome = TurnOutcome(result.end, interrupted=result.interrupted, exit_code=code, last_output=launch.last_words())
    if result.timed_out and result.end is not None and not result.cli_gone:
        raise TurnTimeout(f"the turn took longer than {timeout:g}s and was interrupted")
    if result.timed_out and result.end is None:
        raise TurnTimeout(f"the turn took longer than {timeout:g}s and was interrupted; the session stays resumable")
    return outcome
