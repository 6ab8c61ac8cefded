"""Live status of every running session: one small JSON record each, in ``<state dir>/status/``.

A :class:`StatusWriter` is one of a launch's sinks (:mod:`agentlaunch.sinks`):
on every event it replaces the record atomically, at most twice a second; a change to or from
``exited`` is written at once, and a trailing deadline on the launch's loop makes sure the last
update of a burst is never lost. Readers (``agentlaunch status``, tmux) read
the records through :mod:`agentlaunch.fleet.records`, which flags those whose agentlaunch process is gone as
stale, and removes them.

Inside a pane started by ``agentlaunch tmux up`` (``AGENTLAUNCH_PANE_TITLE=1``
and ``$TMUX_PANE`` set) the writer also sets the pane's title to the
one-line form, which the pane border shows.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from shutil import which
from typing import TYPE_CHECKING, Any

from agentlaunch import paths
from agentlaunch.events import TurnEnd
from agentlaunch.fleet.panes import SESSION_OPTION
from agentlaunch.fleet.records import RECORD_LIMIT, STATUS_DIR, StatusRecord, checked_record, checked_setup, read_records
from agentlaunch.fleet.states import ASKING, NEEDS_YOU, STATES, TIMED, TURN_STATES, is_stale
from agentlaunch.fsutil import PRIVATE_FILE_MODE, private_dir, write_atomic
from agentlaunch.live.status_read import ASKING_SHOWN, DONE, STALLED_SHOWN, duration, line_for, one_line, shown_state, waited
from agentlaunch.processes import process_running, process_start
from agentlaunch.sinks import PromptSent, SessionClosed, StateChanged, TurnDone
from agentlaunch.usage import plan_limits

if TYPE_CHECKING:
    from agentlaunch.sinks import Cancellable, LaunchView, SinkEvent

MIN_INTERVAL = 0.5  # seconds between two writes of one record
TITLE_RETRY = 0.05  # seconds before a title that waits for the one on its way is tried again
TITLE_WAIT = 2.0  # seconds the session's end waits for tmux to set the last title
PANE_TITLE_ENV = "AGENTLAUNCH_PANE_TITLE"
CACHE_EXPIRY_OPTION = "@agentlaunch_cache_expires"
"""The pane option holding when the prompt cache expires (unix seconds): the border counts down from it."""
LINE_OPTION = "@agentlaunch_line"
"""The pane option holding agentlaunch's line for the pane border: the CLI inside may set the pane's title itself
(an OSC 2: Codex's "[ ! ] Action Required | …", Gemini's "◇ Ready (repo)", Claude Code's "✳ Claude Code"), never
a pane option, so the border shows this one, with the CLI's title beside it (``agentlaunch.live.tmux.BORDER_FORMAT``)."""
STATE_OPTION = "@agentlaunch_state"
"""The pane option holding the merged report (:func:`pane_state`): ``state=asking:source=cli:cli=blocked:kind=auth``."""
SESSION_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")
WORD = re.compile(r"[a-z-]{1,20}")  # a state, a source, a kind: anything else (a forged value) is left off


def pane_state(record: dict[str, Any]) -> str:
    """The merged state for the pane (:data:`STATE_OPTION`): agentlaunch's state, who set it, and the CLI's own report
    (its state and kind) when it gives one, in OSC 7501's field form; fixed words only."""
    report = record.get("cli_report") or {}
    pairs = [("state", record.get("state")), ("source", record.get("state_source"))]
    if isinstance(report, dict):
        pairs += [("cli", report.get("state")), ("kind", report.get("kind"))]
    return ":".join(f"{key}={value}" for key, value in pairs if isinstance(value, str) and WORD.fullmatch(value))


"""The pane option naming the session its launch runs: a pane that died or was stopped is restarted in it."""
RECORD_VERSION = 1
__all__ = [
    "ASKING",
    "ASKING_SHOWN",
    "DONE",
    "NEEDS_YOU",
    "RECORD_LIMIT",
    "STALLED_SHOWN",
    "STATES",
    "TIMED",
    "TURN_STATES",
    "StatusRecord",
    "StatusWriter",
    "checked_record",
    "checked_setup",
    "duration",
    "is_stale",
    "line_for",
    "one_line",
    "process_running",
    "process_start",
    "read_records",
    "shown_state",
    "waited",
]


def status_dir(state_dir: Path | None = None) -> Path:
    return (state_dir or paths.state_dir()) / STATUS_DIR


def snapshot(
    launch: LaunchView,
    *,
    pid: int,
    pid_start: str | None,
    started: str,
    state_since: str | None = None,
    reason: str | None = None,
    done: bool = False,
    source: str | None = None,
) -> dict[str, Any]:
    """The status record of ``launch`` as plain JSON data."""
    meter = launch.meter
    earlier = meter.earlier  # a resumed session's calls before this launch: the record shows the whole session
    kept = getattr(launch, "session_state", None)  # what the CLI itself reported (native mode)
    total = meter.total + earlier.usage
    priced = meter.priced_calls + earlier.priced_calls
    from agentlaunch.live.view import cost_text  # view imports rich; only the writer needs it

    return {
        "version": RECORD_VERSION,
        "agent": launch.spec.name,
        "display": launch.spec.display,
        "provider": launch.spec.provider,
        "model": meter.model or launch.spec.model,
        "session_id": launch.session_id,
        "resumed": launch.resumed,
        "fork_of": launch.fork.session_id if launch.fork is not None else None,  # a fork's: the session it forked
        "working_dir": str(launch.working_dir),
        "pid": pid,
        "pid_start": pid_start,
        "cli_pid": launch.cli_pid,
        "control": launch.control_path,  # where agentlaunch send reaches it (a chat or an interface), else null
        "state": launch.state,
        "state_since": state_since,  # when it entered that state: how long it has been waiting or asking
        "state_reason": reason,  # why, when the state alone does not say: asking, retrying (the cause), stalled
        "state_source": source,  # who said it: cli (its OSC 7501 report), hooks, transcript, app-server, agentlaunch
        "cli_report": getattr(kept, "cli_report", None),  # the CLI's own latest report, null when it gives none
        "disagreement": getattr(kept, "disagreement", None),  # the latest report contradicting another source
        "done": done and launch.state == "waiting",  # waiting because its last turn ended (nothing came since)
        "turns": launch.turns,
        "calls": meter.calls + earlier.calls,
        "usage": {
            "input": total.input,
            "cache_write": total.cache_write,
            "cache_read": total.cache_read,
            "output": total.output,
            "reasoning": total.reasoning,
        },
        "context": meter.context,
        "window": meter.window,
        "window_source": meter.window_source,
        "percent": None if meter.percent is None else round(meter.percent, 1),
        "to_compaction": meter.to_compaction if meter.compaction_known else None,
        # Never a guessed $0: null until at least one call could be priced.
        "cost_usd": round(meter.cost_usd + earlier.cost_usd, 6) if priced else None,
        "cost": cost_text(
            meter.cost_usd + earlier.cost_usd, priced, meter.unpriced_calls + earlier.unpriced_calls, meter.calls + earlier.calls
        ),
        "priced_calls": priced,
        "unpriced_calls": meter.unpriced_calls + earlier.unpriced_calls,
        "cache": meter.cache.as_record() if meter.cache is not None else None,
        "rate_limits": plan_limits.as_record(meter.rate_limits),  # a subscription's 5h and 7d windows; null with an API key
        "started": started,
        "updated": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def cache_expiry(record: dict[str, Any]) -> str:
    """When the record's cache expires, in unix seconds as text ("" when there is no cache yet)."""
    cache = record.get("cache")
    if not isinstance(cache, dict) or not isinstance(cache.get("expires_at"), str):
        return ""
    try:
        expires = datetime.fromisoformat(cache["expires_at"])
    except ValueError:
        return ""
    return str(int(expires.timestamp())) if expires.tzinfo is not None else ""


Later = Callable[[float, Callable[[], None]], "Cancellable"]


class StatusWriter:
    """A launch's sink that keeps the session's status record (and pane title) current, and removes it at the end.

    Everything runs on the launch's loop: the trailing write of a burst is a deadline on it
    (:meth:`LaunchView.call_later <agentlaunch.sinks.LaunchView.call_later>`, or ``later`` when given), and
    the pane title is set by a ``tmux`` process that is not waited for (a slow tmux server never holds up
    the launch; a title that comes while one is on its way follows it).
    """

    def __init__(
        self,
        directory: Path | None = None,
        *,
        pid: int | None = None,
        interval: float = MIN_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        pane_title: bool | None = None,
        later: Later | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.directory = directory or status_dir()
        self.extra = dict(extra or {})  # fields the launch knows before it starts (its worktree's setup)
        self.pid = pid or os.getpid()
        self.pid_start = process_start(self.pid)
        self.path = self.directory / f"{self.pid}.json"
        self.interval = interval
        self.clock = clock
        self.later = later
        self.started = datetime.now(UTC).isoformat(timespec="seconds")
        self.pane = os.environ.get("TMUX_PANE") if pane_title is not False else None
        if pane_title is None and os.environ.get(PANE_TITLE_ENV) != "1":
            self.pane = None
        self._tmux = which("tmux") if self.pane else None
        self._pending: dict[str, Any] | None = None
        self._written: dict[str, Any] | None = None  # the record the file holds
        self._dir_made = False  # the folders made and tightened once (not before each of a session's writes)
        self._last_write: float | None = None
        self._last_state: str | None = None
        self._last_control: str | None = None
        self._state: str | None = None
        self._state_since: str | None = None
        self._reason: str | None = None  # why the state is what it is (the latest StateChanged's reason)
        self._source: str | None = None  # who said it (the latest StateChanged's source)
        self._asked = False  # the turn under way carries a prompt of the person's or agentlaunch send's
        self._turn_ended = False  # such a turn ended and no other began since: its waiting reads "done"
        self._timer: Cancellable | None = None
        self._titling: subprocess.Popen[bytes] | None = None  # the tmux process setting the pane's title
        self._next_title: tuple[str, str, str, str] | None = None  # the title (cache expiry, session, state) that follows it
        self._title_timer: Cancellable | None = None
        self._closed = False
        self.writes = 0

    def event(self, event: SinkEvent, launch: LaunchView) -> None:
        """The record as ``launch`` stands after ``event``; the session's end removes it."""
        if self.later is None:
            self.later = launch.call_later
        if launch.state != self._state:
            self._state, self._state_since = launch.state, datetime.now(UTC).isoformat(timespec="seconds")
        if isinstance(event, StateChanged):
            self._reason, self._source = event.reason, event.source
            self._turn_ended = self._turn_ended and event.state not in TURN_STATES
        elif isinstance(event, TurnEnd) and event.is_error:
            self._asked = False  # a turn that failed finished no task (headless and the line chat; native: its reason)
        elif isinstance(event, PromptSent):
            self._asked = self._asked or bool(event.text.strip())  # not the startup message alone: no one's task
        elif isinstance(event, TurnDone):
            self._turn_ended, self._asked = self._asked and self._reason is None, False
        since = self._state_since
        record = snapshot(
            launch,
            pid=self.pid,
            pid_start=self.pid_start,
            started=self.started,
            state_since=since,
            reason=self._reason,
            done=self._turn_ended,
            source=self._source,
        )
        self.update({**record, **self.extra})
        if isinstance(event, SessionClosed):
            self.close()

    def update(self, record: dict[str, Any]) -> None:
        """Write ``record`` now if due or if its state changed, else within the interval.

        A state is written at once (a few per turn): a script that reads ``status`` after ``send --wait`` returned
        must not find the turn's ``thinking`` still there. Only the figures of a burst of calls are held back.
        """
        if self._closed:
            return
        prompt = record.get("state") != self._last_state
        prompt = prompt or record.get("control") != self._last_control  # agentlaunch send looks for it at once
        self._pending = record
        now = self.clock()
        if prompt or self._last_write is None or now - self._last_write >= self.interval:
            self.flush()
        elif self._timer is None and self.later is not None:
            self._timer = self.later(max(self.interval - (now - self._last_write), 0.0), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if not self._closed:
            self.flush()

    def flush(self) -> None:
        """Write a pending update now."""
        record, self._pending = self._pending, None
        if record is None:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._last_write = self.clock()
        self._last_state = record.get("state")
        self._last_control = record.get("control")
        if record == self._written:  # e.g. the session's end after its `exited`: the file already says it
            return
        # The status file is a convenience: a full disk must never end the session.
        with contextlib.suppress(OSError):
            data = (json.dumps(record, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
            try:
                if not self._dir_made:
                    self._make_dir()
                write_atomic(self.path, data, mode=PRIVATE_FILE_MODE, durable=False)  # what is now: no fsync to wait for
            except FileNotFoundError:  # the folder went since (a user's cleanup): made again, then written
                self._make_dir()
                write_atomic(self.path, data, mode=PRIVATE_FILE_MODE, durable=False)
            self.writes += 1
            self._written = record
        session = record.get("session_id")
        sid = session if isinstance(session, str) else ""
        self._set_pane_title(one_line(record, warmth=False), cache_expiry(record), sid, pane_state(record))

    def _make_dir(self) -> None:
        """Private (0700 folders, a 0600 file): a record names the working directory, the title and the cost."""
        private_dir(self.directory.parent)
        private_dir(self.directory)
        self._dir_made = True

    def _set_pane_title(self, title: str, expiry: str = "", session: str = "", state: str = "") -> None:
        """The pane border's line (:data:`LINE_OPTION`), the cache's expiry (epoch seconds, "" for none) and the
        session's id in one tmux call.

        The border counts the cache down from the expiry on every redraw (``status-interval``), so
        agentlaunch writes it once per call, never once a second. The pane's title is the CLI's own (an OSC 2:
        Codex's "[ ! ] Action Required | …", Gemini's "◇  Ready (repo)"): the border shows it beside the line.
        Before, the line was the title, and a CLI's title replaced the meters until the next record was written.
        The session's id stays on the pane after the launch ends, so `tmux up` and `restart` bring that pane back
        in its own conversation.
        """
        if not (self.pane and self._tmux):
            return
        if self._titling is not None and self._titling.poll() is None:
            # Set once the title on its way is: a few milliseconds, unless tmux is slow.
            self._next_title = (title, expiry, session, state)
            if self._title_timer is None and self.later is not None:
                self._title_timer = self.later(TITLE_RETRY, self._title_due)
            return
        self._next_title = None
        title = title[:-1] + "\\;" if title.endswith(";") else title  # tmux would end the command there
        expires = (
            [";", "set-option", "-p", "-t", self.pane, CACHE_EXPIRY_OPTION, expiry]
            if expiry
            else [";", "set-option", "-p", "-u", "-t", self.pane, CACHE_EXPIRY_OPTION]
        )
        if SESSION_ID.fullmatch(session):  # an id a CLI wrote: anything tmux would misread is left off
            expires += [";", "set-option", "-p", "-t", self.pane, SESSION_OPTION, session]
        if state:
            expires += [";", "set-option", "-p", "-t", self.pane, STATE_OPTION, state]
        # The tmux client inside a pane finds its server through $TMUX; an argument list, never a shell.
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            self._titling = subprocess.Popen(
                [self._tmux, "set-option", "-p", "-t", self.pane, LINE_OPTION, title, *expires],  # a value, never a format
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )

    def _title_due(self) -> None:
        self._title_timer = None
        if self._next_title is not None:
            self._set_pane_title(*self._next_title)

    def _finish_title(self) -> None:
        """The session is over: the last title is set and its tmux process collected (at most a few seconds)."""
        if self._title_timer is not None:
            self._title_timer.cancel()
            self._title_timer = None
        for _ in range(2):  # the one on its way, then the one that follows it
            if self._titling is not None:
                try:
                    self._titling.wait(timeout=TITLE_WAIT)
                except subprocess.TimeoutExpired:
                    self._titling.kill()
                    self._titling.wait()
                self._titling = None
            if self._next_title is not None:
                self._set_pane_title(*self._next_title)

    def close(self, *, remove: bool = True) -> None:
        """Write what is pending, then (the session is over) remove the record."""
        self.flush()
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._finish_title()
        if remove:
            with contextlib.suppress(FileNotFoundError, OSError):
                self.path.unlink()
