"""How a launch drives its CLI, one driver per adapter shape, chosen once when the launch is made.

A *persistent* CLI (Claude Code, the fake provider) runs for the whole
session: a turn is a stream-json message on its stdin, an interrupt a control
request, a permission question answered on stdin, and when it exits the
session is over. A *per-turn* CLI (Codex, Gemini) is started afresh for each
turn with the thread carried in the provider state: a turn is a new process,
an interrupt SIGINT to its process group, and after each turn the process is
reaped, the calls its own files hold beyond the printed sum are counted, and
the state the next turn needs is kept. :class:`~agentlaunch.launch.session.Launch`
asks its driver and never branches on the shape itself; a driver reads and asks the launch through
:class:`DrivenLaunch`, never the whole ``Launch`` (:mod:`agentlaunch.launch.driver_choice` chooses the driver).
"""

from __future__ import annotations

import json
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from agentlaunch.events import CallUsage, Event, PermissionRequest, ToolGate
from agentlaunch.launch.placement import Placement, with_placement_argv
from agentlaunch.providers.base import Adapter, Parser, PersistentAdapter, PerTurnAdapter, TurnPlan
from agentlaunch.sinks import ProviderStateKept

if TYPE_CHECKING:
    from agentlaunch.definitions.spec import AgentSpec
    from agentlaunch.launch.reaper import Reaper
    from agentlaunch.launch.tool_gates import ToolGates
    from agentlaunch.launch.turn import ChildLike
    from agentlaunch.providers.base import ProviderState
    from agentlaunch.sinks import SinkEvent


class DrivenLaunch(Protocol):
    """What a driver reads of the launch (its CLI, how it was started, the session's provider state) and asks of it."""

    @property
    def spec(self) -> AgentSpec: ...
    @property
    def child(self) -> ChildLike | None: ...
    @property
    def command(self) -> str | None: ...
    @property
    def env(self) -> dict[str, str]: ...
    @property
    def placement_argv(self) -> list[str]: ...
    @property
    def working_dir(self) -> Path: ...
    @property
    def provider_state(self) -> ProviderState: ...
    @property
    def parser(self) -> Parser: ...
    @property
    def gates(self) -> ToolGates: ...
    @property
    def reaper(self) -> Reaper: ...

    def handle(self, event: Event) -> None: ...
    def emit(self, event: SinkEvent) -> None: ...
    def set_state(self, state: str, *, always: bool = False, reason: str | None = None) -> None: ...
    def keep_provider_state(self, state: ProviderState) -> None: ...
    def start_turn(self, argv: list[str], stdin: bytes, text: str) -> None: ...
    def release_child(self) -> ChildLike: ...


class Driver(Protocol):
    """What a launch asks of its CLI's shape."""

    @property
    def adapter(self) -> Adapter: ...

    persistent: bool

    def parser(self, state: Mapping[str, object]) -> Parser:
        """A parser of the CLI's output, continuing from the session's provider state."""
        ...

    def start(
        self, spec: AgentSpec, command: str, session_id: str, resumed: bool, interactive: bool, placement: Placement
    ) -> tuple[TurnPlan, list[str], list[str]]:
        """The adapter's plan, the CLI's argv with the placement's arguments, and the argv the fingerprint records."""
        ...

    def first_turn(
        self, spec: AgentSpec, command: str, session_id: str, placement_argv: list[str], message: str
    ) -> tuple[list[str], bytes]:
        """argv and stdin of a new session's CLI whose first turn is ``message`` (the doctor's capture run)."""
        ...

    def send(self, launch: DrivenLaunch, text: str) -> None:
        """Start the turn with ``text``."""
        ...

    def interrupt(self, child: ChildLike) -> None:
        """Ask the CLI to end the running turn."""
        ...

    def split(self, launch: DrivenLaunch, events: list[Event]) -> list[Event]:
        """One output line's events, a per-turn CLI's turn sum split into its calls."""
        ...

    def after_turn(self, launch: DrivenLaunch, cli_gone: bool) -> int | None:
        """The turn ended (finished or not): the CLI's exit code when it is gone."""
        ...

    def session_confirmed(self, launch: DrivenLaunch) -> None:
        """The CLI confirmed the session (the recorder registered it)."""
        ...

    def answer(self, child: ChildLike, request: PermissionRequest, decision: str) -> None:
        """Answer the CLI's permission question."""
        ...

    def answer_gate(self, child: ChildLike, gate: ToolGate, allow: bool, reason: str) -> None:
        """Let a held tool run, or refuse it and end the turn (a spent budget)."""
        ...


