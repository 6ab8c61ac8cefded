"""The usage store as a sink: every call is committed as it arrives, so a crash loses at most the call in flight."""

from __future__ import annotations

import contextlib
from datetime import datetime

from agentlaunch.errors import AgentlaunchError
from agentlaunch.events import Compaction, SessionStarted
from agentlaunch.sinks import (
    LaunchView,
    PrefixChanged,
    PricedCall,
    PromptSent,
    ProviderStateKept,
    SessionClosed,
    SinkEvent,
    TurnDone,
)
from agentlaunch.usage.records import now
from agentlaunch.usage.store import Store

TmuxPlace = tuple[str, str | None, str | None]
"""(tmux session, window name, layout) a launch runs in, as ``tmux up`` set it (see :func:`tmux_place`)."""
PLACE_ENV = "AGENTLAUNCH_TMUX_PLACE"  # set by `tmux up` (agentlaunch.live.tmux.PLACE_ENV)


def tmux_place(environ: dict[str, str] | None = None) -> TmuxPlace | None:
    """The place ``tmux up`` gave this launch's pane (``session<TAB>window<TAB>layout``), when it runs in one."""
    import os

    value = (os.environ if environ is None else environ).get(PLACE_ENV, "")
    parts = value.split("\t")
    if len(parts) != 3 or not parts[0]:
        return None
    return parts[0], parts[1] or None, parts[2] or None


class UsageRecorder:
    """Writes a launch's session row and calls into the store (the store is the launch's; it closes it)."""

    def __init__(self, store: Store, place: TmuxPlace | None = None) -> None:
        self.store = store
        self.place = place
        self.registered = False
        self._title: str | None = None  # the first prompt, kept until the session is registered
        self._pending: list[tuple[str, str | None, datetime]] = []  # session events from before the session is known

    def event(self, event: SinkEvent, launch: LaunchView) -> None:
        if isinstance(event, SessionStarted) and not self.registered:
            # Registered once the CLI confirms the session: an unknown --resume id never becomes one.
            spec = launch.spec
            self.store.start_session(
                launch.session_id, agent=spec.name, provider=spec.provider, working_dir=str(launch.working_dir), model=spec.model
            )
            self.registered = True
            if self.place is not None:
                self.store.set_place(launch.session_id, *self.place)
            if self._title is not None:
                self.store.set_title(launch.session_id, self._title)
            for kind, detail, at in self._pending:
                self.store.record_event(launch.session_id, kind, detail, at=at)
            self._pending.clear()
        elif isinstance(event, PromptSent):
            if self._title is None and event.text.strip():
                self._title = event.text
                if self.registered:
                    self.store.set_title(launch.session_id, event.text)
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
