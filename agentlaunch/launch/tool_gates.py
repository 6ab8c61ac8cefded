"""The budget's hold on tools: while a budget applies, the CLI holds each tool until the launch answers.

The answer waits for the call that asked for the tool to report its final
usage (so the budget is checked with that call counted), then lets the tool run
or, when a budget is spent, refuses it and ends the turn: no call follows the
one that crossed the budget (issue 23; the levers measured are in
docs/usage.md, Budgets). A native Claude Code may start a tool before it writes the call that asked for it
(issue 41): such a tool is decided on that call's worst cost instead (:meth:`ToolGates.decide`,
:mod:`agentlaunch.usage.call_bound`). It reads and asks the launch through :class:`GatedLaunch`, never the whole
``Launch``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from agentlaunch.events import CallUsage, Event, ToolGate, TurnEnd
from agentlaunch.sinks import LaunchView
from agentlaunch.usage.budget import BudgetGuard
from agentlaunch.usage.call_bound import bound_refusal

if TYPE_CHECKING:
    from agentlaunch.errors import AgentlaunchError
    from agentlaunch.launch.turn import ChildLike
    from agentlaunch.sinks import SinkEvent
    from agentlaunch.usage.call_meter import CallMeter


class GateAnswer(Protocol):
    """The launch's driver, as far as a held tool goes: it tells the CLI to run the tool or to refuse it."""

    def answer_gate(self, child: ChildLike, gate: ToolGate, allow: bool, reason: str) -> None: ...


class HeldTool(Protocol):
    """A tool a native CLI holds (:class:`~agentlaunch.providers.native.source.ToolAsked`)."""

    @property
    def undecided(self) -> str: ...
    @property
    def unread(self) -> int: ...
    @property
    def early(self) -> bool: ...

    def answer(self, allow: bool, reason: str, /) -> None: ...


class GatedLaunch(LaunchView, Protocol):
    """What the gates read and ask of the launch: what a sink sees (the budget guard checks it), whether a budget
    paused it, its CLI and driver (read-only), and its sinks (a held tool is told to them)."""

    @property
    def paused(self) -> AgentlaunchError | None: ...
    @property
    def child(self) -> ChildLike | None: ...
    @property
    def driver(self) -> GateAnswer: ...

    def emit(self, event: SinkEvent) -> None: ...


class ToolGates:
    """The budget guard among a launch's sinks, and the tools held until it is asked."""

    def __init__(self, guard: BudgetGuard | None, calls: CallMeter | None = None) -> None:
        self.guard = guard
        self.calls = calls
        """The launch's call meter: what its next call costs at worst (:meth:`decide`, a call not read yet)."""
        self._held: list[ToolGate] = []  # their asking call has not reported its final usage yet

    @property
    def active(self) -> bool:
        """A budget applies: the CLI is asked to hold each tool until :meth:`check` allows it."""
        return self.guard is not None

    def check(self, launch: GatedLaunch) -> None:
        """Before the next call (a turn, a held tool): stop when a budget is spent, another agent's calls included."""
        if self.guard is not None and launch.stopped is None and launch.paused is None:
            self.guard.check(launch)

    def decide(self, launch: GatedLaunch, unread: int = 0) -> tuple[bool, str]:
        """A tool the CLI holds: (let it run, why not). ``unread``: how many calls that may have asked for it are not
        counted yet (their line not read in time, issue 41); they are counted at their worst
        (:func:`~agentlaunch.usage.call_bound.bound_refusal`), so the tool runs only when no limit can be crossed
        whatever they cost. A spent budget stops or pauses the launch (:meth:`check`) and refuses the tool."""
        self.check(launch)
        held = launch.stopped or launch.paused
        if held is not None:
            return False, held.message
        if not unread or self.guard is None:
            return True, ""
        if self.calls is None:
            return False, "the launch cannot price its calls"
        why = bound_refusal(self.guard.headroom(launch), self.calls.worst_call(), unread)
        return why is None, why or ""

    def asked(self, launch: GatedLaunch, tool: HeldTool) -> str | None:
        """Answer a native CLI's held tool (:meth:`decide`); None while the turn goes on, else the reason for the
        agent's row ("" for none) once a refusal ends the turn (Claude Code then reports no Stop, measured on 2.1.332).

        Asked early (before its call's line was read), a tool the bound does not allow stays unanswered: the source
        asks again once the line is read or its wait is over."""
        allow, why = self.decide(launch, tool.unread if tool.undecided else 0)
        held = launch.stopped or launch.paused  # a pause refuses it and ends the turn too
        if not allow and tool.early and held is None:
            return None
        reason = why if allow or held is not None or not tool.undecided else f"{tool.undecided}: {why}"
        tool.answer(allow, reason)
        if launch.paused is not None or (not allow and tool.undecided):
            return "" if held is not None else reason
        return None

    def hold(self, gate: ToolGate, launch: GatedLaunch) -> None:
        """A tool the CLI holds: answered now, or once its asking call's final usage is in."""
        launch.emit(gate)
        if gate.call_open:
            self._held.append(gate)
        else:
            self._answer(gate, launch)

    def after(self, event: Event, launch: GatedLaunch) -> None:
        """After each event: a call's final usage (or the turn's end) answers the tools held for it."""
        if self._held and isinstance(event, CallUsage | TurnEnd):
            held, self._held = self._held, []
            for gate in held:
                self._answer(gate, launch)

    def _answer(self, gate: ToolGate, launch: GatedLaunch) -> None:
        """Let the held tool run, or (a budget is spent) refuse it and end the turn: no call follows."""
        if launch.child is None:
            return
        self.check(launch)
        held = launch.stopped or launch.paused  # a pause refuses the tool and ends the turn as a stop does
        launch.driver.answer_gate(launch.child, gate, held is None, held.message if held is not None else "")
