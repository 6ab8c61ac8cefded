"""Live status of every running session: one small JSON record each, in ``<state dir>/status/``.

A :class:`StatusWriter` is one of a launch's sinks (:mod:`agentlaunch.sinks`):
on every event it replaces the record atomically, at most twice a second; a change to or from
``exited`` is written at once, and a trailing deadline on the launch's loop makes sure the last
update of a burst is never lost. Readers (``agentlaunch status``, tmux) list
the records, flag those whose agentlaunch process is gone as stale, and
remove them.

Inside a pane started by ``agentlaunch tmux up`` (``AGENTLAUNCH_PANE_TITLE=1``
and ``$TMUX_PANE`` set) the writer also sets the pane's title to the
one-line form, which the pane border shows.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from agentlaunch import paths
from agentlaunch.events import TurnEnd
from agentlaunch.fsutil import PRIVATE_FILE_MODE, private_dir, read_regular, write_atomic
from agentlaunch.processes import process_running, process_start, same_process
from agentlaunch.sinks import PromptSent, SessionClosed, StateChanged, TurnDone
from agentlaunch.usage import plan_limits
from agentlaunch.usage.cache_clock import warmth_text
from agentlaunch.visible import visible

if TYPE_CHECKING:
    from agentlaunch.sinks import Cancellable, LaunchView, SinkEvent

STATUS_DIR = "status"
MIN_INTERVAL = 0.5  # seconds between two writes of one record
TITLE_RETRY = 0.05  # seconds before a title that waits for the one on its way is tried again
TITLE_WAIT = 2.0  # seconds the session's end waits for tmux to set the last title
PANE_TITLE_ENV = "AGENTLAUNCH_PANE_TITLE"
CACHE_EXPIRY_OPTION = "@agentlaunch_cache_expires"
"""The pane option holding when the prompt cache expires (unix seconds): the border counts down from it."""
SESSION_OPTION = "@agentlaunch_session"
SESSION_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")
"""The pane option naming the session its launch runs: a pane that died or was stopped is restarted in it."""
RECORD_VERSION = 1
NEEDS_YOU = ("waiting", "asking", "stalled")  # the states in which the agent waits for the person
TIMED = (*NEEDS_YOU, "retrying")  # the states shown with how long they have lasted
TURN_STATES = ("thinking", "tool", "asking", "retrying", "stalled")  # a turn is under way
RECORD_LIMIT = 256 << 10  # a record is about 1 KiB; a larger file is not one
MAX_COUNT = 1 << 53  # a count at or above this is not one agentlaunch wrote
__all__ = ["ASKING", "STATES", "StatusRecord", "StatusWriter", "line_for", "one_line", "process_running", "process_start",
           "read_records", "shown_state"]  # fmt: skip


def status_dir(state_dir: Path | None = None) -> Path:
    return (state_dir or paths.state_dir()) / STATUS_DIR


def _n(value: int) -> str:
    return f"{value:,}"


def snapshot(
    launch: LaunchView, *, pid: int, pid_start: str | None, started: str, state_since: str | None = None,
    reason: str | None = None, done: bool = False,
) -> dict[str, Any]:
    """The status record of ``launch`` as plain JSON data."""
    meter = launch.meter
    earlier = meter.earlier  # a resumed session's calls before this launch: the record shows the whole session
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
        "working_dir": str(launch.working_dir),
        "pid": pid,
        "pid_start": pid_start,
        "cli_pid": launch.cli_pid,
        "control": launch.control_path,  # where agentlaunch send reaches it (a chat or an interface), else null
        "state": launch.state,
        "state_since": state_since,  # when it entered that state: how long it has been waiting or asking
        "state_reason": reason,  # why, when the state alone does not say: asking, retrying (the cause), stalled
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
        "cost": cost_text(meter.cost_usd + earlier.cost_usd, priced, meter.unpriced_calls + earlier.unpriced_calls,
                          meter.calls + earlier.calls),
        "priced_calls": priced,
        "unpriced_calls": meter.unpriced_calls + earlier.unpriced_calls,
        "cache": meter.cache.as_record() if meter.cache is not None else None,
        "rate_limits": plan_limits.as_record(meter.rate_limits),  # a subscription's 5h and 7d windows; null with an API key
        "started": started,
        "updated": datetime.now(UTC).isoformat(timespec="seconds"),
    }


STATES = ("starting", "waiting", "thinking", "tool", "retrying", "asking", "stalled", "exited")
"""The states a launch reports; ``asking`` (a permission prompt or a question waits) and ``stalled`` (its turn has
heard nothing from the CLI for ``stall_timeout``) mean a person is needed."""
ASKING = "asking"
ASKING_SHOWN = "ASKING: needs you"
"""How ``asking`` reads in one-line and table views: it must stand out in a row of panes."""
STALLED_SHOWN = "STALLED: needs you"
DONE = "done"
"""How ``waiting`` reads when the agent's last turn ended and nothing came since (``"done": true``)."""
REASON_CHARS = 80  # the cause shown after ``retrying``, at most


