"""The two adapter shapes as the launch uses them (typed, so no ``Any`` sits between the launch and a provider).

A *persistent* adapter (Claude Code, the fake provider) runs one CLI for the
session and writes turns to its stdin; a *per-turn* adapter (Codex, Gemini)
starts a CLI per turn. ``adapter.persistent`` tells them apart.

These mirror the adapters' methods as they are today; the providers package
may grow its own Protocols, and then these become an import of those.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agentlaunch.definitions.spec import AgentSpec
    from agentlaunch.events import CallUsage, Event, PermissionRequest
    from agentlaunch.providers.base import TurnPlan

State = dict[str, Any]


class Parser(Protocol):
    def feed(self, line: str) -> list[Event]: ...

    def finish(self) -> list[Event]: ...


class _Common(Protocol):
    @property
    def default_command(self) -> str: ...

    @property
    def install_hint(self) -> str: ...

    def new_state(self, session_id: str) -> State: ...

    def resume_state(self, session_id: str, stored: State | None) -> State: ...


class PersistentAdapter(_Common, Protocol):
    def plan(self, spec: AgentSpec, command: str, session_id: str, resume: bool, interactive: bool) -> TurnPlan: ...

    def parser(self, state: State | None = None) -> Parser: ...

    def user_message(self, text: str) -> dict[str, Any]: ...

    def interrupt_message(self) -> dict[str, Any]: ...

    def permission_answer(self, request: PermissionRequest, decision: str) -> dict[str, Any]: ...


class PerTurnAdapter(_Common, Protocol):
    def plan_turn(self, spec: AgentSpec, command: str, state: State, prompt: str) -> TurnPlan: ...

    def parser(self, state: State) -> Parser: ...

    # ``parser`` is the one :meth:`parser` returned (each adapter takes its own parser class).
    def calls_in_turn(self, turn: CallUsage, parser: Any, env: dict[str, str]) -> list[CallUsage]: ...

    def calls_not_counted(self, parser: Any, env: dict[str, str]) -> list[CallUsage]: ...

    def state_after_turn(self, parser: Any, env: dict[str, str]) -> tuple[State, list[Event]]: ...


Adapter = PersistentAdapter | PerTurnAdapter

if TYPE_CHECKING:  # mypy checks that today's adapters have these shapes

    def _shapes_hold() -> None:
        from agentlaunch.providers.claude import ClaudeAdapter
        from agentlaunch.providers.codex import CodexAdapter
        from agentlaunch.providers.fake import FakeAdapter
        from agentlaunch.providers.gemini import GeminiAdapter

        persistent: list[PersistentAdapter] = [ClaudeAdapter(), FakeAdapter()]
        per_turn: list[PerTurnAdapter] = [CodexAdapter(), GeminiAdapter()]
        del persistent, per_turn
