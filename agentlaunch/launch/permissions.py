"""The permission questions of a chat: once, always (for this session) or deny, asked of the person."""

from __future__ import annotations

from collections.abc import Callable

from agentlaunch.events import PermissionRequest
from agentlaunch.launch.signals import Signals, Terminated

AskPermission = Callable[[PermissionRequest], str]  # returns "once", "always" or "deny"


class Permissions:
    """What the person decided, and the tools they allowed for the rest of the session."""

    def __init__(self, signals: Signals) -> None:
        self.signals = signals
        self.always_allowed: set[str] = set()

    def decide(self, request: PermissionRequest, ask: AskPermission | None) -> str:
        """once, always or deny: a tool allowed always is not asked about again; no one to ask denies."""
        if request.tool_name in self.always_allowed:
            return "always"
        decision = self._ask(request, ask)
        if decision == "always":
            self.always_allowed.add(request.tool_name)
        return decision

    def _ask(self, request: PermissionRequest, ask: AskPermission | None) -> str:
        if ask is None:
            return "deny"
        try:
            with self.signals.person_waiting():  # Ctrl-C at the question denies (a KeyboardInterrupt in input())
                return ask(request)
        except Terminated:
            return "deny"  # recorded: the turn's loop ends the launch right after
