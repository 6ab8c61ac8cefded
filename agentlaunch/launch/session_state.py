"""What a launch knows of its session as it goes: one record, and the only ways it changes.

:class:`~agentlaunch.launch.session.Launch` holds one :class:`SessionState`; its helpers (the drivers, one turn's
cycle, the native relay) change it through the methods below, never by assigning its fields, so every change of
the session's identity, state or count of turns is one of a few named steps a reader can find.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentlaunch.launch.identity import ForkSource
    from agentlaunch.providers.base import ProviderState


class SessionState:
    """The session's id, whether it is resumed or a fork, its turns, the provider's state, the launch's state."""

    def __init__(
        self, session_id: str, resumed: bool, turns: int, provider_state: ProviderState, fork: ForkSource | None
    ) -> None:
        self._session_id, self._resumed, self._turns = session_id, resumed, turns
        self._provider_state, self._fork = provider_state, fork
        self._startup_pending = not resumed and fork is None  # a new session's first turn carries the startup message
        self._first_prompt = ""
        self._state = "starting"
        self._state_reason: str | None = None
        self.state_source: str | None = None  # who said the state (StateChanged.source); set with it
        self.cli_report: dict[str, object] | None = None  # the CLI's latest OSC 7501 report (native mode)
        self.disagreement: dict[str, object] | None = None  # the latest such report that contradicted another source

    # -- read ---------------------------------------------------------------------------------
    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def resumed(self) -> bool:
        return self._resumed

    @property
    def turns(self) -> int:
        return self._turns

    @property
    def provider_state(self) -> ProviderState:
        """What the provider needs to continue the session (a per-turn CLI's thread, say)."""
        return self._provider_state

    @property
    def fork(self) -> ForkSource | None:
        return self._fork

    @property
    def startup_pending(self) -> bool:
        """The startup message has not been sent yet (a new session's, before its first turn)."""
        return self._startup_pending

    @property
    def first_prompt(self) -> str:
        """The person's text of the first turn (what a per-turn CLI's first argv ends with: early_turn's plan)."""
        return self._first_prompt

    @property
    def state(self) -> str:
        return self._state

    @property
    def state_reason(self) -> str | None:
        """Why, as told with the state (an asking CLI's question)."""
        return self._state_reason

    # -- the only changes -------------------------------------------------------------------------
    def change_state(self, state: str, reason: str | None, *, always: bool = False, source: str = "agentlaunch") -> bool:
        """``state`` and why, ``source`` who said it; True when that is news to tell (a new state, ``always``, or a
        new question)."""
        if state != self._state or always or (state == "asking" and reason not in (None, self._state_reason)):
            self._state, self._state_reason, self.state_source = state, reason, source
            return True
        return False

    def startup_sent(self, prompt: str) -> None:
        """The startup message went with ``prompt``: sent once (a failed first turn stays in the CLI's transcript)."""
        self._startup_pending, self._first_prompt = False, prompt

    def count_turn(self) -> None:
        self._turns += 1

    def uncount_turn(self) -> None:
        """The turn just counted was refused before it began: no turn of this session."""
        self._turns -= 1

    def keep(self, provider_state: ProviderState) -> None:
        """What the next turn (or a later launch) needs of the provider, as it stands now."""
        self._provider_state = provider_state

    def learn_id(self, session_id: str, provider_state: ProviderState) -> None:
        """The CLI named the session (Codex's thread id is the session's: ``-r`` and ``-c`` find it)."""
        self._session_id, self._provider_state = session_id, provider_state
