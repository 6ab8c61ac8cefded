"""The usage store as a sink: every call is committed as it arrives, so a crash loses at most the call in flight.

When another process holds the store's lock past its busy timeout, a write
goes to the journal beside the store instead (fsynced before the call is
shown) and is written to the store when it is free (:meth:`Store.write`): the
launch says so once and goes on, its exit status unchanged.
"""

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
from agentlaunch.usage import journal, journal_ops
from agentlaunch.usage.journal_ops import Op
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
        self._told = False  # the launch was told that the store is locked

    def event(self, event: SinkEvent, launch: LaunchView) -> None:
        sid = launch.session_id
        if isinstance(event, SessionStarted) and not self.registered:
            # Registered once the CLI confirms the session: an unknown --resume id never becomes one.
            spec = launch.spec
            self._write(
                journal_ops.session_op(
                    sid, agent=spec.name, provider=spec.provider, working_dir=str(launch.working_dir), model=spec.model, at=now()
                ),
                launch,
            )
            self.registered = True
            if self.place is not None:
                self._write(journal_ops.place_op(sid, *self.place), launch)
            if self._title is not None:
                self._write(journal_ops.title_op(sid, self._title), launch)
            for kind, detail, at in self._pending:
                self._write(journal_ops.event_op(sid, kind, detail, at), launch)
            self._pending.clear()
        elif isinstance(event, PromptSent):
            if self._title is None and event.text.strip():
                self._title = event.text
                if self.registered:
                    self._write(journal_ops.title_op(sid, event.text), launch)
        elif isinstance(event, PrefixChanged | Compaction):
            # What explains a cache miss later (usage --calls names it).
            kind, detail = (
                ("prefix_changed", ", ".join(event.parts)) if isinstance(event, PrefixChanged) else ("compaction", event.trigger)
            )
            if self.registered:
                self._write(journal_ops.event_op(sid, kind, detail, now()), launch)
            else:
                self._pending.append((kind, detail, now()))
        elif isinstance(event, PricedCall):
            self._write(journal_ops.call_op(event.record), launch)
        elif not self.registered:
            return
        elif isinstance(event, ProviderStateKept):
            self._write(journal_ops.state_op(sid, event.state), launch)
        elif isinstance(event, TurnDone):
            self._write(journal_ops.touch_op(sid, 1, now()), launch)
        elif isinstance(event, SessionClosed):
            with contextlib.suppress(AgentlaunchError):
                self._write(journal_ops.end_op(sid, event.exit_status, now()), launch)
            if self._told and journal.has_lines(self.store.journal):  # the end's write could not replay it
                launch.notice(
                    f"the usage store is still locked by another process: this launch's calls wait in "
                    f"{self.store.journal} until it is free; the next agentlaunch command that opens it writes them"
                )

    def _write(self, op: Op, launch: LaunchView) -> None:
        """``op`` into the store, or into its journal while another process holds the store's lock (said once)."""
        if not self.store.write(op) and not self._told:
            self._told = True
            launch.notice(
                f"the usage store is locked by another process: calls are kept in {self.store.journal} "
                "and written to the store once it is free (nothing is lost)"
            )
