"""What a launch's readers see of its facts: the session's, read through its one record, and its CLI's plan.

:class:`~agentlaunch.launch.session.Launch` is one (sinks read the session's id, turns and state through
:class:`~agentlaunch.sinks.LaunchView`); the facts change only through
:class:`~agentlaunch.launch.session_state.SessionState`'s methods, and the plan once, when the launch starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentlaunch.launch.identity import ForkSource
    from agentlaunch.launch.session_state import SessionState
    from agentlaunch.launch.start import StartPlan
    from agentlaunch.providers.base import ProviderState


class LaunchFacts:
    """Read-only: the session's facts (its :attr:`session_state`) and how its CLI was started (its :attr:`plan`)."""

    session_state: SessionState
    plan: StartPlan | None

    @property
    def session_id(self) -> str:
        return self.session_state.session_id

    @property
    def resumed(self) -> bool:
        return self.session_state.resumed

    @property
    def fork(self) -> ForkSource | None:
        return self.session_state.fork

    @property
    def turns(self) -> int:
        return self.session_state.turns

    @property
    def provider_state(self) -> ProviderState:
        return self.session_state.provider_state

    @property
    def state(self) -> str:
        return self.session_state.state

    @property
    def state_reason(self) -> str | None:
        return self.session_state.state_reason

    @property
    def env(self) -> dict[str, str]:
        """The CLI's environment (set when the launch starts)."""
        return self.plan.env if self.plan else {}

    @property
    def command(self) -> str | None:
        """The CLI's resolved path (set when the launch starts)."""
        return self.plan.command if self.plan else None

    @property
    def placement_argv(self) -> list[str]:
        """The arguments that carry or point at the instructions (set when the launch starts)."""
        return self.plan.placement_argv if self.plan else []
