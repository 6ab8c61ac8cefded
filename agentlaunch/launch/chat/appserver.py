"""Codex's line chat through one ``codex app-server`` per launch: the thread held open, each turn a ``turn/start``.

Measured on Codex 0.171.0 against the fake API (``bench/bench_codex_appserver.py``): a later turn takes
about a seventh of a ``codex exec … resume`` process's time, and the first turn, the server's start
included, about the same as ``codex exec``'s. The model's request is ``codex exec``'s, ids aside (the
same ``-c developer_instructions``, the same sandbox, no approval asked), so the prefix fingerprint and the
doctor's capture run stay those of the ``codex exec`` route (:class:`~agentlaunch.launch.drivers.PerTurnDriver`).

The server lives for the launch like a persistent CLI: its exit ends the session. The first
:meth:`AppServerDriver.send` opens the conversation (``initialize``, then ``thread/start``, or
``thread/resume`` of the session's thread) and holds the user's text until the thread's id comes back;
:meth:`AppServerDriver.split`, which sees every output line's events, then sends its ``turn/start``. A
refused request ends the turn with the app-server's message. Every call is counted from its own
``thread/tokenUsage/updated`` (no rollout read); the thread and its running total are kept in the provider
state, so a later launch on either route continues the same thread.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from agentlaunch.events import Event, PermissionRequest, ToolGate, TurnEnd
from agentlaunch.launch.drivers import DrivenLaunch, PerTurnDriver, session_cli_after_turn
from agentlaunch.launch.placement import Placement, with_placement_argv
from agentlaunch.providers import codex_appserver as rpc
from agentlaunch.providers.base import Parser, PerTurnAdapter, ProviderState, TurnPlan, own_parser
from agentlaunch.providers.untrusted import obj, string
from agentlaunch.sinks import ProviderStateKept

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agentlaunch.definitions.spec import AgentSpec
    from agentlaunch.launch.turn import ChildLike


class AppServerDriver:
    """One ``codex app-server`` for the launch; every turn a ``turn/start`` on its stdin."""

    persistent = True

    def __init__(self, adapter: PerTurnAdapter) -> None:
        self.adapter: PerTurnAdapter = adapter
        self._exec = PerTurnDriver(adapter)  # the prefix and the doctor's run, as the `codex exec` route has them
        self._ids = itertools.count(1)
        self._initialized = False
        self._opening: str | None = None  # the id of the thread/start or thread/resume under way
        self._pending: str | None = None  # the turn's text, until the thread is open
        self._turn_request: str | None = None
        self._parser: rpc.AppServerParser | None = None
        self._interrupt = False  # asked before the turn had an id: sent (or the turn dropped) once it has one

    def parser(self, state: Mapping[str, object]) -> Parser:
        from agentlaunch.providers.codex import stored_total

        return rpc.AppServerParser(total=stored_total(state.get("total")))

    def start(
        self, spec: AgentSpec, command: str, session_id: str, resumed: bool, interactive: bool, placement: Placement
    ) -> tuple[TurnPlan, list[str], list[str]]:
        argv = rpc.app_server_argv(command, spec.provider_flags, spec.compaction_at)
        assert argv is not None, "driver_for chooses this driver only when app-server takes the agent's flags"
        _, _, fingerprinted = self._exec.start(spec, command, session_id, resumed, interactive, placement)
        return TurnPlan(argv=argv), with_placement_argv(argv, placement.argv), fingerprinted

    def first_turn(
        self, spec: AgentSpec, command: str, session_id: str, placement_argv: list[str], message: str
    ) -> tuple[list[str], bytes]:
        return self._exec.first_turn(spec, command, session_id, placement_argv, message)

    def _send(self, launch: DrivenLaunch, message: dict[str, object]) -> None:
        assert launch.child is not None
        launch.child.send_json(message)

    def send(self, launch: DrivenLaunch, text: str) -> None:
        self._parser = parser = own_parser(launch.parser, rpc.AppServerParser)
        self._interrupt = False
        if not self._initialized:
            self._initialized = True
            for message in rpc.initialize(next(self._ids)):
                self._send(launch, message)
        if self._opening is None:
            self._opening = str(next(self._ids))
            thread = string(launch.provider_state.get("thread_id")) or None
            self._send(launch, rpc.open_thread(int(self._opening), str(launch.working_dir), thread, launch.spec.model))
        if parser.thread_id is None:
            self._pending = text
        else:
            self._start_turn(launch, parser.thread_id, text)

    def _start_turn(self, launch: DrivenLaunch, thread: str, text: str) -> None:
        self._turn_request = str(next(self._ids))
        self._send(launch, rpc.turn_start(int(self._turn_request), thread, text))

    def split(self, launch: DrivenLaunch, events: list[Event]) -> list[Event]:
        parser = own_parser(launch.parser, rpc.AppServerParser)
        for request in (self._opening, self._turn_request):
            refused = obj(parser.answers.get(request or "")).get("error")
            if refused is not None:
                message = string(obj(refused).get("message")) or "the request was refused"
                if request == self._opening:
                    self._opening, self._pending = None, None  # the next turn tries to open the thread again
                self._turn_request = None
                parser.answers.pop(request or "", None)
                return [*events, TurnEnd(is_error=True, error=f"codex app-server: {message}")]
        if self._interrupt and self._pending is not None:  # interrupted before the turn began: it never does
            self._interrupt, self._pending = False, None
            return [*events, TurnEnd(is_error=True, error="interrupted before the turn started")]
        if self._pending is not None and parser.thread_id is not None:
            text, self._pending = self._pending, None
            self._start_turn(launch, parser.thread_id, text)
        if self._interrupt and parser.thread_id and parser.turn_id:
            self._interrupt = False
            self._send(launch, rpc.turn_interrupt(next(self._ids), parser.thread_id, parser.turn_id))
        return events

    def interrupt(self, child: ChildLike) -> None:
        """``turn/interrupt`` of the running turn; before it has an id, once it has one (:meth:`split`)."""
        parser = self._parser
        if parser is not None and parser.thread_id and parser.turn_id:
            child.send_json(rpc.turn_interrupt(next(self._ids), parser.thread_id, parser.turn_id))
        else:
            self._interrupt = True

    def _kept(self, launch: DrivenLaunch) -> ProviderState:
        parser = own_parser(launch.parser, rpc.AppServerParser)
        state: ProviderState = dict(launch.provider_state)
        if parser.thread_id:
            state["thread_id"] = parser.thread_id
        if parser.total is not None:
            state["total"] = parser.total.as_dict()
        return state

    def after_turn(self, launch: DrivenLaunch, cli_gone: bool) -> int | None:
        launch.keep_provider_state(self._kept(launch))
        return session_cli_after_turn(launch, cli_gone)

    def session_confirmed(self, launch: DrivenLaunch) -> None:
        # The thread is known now: kept at once, so that a launch that dies mid-turn can resume it.
        launch.emit(ProviderStateKept(self._kept(launch)))

    def answer(self, child: ChildLike, request: PermissionRequest, decision: str) -> None:
        child.send_json(rpc.approval_answer(request.request_id, decision))

    def answer_gate(self, child: ChildLike, gate: ToolGate, allow: bool, reason: str) -> None:
        return None  # no tool is held for agentlaunch (approvalPolicy never, as `codex exec`)