def shown_state(state: str, record: dict[str, Any] | None = None) -> str:
    """The state as views print it: ``asking`` and ``stalled`` in capitals with what they mean, ``waiting`` after a
    finished turn as ``done``, ``retrying`` with its cause (``retrying (529 overloaded, attempt 3/10)``)."""
    if state == ASKING:
        return ASKING_SHOWN
    if state == "stalled":
        return STALLED_SHOWN
    record = record or {}
    if state == "waiting" and record.get("done") is True:
        return DONE
    reason = record.get("state_reason")
    if state in ("retrying", "waiting") and isinstance(reason, str) and reason:
        return f"{state} ({reason[:REASON_CHARS]})"  # the cause of a retry loop; why the last turn ended (it failed)
    return state


def waited(record: dict[str, Any], now: datetime | None) -> str | None:
    """How long a ``waiting`` or ``asking`` agent has been so: ``for 3m12s`` at ``now``, else ``since 11:42``."""
    if record.get("stale") or record.get("state") not in TIMED or not isinstance(record.get("state_since"), str):
        return None
    try:
        since = datetime.fromisoformat(record["state_since"])
    except ValueError:
        return None
    if since.tzinfo is None:
        return None
    if now is None:  # a pane title is written once per state: a clock time stays true
        return f"since {since.astimezone():%H:%M}"
    return f"for {duration((now - since).total_seconds())}"


def duration(seconds: float) -> str:
    """``45s``, ``5m00s``, ``2h05m``: how long a state has lasted, as every view says it."""
    whole = max(int(seconds), 0)
    hours, rest = divmod(whole, 3600)
    if hours:
        return f"{hours}h{rest // 60:02d}m"
    return f"{rest // 60}m{rest % 60:02d}s" if rest >= 60 else f"{rest}s"


