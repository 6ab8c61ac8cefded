"""The usage store as a sink: every call is committed as it arrives, so a crash loses at most the call in flight."""

from __future__ import annotations

import contextlib
from datetime import datetime

from agentlaunch.errors import AgentlaunchError
from agentlaunch.events import Compaction, SessionStarted
from agentlaunch.launch.sink import LaunchView, PrefixChanged, PricedCall, ProviderStateKept, SessionClosed, SinkEvent, TurnDone
from agentlaunch.usage.records import now
from agentlaunch.usage.store import Store


class UsageRecorder:
    """Writes a launch's session row and calls into the store (the store is the launch's; it closes it)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.registered = False
        self._pending: list[tuple[str, str | None, datetime]] = []  # session events from before the session is known

    def event(self, event: SinkEvent, launch: LaunchView) -> None:
        if isinstance(event, SessionStarted) and not self.registered:
            # Registered once the CLI confirms the session: an unknown --resume id never becomes one.
            spec = launch.spec
            self.store.start_session(
                launch.session_id, agent=spec.name, provider=spec.provider, working_dir=str(launch.working_dir), model=spec.model
            )
            self.registered = True
            for kind, detail, at in self._pending:
                self.store.record_event(launch.session_id, kind, detail, at=at)
            self._pending.clear()
        elif isinstance(event, PrefixChanged | Compaction):
            # What explains a cache miss later (usage --calls names it).
            kind, detail = ("prefix_changed", ", ".join(event.parts)) if isinstance(event, PrefixChanged) else (
                "compaction", event.trigger)  # fmt: skip
            if self.registered:
                self.store.record_event(launch.session_id, kind, detail)
            else:
                self._pending.append((kind, detail, now()))
        elif isinstance(event, PricedCall):
            self.store.record_call(event.record)
        elif not self.registered:
            return
        elif isinstance(event, ProviderStateKept):
            self.store.set_provider_state(launch.session_id, event.state)
        elif isinstance(event, TurnDone):
            self.store.touch_session(launch.session_id)
        elif isinstance(event, SessionClosed):
            with contextlib.suppress(AgentlaunchError):
                self.store.end_session(launch.session_id, event.exit_status)