class PersistentDriver:
    """One CLI for the session; every turn a message on its stdin."""

    persistent = True

    def __init__(self, adapter: PersistentAdapter) -> None:
        self.adapter: PersistentAdapter = adapter
        self._gated = False  # the CLI was asked to hold its tools (once per process)

    def parser(self, state: Mapping[str, object]) -> Parser:
        return self.adapter.parser(state)

    def start(
        self, spec: AgentSpec, command: str, session_id: str, resumed: bool, interactive: bool, placement: Placement
    ) -> tuple[TurnPlan, list[str], list[str]]:
        plan = self.adapter.plan(spec, command, session_id, resumed, interactive)
        # Fingerprinted with the headless flags in both chats: the line chat sends the prefix of a headless
        # run (the same tools, see ClaudeAdapter.plan), so a change between them alone is no change.
        headless = self.adapter.plan(spec, command, session_id, resumed, False)
        return plan, [*plan.argv, *placement.argv], [*headless.argv, *placement.fingerprint_argv]

    def first_turn(
        self, spec: AgentSpec, command: str, session_id: str, placement_argv: list[str], message: str
    ) -> tuple[list[str], bytes]:
        plan = self.adapter.plan(spec, command, session_id, False, False)
        return [*plan.argv, *placement_argv], (json.dumps(self.adapter.user_message(message)) + "\n").encode("utf-8")

    def send(self, launch: DrivenLaunch, text: str) -> None:
        assert launch.child is not None
        if launch.gates.active and not self._gated:
            # Before the first turn (the CLI reads its stdin in order): every tool waits for agentlaunch's answer.
            self._gated = True
            if (request := self.adapter.gate_request()) is not None:
                launch.child.send_json(request)
        launch.child.send_json(self.adapter.user_message(text))

    def interrupt(self, child: ChildLike) -> None:
        child.send_json(self.adapter.interrupt_message())

    def split(self, launch: DrivenLaunch, events: list[Event]) -> list[Event]:
        return events

    def after_turn(self, launch: DrivenLaunch, cli_gone: bool) -> int | None:
        return session_cli_after_turn(launch, cli_gone)

    def session_confirmed(self, launch: DrivenLaunch) -> None:
        return None

    def answer(self, child: ChildLike, request: PermissionRequest, decision: str) -> None:
        child.send_json(self.adapter.permission_answer(request, decision))

    def answer_gate(self, child: ChildLike, gate: ToolGate, allow: bool, reason: str) -> None:
        child.send_json(self.adapter.gate_answer(gate.request_id, allow, reason))


def session_cli_after_turn(launch: DrivenLaunch, cli_gone: bool) -> int | None:
    """A CLI that lives for the session finished a turn: waiting for the next, or gone (its exit code)."""
    assert launch.child is not None
    if not cli_gone:
        launch.set_state("waiting")
        return None
    code = launch.child.poll()
    code = launch.child.stop() if code is None else code
    launch.set_state("exited")
    return code


class PerTurnDriver:
    """A new CLI process for every turn, the thread carried in the provider state."""

    persistent = False

    def __init__(self, adapter: PerTurnAdapter) -> None:
        self.adapter: PerTurnAdapter = adapter

    def parser(self, state: Mapping[str, object]) -> Parser:
        return self.adapter.parser(state)

    def start(
        self, spec: AgentSpec, command: str, session_id: str, resumed: bool, interactive: bool, placement: Placement
    ) -> tuple[TurnPlan, list[str], list[str]]:
        # The flags as a new session's first turn would have them (no thread id, no prompt).
        plan = self.adapter.plan_turn(spec, command, self.adapter.new_state(session_id), "")
        argv = with_placement_argv(plan.argv[:-1], placement.argv)
        return plan, argv, with_placement_argv(plan.argv[:-1], placement.fingerprint_argv)

    def first_turn(
        self, spec: AgentSpec, command: str, session_id: str, placement_argv: list[str], message: str
    ) -> tuple[list[str], bytes]:
        turn = self.adapter.plan_turn(spec, command, self.adapter.new_state(session_id), message)
        return with_placement_argv(turn.argv, placement_argv), turn.stdin or b""

    def send(self, launch: DrivenLaunch, text: str) -> None:
        assert launch.command is not None
        plan = self.adapter.plan_turn(launch.spec, launch.command, launch.provider_state, text)
        launch.start_turn(with_placement_argv(plan.argv, launch.placement_argv), plan.stdin or b"", text)

    def interrupt(self, child: ChildLike) -> None:
        # A per-turn CLI ends its turn on SIGINT; Gemini's launcher only passes it on to its group.
        child.signal_group(signal.SIGINT)

    def split(self, launch: DrivenLaunch, events: list[Event]) -> list[Event]:
        if not any(isinstance(e, CallUsage) for e in events):
            return events
        split: list[Event] = []
        for event in events:
            if isinstance(event, CallUsage):
                split.extend(self.adapter.calls_in_turn(event, launch.parser, launch.env))
            else:
                split.append(event)
        return split

    def after_turn(self, launch: DrivenLaunch, cli_gone: bool) -> int | None:
        """The CLI finished its turn: reap it and what it left, keep what the next turn needs."""
        child = launch.release_child()
        code = child.poll()
        code = child.stop() if code is None else code
        child.close()
        launch.reaper.end_all()  # its helpers have no next turn to serve
        launch.reaper.roots.discard(child.pid)
        # What the CLI's own file holds beyond what was counted: the finished calls of an interrupted or failed turn.
        for call in self.adapter.calls_not_counted(launch.parser, launch.env):
            launch.handle(call)
        state, learned = self.adapter.state_after_turn(launch.parser, launch.env)
        launch.keep_provider_state(state)
        for event in learned:
            launch.handle(event)
        launch.set_state("waiting")
        return code

    def session_confirmed(self, launch: DrivenLaunch) -> None:
        # A per-turn CLI's thread is known now: kept at once, so that a launch that dies mid-turn can resume it.
        launch.emit(ProviderStateKept(self.adapter.state_after_turn(launch.parser, launch.env)[0]))

    def answer(self, child: ChildLike, request: PermissionRequest, decision: str) -> None:
        return None  # a per-turn CLI asks nobody: it runs with its own policy

    def answer_gate(self, child: ChildLike, gate: ToolGate, allow: bool, reason: str) -> None:
        return None  # a per-turn CLI holds no tool for agentlaunch
