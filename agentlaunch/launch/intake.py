"""What the launch does with each event its CLI reports: counted and priced, its state told, handed to the sinks.

:meth:`Launch.handle <agentlaunch.launch.session.Launch.handle>` hands every event here: the call meter counts
it (a call is priced and its :class:`~agentlaunch.sinks.PricedCall` goes first), a tool or text moves the state,
the sinks get it, a held tool waits on the budget's gates, a permission question goes to whoever is asked. It
reads and asks the launch through :class:`TakingLaunch`, never the whole ``Launch``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from agentlaunch.events import (
    CallUsage,
    Diagnostic,
    Event,
    PermissionRequest,
    SessionStarted,
    Text,
    TextDelta,
    ToolGate,
    ToolResult,
    ToolUse,
    Unknown,
)
from agentlaunch.launch.drivers import DrivenLaunch
from agentlaunch.launch.tool_gates import GatedLaunch
from agentlaunch.sinks import CompactionWarned

if TYPE_CHECKING:
    from agentlaunch.clock import Clock
    from agentlaunch.launch.cli_output import CliOutput
    from agentlaunch.launch.drivers import Driver
    from agentlaunch.launch.permissions import AskPermission, PermissionPrompt, Permissions
    from agentlaunch.launch.turn import Turn
    from agentlaunch.usage.call_meter import CallMeter


class TakingLaunch(DrivenLaunch, GatedLaunch, Protocol):
    """What taking an event reads of the launch: its call meter, what its CLI printed, its clock, who is asked a
    permission question and the turn under way; what a driver and the budget's gates see of it."""

    @property
    def calls(self) -> CallMeter: ...
    @property
    def output(self) -> CliOutput: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def driver(self) -> Driver: ...
    @property
    def permissions(self) -> Permissions: ...
    @property
    def ask_permission(self) -> AskPermission | PermissionPrompt | None: ...
    @property
    def running(self) -> Turn | None: ...


class Intake:
    """One launch's intake of events; it remembers whether the CLI confirmed the session yet."""

    def __init__(self, launch: TakingLaunch) -> None:
        self.launch = launch
        self._session_seen = False

    def handle(self, event: Event) -> None:
        """Meter and price one event, then hand it to the sinks."""
        launch = self.launch
        if isinstance(event, ToolGate):
            launch.gates.hold(event, launch)
            return
        warning = launch.calls.count(event)
        if isinstance(event, Diagnostic):
            launch.output.keep(event.line)
        if isinstance(event, Unknown):
            if launch.output.first_unknown(event.type):
                launch.emit(event)
            return
        if isinstance(event, CallUsage):
            launch.emit(launch.calls.price(event, session_id=launch.session_id, turn=launch.turns, now=launch.clock.now()))
        if isinstance(event, ToolUse):
            launch.set_state("tool")
        elif isinstance(event, ToolResult | TextDelta | Text):
            launch.set_state("thinking")
        launch.emit(event)
        if isinstance(event, SessionStarted) and not self._session_seen:
            # The CLI confirmed the session (the recorder registers it now): a per-turn one's thread is known.
            self._session_seen = True
            launch.driver.session_confirmed(launch)
        if warning is not None:
            launch.emit(CompactionWarned(warning))
        if isinstance(event, PermissionRequest):
            child = launch.child  # the CLI that asked: a person's answer comes later, on the turn's loop
            assert child is not None
            answer = launch.driver.answer
            launch.permissions.decide(event, launch.ask_permission, lambda d: answer(child, event, d), launch.running)
        launch.gates.after(event, launch)