def one_line(record: dict[str, Any], now: datetime | None = None, *, warmth: bool = True) -> str:
    """``demo · waiting · ctx 12.3% · 40,211 to compaction · $0.0123 · 5h 42% · resets 18:20 · cache warm 4m12s · for 3m12s``:
    for tmux and prompts (the plan's limits only for a subscription, which the CLI reports them for).

    The last part, for an agent ``waiting`` or ``asking``, says how long at ``now`` (``status --line``),
    or since when without ``now`` (the pane title, written once per state). A launch that is ``asking``
    reads ``demo · ASKING: needs you · …``. ``warmth=False`` leaves the cache's countdown out: the pane
    border computes it from the expiry itself (:data:`agentlaunch.live.tmux.BORDER_FORMAT`), since a
    title written once would keep saying "warm" after the cache expired.
    """
    parts = [str(record.get("agent", "?")), shown_state(str(record.get("state", "?")), record)]
    if record.get("stale"):
        parts[1] = "stale"
    percent = record.get("percent")
    if _number(percent) and record.get("window_source") != "observed":
        parts.append(f"ctx {percent:.1f}%")
    elif _count(record.get("context")) and record["context"]:
        parts.append(f"ctx {_n(record['context'])}")
    left = record.get("to_compaction")
    if _count(left):
        parts.append(f"{_n(left)} to compaction" if left > 0 else "past compaction threshold")
    cost = record.get("cost")
    if isinstance(cost, str) and cost:
        parts.append(cost)
    if limits := plan_limits.limits_text(record, now or datetime.now(UTC)):
        parts.append(limits)
    warm = warmth_text(record, now or datetime.now(UTC)) if warmth else None
    if warm:
        parts.append(warm)
    if (how_long := waited(record, now)) is not None:
        parts.append(how_long)
    return visible(" · ".join(parts))  # a status bar is a terminal: no escape from a record reaches it


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
        self._tmux = shutil.which("tmux") if self.pane else None
        self._pending: dict[str, Any] | None = None
        self._last_write: float | None = None
        self._last_state: str | None = None
        self._last_control: str | None = None
        self._state: str | None = None
        self._state_since: str | None = None
        self._reason: str | None = None  # why the state is what it is (the latest StateChanged's reason)
        self._asked = False  # the turn under way carries a prompt of the person's or agentlaunch send's
        self._turn_ended = False  # such a turn ended and no other began since: its waiting reads "done"
        self._timer: Cancellable | None = None
        self._titling: subprocess.Popen[bytes] | None = None  # the tmux process setting the pane's title
        self._next_title: tuple[str, str, str] | None = None  # the title (cache expiry, session) that follows it
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
            self._reason = event.reason
            self._turn_ended = self._turn_ended and event.state not in TURN_STATES
        elif isinstance(event, TurnEnd) and event.is_error:
            self._asked = False  # a turn that failed finished no task (headless and the line chat; native: its reason)
        elif isinstance(event, PromptSent):
            self._asked = self._asked or bool(event.text.strip())  # not the startup message alone: no one's task
        elif isinstance(event, TurnDone):
            self._turn_ended, self._asked = self._asked and self._reason is None, False
        since = self._state_since
        record = snapshot(launch, pid=self.pid, pid_start=self.pid_start, started=self.started, state_since=since,
                          reason=self._reason, done=self._turn_ended)  # fmt: skip
        self.update({**record, **self.extra})
        if isinstance(event, SessionClosed):
            self.close()

    def update(self, record: dict[str, Any]) -> None:
        """Write ``record`` now if due (or if it enters or leaves ``exited``), else within the interval."""
        if self._closed:
            return
        state = record.get("state")
        prompt = state != self._last_state and "exited" in (state, self._last_state)
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
        # The status file is a convenience: a full disk must never end the session.
        with contextlib.suppress(OSError):
            # Private (0700 folders, a 0600 file): a record names the working directory, the title and the cost.
            private_dir(self.directory.parent)
            private_dir(self.directory)
            data = (json.dumps(record, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
            write_atomic(self.path, data, mode=PRIVATE_FILE_MODE)
            self.writes += 1
        session = record.get("session_id")
        self._set_pane_title(one_line(record, warmth=False), cache_expiry(record), session if isinstance(session, str) else "")

    def _set_pane_title(self, title: str, expiry: str = "", session: str = "") -> None:
        """The pane's title, the cache's expiry (epoch seconds, "" for none) and the session's id in one tmux call.

        The border counts the cache down from the expiry on every redraw (``status-interval``), so
        agentlaunch writes it once per call, never once a second. The session's id stays on the pane
        after the launch ends, so `tmux up` and `restart` bring that pane back in its own conversation.
        """
        if not (self.pane and self._tmux):
            return
        if self._titling is not None and self._titling.poll() is None:
            # Set once the title on its way is: a few milliseconds, unless tmux is slow.
            self._next_title = (title, expiry, session)
            if self._title_timer is None and self.later is not None:
                self._title_timer = self.later(TITLE_RETRY, self._title_due)
            return
        self._next_title = None
        title = title[:-1] + "\\;" if title.endswith(";") else title  # tmux would end the command there
        expires = ["set-option", "-p", "-t", self.pane, CACHE_EXPIRY_OPTION, expiry] if expiry else [
            "set-option", "-p", "-u", "-t", self.pane, CACHE_EXPIRY_OPTION]  # fmt: skip
        if SESSION_ID.fullmatch(session):  # an id a CLI wrote: anything tmux would misread is left off
            expires += [";", "set-option", "-p", "-t", self.pane, SESSION_OPTION, session]
        # The tmux client inside a pane finds its server through $TMUX; an argument list, never a shell.
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            self._titling = subprocess.Popen(
                [self._tmux, "select-pane", "-t", self.pane, "-T", title.replace("#", "##"), ";", *expires],  # -T expands formats
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


@dataclass
class StatusRecord:
    """One record as read back, with whether its agentlaunch process is gone."""

    path: Path
    data: dict[str, Any]
    stale: bool

    @property
    def agent(self) -> str:
        return str(self.data.get("agent", "?"))

    @property
    def state(self) -> str:
        return "stale" if self.stale else str(self.data.get("state", "?"))

    def as_dict(self) -> dict[str, Any]:
        return {**self.data, "stale": self.stale}

    def line(self, now: datetime | None = None) -> str:
        return one_line(self.as_dict(), now)


def is_stale(data: dict[str, Any]) -> bool:
    """The record's agentlaunch process no longer exists (or its pid now belongs to another process).

    Whatever ``pid`` holds (``true``, ``-1``, ``2**70``, a string) it never reaches ``os.kill`` unchecked:
    anything that cannot be a running launch's pid makes the record stale.
    """
    return not same_process(data.get("pid"), data.get("pid_start") or None)


_TEXT_FIELDS = ("agent", "display", "provider", "model", "session_id", "working_dir", "state", "pid_start", "started",
                "updated", "cost", "window_source", "state_since", "control", "state_reason")  # fmt: skip
_COUNT_FIELDS = ("pid", "cli_pid", "version", "turns", "calls", "context", "window", "to_compaction", "priced_calls",
                 "unpriced_calls")  # fmt: skip


def _count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and -MAX_COUNT < value < MAX_COUNT


def _number(value: object) -> TypeGuard[int | float]:
    return _count(value) or (isinstance(value, float) and math.isfinite(value) and abs(value) < MAX_COUNT)


_CACHE_TEXT = ("expires_at",)
_CACHE_COUNTS = ("ttl_s", "context")
_CACHE_NUMBERS = ("next_turn_cold_usd", "next_turn_warm_usd")


def _checked_cache(value: object) -> dict[str, Any] | None:
    """The record's ``cache`` with only the fields of the right type (None when it is not an object)."""
    if not isinstance(value, dict):
        return None
    kept: dict[str, Any] = {}
    for key, item in value.items():
        if key in _CACHE_TEXT:
            ok = isinstance(item, str)
        elif key in _CACHE_COUNTS:
            ok = _count(item)
        elif key in _CACHE_NUMBERS:
            ok = item is None or _number(item)
        else:
            ok = False  # a field agentlaunch never writes: nothing shows it
        if ok:
            kept[key] = item
    return kept


def checked_setup(value: object) -> dict[str, Any] | None:
    """A record's ``worktree_setup``, each field of its type (None when it is not an object)."""
    if not isinstance(value, dict):
        return None
    ok, code = value.get("ok"), value.get("exit")
    return {
        "ok": ok if isinstance(ok, bool) else None,
        "exit": code if _count(code) else None,
        "command": value["command"] if isinstance(value.get("command"), str) else None,
        "log": value["log"] if isinstance(value.get("log"), str) else None,
    }


def checked_record(data: dict[str, Any]) -> dict[str, Any]:
    """A record read from a file anyone could have written, keeping only the fields whose type is right.

    Known fields of the wrong type or out of range (``pid: 2**70``, ``context: "x"``,
    ``usage: [..]``) are left out, as are unknown fields that are not plain
    scalars, so the table, ``--line`` and ``--json`` see only what they can show.
    """
    kept: dict[str, Any] = {}
    for key, value in data.items():
        if key in _TEXT_FIELDS:
            ok = value is None or isinstance(value, str)
        elif key in _COUNT_FIELDS:
            ok = value is None or _count(value)
        elif key in ("percent", "cost_usd"):
            ok = value is None or _number(value)
        elif key in ("resumed", "done"):
            ok = isinstance(value, bool)
        elif key == "usage":
            ok = isinstance(value, dict)
            value = {k: v for k, v in value.items() if _count(v)} if ok else None
        elif key == "cache":  # the prompt cache's warmth: null before the first call
            value = _checked_cache(value)
            ok = True
        elif key == "rate_limits":  # the plan's windows: null with an API key
            value = plan_limits.checked(value)
            ok = True
        elif key == "worktree_setup":  # how the worktree's setup went: {"ok", "exit", "command", "log"}
            value = checked_setup(value)
            ok = value is not None
        else:
            ok = value is None or isinstance(value, str | bool) or _number(value)
        if ok:
            kept[key] = value
    return kept


def _read_record(path: Path) -> dict[str, Any] | None:
    """The record in ``path``, or None when it is gone, not a regular file, too large or not a JSON object."""
    try:
        data = json.loads(read_regular(path, RECORD_LIMIT).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None  # gone (its session just ended), a FIFO, a huge file, not JSON, nested 10,000 deep
    return checked_record(data) if isinstance(data, dict) else None


def read_records(directory: Path | None = None, *, clean: bool = True) -> list[StatusRecord]:
    """Every record, sorted by agent then start; stale ones are flagged and (``clean``) removed.

    Never blocks and never raises on what it finds: a FIFO named ``*.json``,
    a record nested 10,000 deep or with an impossible pid is skipped or shown
    stale, and the records around it are read and cleaned as usual.
    """
    folder = directory or status_dir()
    records: list[StatusRecord] = []
    try:
        files = sorted(p for p in folder.iterdir() if p.suffix == ".json" and not p.name.startswith("."))
    except OSError:
        return []
    for path in files:
        data = _read_record(path)
        if data is None:
            continue
        stale = is_stale(data)
        if stale and clean:
            with contextlib.suppress(OSError):
                path.unlink()
        records.append(StatusRecord(path, data, stale))
    records.sort(key=lambda r: (r.agent, str(r.data.get("started", "")), r.path.name))
    return records


def line_for(agent: str, directory: Path | None = None) -> str:
    """The one-line status of ``agent``'s running session (the latest updated), or "" when none runs."""
    live = [r for r in read_records(directory, clean=False) if r.agent == agent and not r.stale]
    if not live:
        return ""
    latest = max(live, key=lambda r: str(r.data.get("updated", "")))
    line = latest.line(datetime.now(UTC))
    return line + (f" (+{len(live) - 1} more)" if len(live) > 1 else "")
