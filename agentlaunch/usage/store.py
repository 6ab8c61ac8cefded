"""The SQLite usage store: one row per model call, one row per session.

Several agentlaunch processes (one per running agent) write to the same file at
once, so the store keeps every write short: one statement in autocommit mode,
or a ``BEGIN IMMEDIATE`` transaction that takes the write lock up front (a
deferred transaction that later upgrades to a write can fail with "database is
locked" at once, without waiting for ``busy_timeout``). WAL mode lets reports
read while agents write. Opening the file (recognizing it, WAL, migrations) is
:mod:`agentlaunch.usage.store_file`; the rows as values are :mod:`agentlaunch.usage.records`.

Times are stored as UTC unix seconds (REAL): compact, indexable, and converted
to local days only for the by-day report.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, get_args

from agentlaunch.events import Usage, usage_problem
from agentlaunch.usage.records import CallRecord, ReportRow, SessionRow, from_ts, now, to_ts
from agentlaunch.usage.store_file import BUSY_TIMEOUT_S, connect, state_error
from agentlaunch.visible import visible

ReportBy = Literal["session", "agent", "model", "day"]
REPORT_BY: tuple[str, ...] = get_args(ReportBy)


_CALL_COLUMNS = (
    "id, at, agent, provider, session_id, turn, model_requested, model_reported, "
    "input, cache_write, cache_read, output, reasoning, cost_usd, price_key, cache_write_1h, full_price_usd"
)
_SESSION_COLUMNS = (
    "session_id, agent, provider, model, working_dir, started, last_used, ended, exit_status, turns, provider_state, "
    "tmux_session, tmux_window, tmux_layout, title"
)
TITLE_CHARS = 60  # a session's title: its first prompt, on one line, at most this long
_SUMS = (
    "COUNT(*), SUM(input), SUM(cache_write), SUM(cache_read), SUM(output), SUM(reasoning), "
    "SUM(cost_usd), SUM(cost_usd IS NULL), MIN(at), MAX(at), SUM(cache_write_1h), "
    "SUM(full_price_usd - cost_usd)"
)


_MAX_COUNT = (1 << 53) - 1
_LAST_TS = 253402300799  # 9999-12-31T23:59:59Z: the last second a datetime holds
_COUNTS = ("input", "cache_write", "cache_read", "output", "reasoning", "cache_write_1h")
_AMOUNTS = ("cost_usd", "full_price_usd")
# A call row as agentlaunch writes it. Another program (or a damaged file) can leave anything in a column:
# SQLite's column affinity keeps an ``at`` of 'x' as text. Such a row is skipped and named once
# (:meth:`Store.skipped`). Reports and budgets keep ``at`` to the range a datetime holds, which costs nothing
# (text and blobs sort above every number, so it is a bound of the index range they read already); a count or
# amount that is text there is summed as SQLite reads it (0), never a failure. A session's own calls, read row
# by row, are checked in full (WELL_FORMED).
_AT_LOW, _AT_HIGH = "at >= 0", f"at <= {_LAST_TS}"
WELL_FORMED = (
    "COALESCE("
    + " AND ".join(
        [
            f"+at BETWEEN 0 AND {_LAST_TS}",
            *(f"{c} BETWEEN 0 AND {_MAX_COUNT}" for c in _COUNTS),
            *(f"({c} IS NULL OR {c} BETWEEN 0 AND 1e12)" for c in _AMOUNTS),
        ]
    )
    + ", 0)"
)
_CHECKED_COLUMNS = ("at", *_COUNTS, *_AMOUNTS)
SKIPPED_NAMED = 20  # malformed rows named per query at most (a store full of them still gets one line each)


class Store:
    """The usage store. Open with :meth:`Store.open`; use as a context manager."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        """Wrap an open, migrated connection (use :meth:`open` instead)."""
        self._conn = conn
        self.path = path
        # One connection may serve a worker thread and the main thread.
        self._lock = threading.RLock()
        self._skipped: dict[int, str] = {}  # malformed call rows found by reads: id -> what is wrong
        self._named: set[int] = set()  # those already handed out by skipped()

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, path: Path, *, timeout: float = BUSY_TIMEOUT_S) -> Store:
        """Open (creating if needed) the store at ``path`` and bring its schema up to date.

        Raises StateError, without changing the file, when the file is not an
        SQLite database, is corrupted, belongs to something else, or has a
        schema newer than this code; and when the directory is not writable.
        """
        path = Path(path)
        return cls(connect(path, timeout), path)

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        """The schema version recorded in the file."""
        with self._guard():
            return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    # ------------------------------------------------------------------ sessions

    def start_session(
        self,
        session_id: str,
        *,
        agent: str,
        provider: str,
        working_dir: str | Path,
        model: str | None = None,
        at: datetime | None = None,
    ) -> SessionRow:
        """Record a new session, or mark a resumed one as in use again (ended cleared)."""
        when = to_ts(at or now())
        with self._guard():
            self._conn.execute(
                """INSERT INTO sessions (session_id, agent, provider, model, working_dir, started, last_used, turns)
                   VALUES (?, ?, ?, ?, ?, ?, ?, 0)
                   ON CONFLICT (session_id) DO UPDATE SET
                       last_used = excluded.last_used,
                       model = COALESCE(excluded.model, sessions.model),
                       ended = NULL, exit_status = NULL""",
                (session_id, agent, provider, model, str(working_dir), when, when),
            )
        row = self.get_session(session_id)
        assert row is not None
        return row

    def touch_session(self, session_id: str, turns_delta: int = 1, *, at: datetime | None = None) -> bool:
        """Count ``turns_delta`` more turns and update last_used; False if there is no such session."""
        with self._guard():
            cur = self._conn.execute(
                "UPDATE sessions SET last_used = ?, turns = turns + ? WHERE session_id = ?",
                (to_ts(at or now()), turns_delta, session_id),
            )
            return cur.rowcount > 0

    def end_session(self, session_id: str, exit_status: int | None, *, at: datetime | None = None) -> bool:
        """Mark the session ended with the child's exit status; False if there is no such session."""
        when = to_ts(at or now())
        with self._guard():
            cur = self._conn.execute(
                "UPDATE sessions SET ended = ?, last_used = MAX(last_used, ?), exit_status = ? WHERE session_id = ?",
                (when, when, exit_status, session_id),
            )
            return cur.rowcount > 0

    def set_provider_state(self, session_id: str, state: dict[str, Any] | None) -> bool:
        """Replace the session's free-form provider data (JSON); False if there is no such session."""
        payload = None if state is None else json.dumps(state, sort_keys=True)
        with self._guard():
            cur = self._conn.execute("UPDATE sessions SET provider_state = ? WHERE session_id = ?", (payload, session_id))
            return cur.rowcount > 0

    def set_place(self, session_id: str, tmux_session: str, tmux_window: str | None, tmux_layout: str | None) -> bool:
        """Remember the tmux session, window and layout the session runs in; False if there is no such session."""
        with self._guard():
            cur = self._conn.execute(
                "UPDATE sessions SET tmux_session = ?, tmux_window = ?, tmux_layout = ? WHERE session_id = ?",
                (tmux_session, tmux_window, tmux_layout, session_id),
            )
            return cur.rowcount > 0

    def set_title(self, session_id: str, prompt: str) -> bool:
        """Give the session its title from ``prompt`` (its first: a title once set is kept); False if none was set."""
        with self._guard():
            cur = self._conn.execute(
                "UPDATE sessions SET title = ? WHERE session_id = ? AND title IS NULL", (shorten(prompt), session_id)
            )
            return cur.rowcount > 0

    def latest_of_agent(self, agent: str, *, with_turns: bool = True) -> SessionRow | None:
        """The agent's most recently used session anywhere (only one that had a turn, with ``with_turns``)."""
        sql = f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE agent = ?" + (" AND turns > 0" if with_turns else "")
        with self._guard():
            row = self._conn.execute(sql + " ORDER BY last_used DESC LIMIT 1", (agent,)).fetchone()
        return None if row is None else _session_row(row)

    def sessions_by_prefix(self, prefix: str, limit: int = 10) -> list[SessionRow]:
        """Sessions whose id starts with ``prefix`` (an exact id first), most recent first, at most ``limit``."""
        with self._guard():
            rows = self._conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE substr(session_id, 1, length(?)) = ? "
                "ORDER BY session_id = ? DESC, last_used DESC LIMIT ?",
                (prefix, prefix, prefix, limit),
            ).fetchall()
        return [_session_row(r) for r in rows]

    def session_costs(self, session_ids: list[str]) -> dict[str, tuple[float | None, int]]:
        """session id -> (the sum of its priced calls' cost, or None when none was priced; its calls)."""
        if not session_ids:
            return {}
        marks = ", ".join("?" * len(session_ids))
        with self._guard():
            rows = self._conn.execute(
                f"SELECT session_id, SUM(cost_usd), COUNT(*) FROM calls WHERE session_id IN ({marks})"
                f" AND {_AT_LOW} AND {_AT_HIGH} GROUP BY session_id",
                session_ids,
            ).fetchall()
            self._find_skipped_at([f"session_id IN ({marks})"], session_ids)
        return {r[0]: (r[1], r[2]) for r in rows}

    def get_session(self, session_id: str) -> SessionRow | None:
        """The session with this id, or None."""
        with self._guard():
            row = self._conn.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
        return None if row is None else _session_row(row)

    def latest_session(self, agent: str, working_dir: str | Path, provider: str | None = None) -> SessionRow | None:
        """The most recently used session of ``agent`` in ``working_dir`` (and ``provider``), or None."""
        sql = f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE agent = ? AND working_dir = ?"
        params: list[Any] = [agent, str(working_dir)]
        if provider is not None:
            sql += " AND provider = ?"
            params.append(provider)
        sql += " ORDER BY last_used DESC LIMIT 1"
        with self._guard():
            row = self._conn.execute(sql, params).fetchone()
        return None if row is None else _session_row(row)

    def list_sessions(self, agent: str | None = None, *, limit: int | None = None) -> list[SessionRow]:
        """Sessions, most recently used first, optionally of one agent."""
        sql = f"SELECT {_SESSION_COLUMNS} FROM sessions"
        params: list[Any] = []
        if agent is not None:
            sql += " WHERE agent = ?"
            params.append(agent)
        sql += " ORDER BY last_used DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        with self._guard():
            rows = self._conn.execute(sql, params).fetchall()
        return [_session_row(r) for r in rows]

    # ------------------------------------------------------------------ calls

    def record_call(self, call: CallRecord) -> int:
        """Store one call, committed before returning (a crash loses at most the call in flight).

        Returns the new row id. A usage that no call can have (a field that is
        not an int from 0 below 2**53) is a ValueError and nothing is stored: the
        parsers refuse such figures, this is the last guard.
        """
        u = call.usage
        problem = usage_problem(u)
        if problem is not None:
            raise ValueError(f"refusing to store an impossible usage: {problem}")
        with self._guard():
            cur = self._conn.execute(
                """INSERT INTO calls (at, agent, provider, session_id, turn, model_requested, model_reported,
                                      input, cache_write, cache_read, output, reasoning, cost_usd, price_key,
                                      cache_write_1h, full_price_usd)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    to_ts(call.at), call.agent, call.provider, call.session_id, call.turn,
                    call.model_requested, call.model_reported,
                    u.input, u.cache_write, u.cache_read, u.output, u.reasoning,
                    call.cost_usd, call.price_key, u.cache_write_1h, call.full_price_usd,
                ),
            )  # fmt: skip
            assert cur.lastrowid is not None
            return cur.lastrowid

    def record_event(self, session_id: str, kind: str, detail: str | None = None, *, at: datetime | None = None) -> None:
        """Note what happened in a session that explains its calls later (``prefix_changed``, ``compaction``)."""
        with self._guard():
            self._conn.execute(
                "INSERT INTO session_events (session_id, at, kind, detail) VALUES (?, ?, ?, ?)",
                (session_id, to_ts(at or now()), kind, detail),
            )

    def events_for_session(self, session_id: str) -> list[tuple[datetime, str, str | None]]:
        """The session's events, oldest first: (when, kind, detail)."""
        with self._guard():
            rows = self._conn.execute(
                "SELECT at, kind, detail FROM session_events WHERE session_id = ? ORDER BY at, id", (session_id,)
            ).fetchall()
        return [(from_ts(r[0]) or now(), str(r[1]), r[2]) for r in rows]

    def calls_for_session(self, session_id: str) -> list[CallRecord]:
        """Every call of a session, oldest first."""
        with self._guard():
            rows = self._conn.execute(
                f"SELECT {_CALL_COLUMNS} FROM calls WHERE session_id = ? AND {WELL_FORMED} ORDER BY at, id", (session_id,)
            ).fetchall()
            self._find_skipped(["session_id = ?"], [session_id], WELL_FORMED)
        return [_call_record(r) for r in rows]

    # ------------------------------------------------------------------ reports

    def usage_report(
        self,
        by: ReportBy,
        *,
        agent: str | None = None,
        session: str | None = None,
        since: datetime | None = None,
    ) -> list[ReportRow]:
        """Usage grouped ``by`` session, agent, model or local calendar day.

        Filters: one agent, one session, calls at or after ``since``. Day rows
        come oldest first; the others with the most expensive (then the most
        recent) first.
        """
        if by not in REPORT_BY:
            raise ValueError(f"by must be one of {', '.join(REPORT_BY)}, not {by!r}")
        where: list[str] = []
        params: list[Any] = []
        if agent is not None:
            where.append("agent = ?")
            params.append(agent)
        if session is not None:
            where.append("session_id = ?")
            params.append(session)
        filters, filter_params = list(where), list(params)
        since_ts = None if since is None else max(to_ts(since), 0.0)
        if by != "day":
            # One range on ``at``: from since (else 0) to the last time a datetime holds.
            where += ["at >= ?", _AT_HIGH]
            params.append(since_ts or 0.0)
        with self._guard():
            # One read transaction: every query of the report sees the same snapshot.
            self._conn.execute("BEGIN")
            try:
                if by == "day":
                    rows = self._report_by_day(where, params, since_ts)
                else:
                    group = {
                        "session": "COALESCE(session_id, '')",
                        "agent": "agent",
                        "model": "COALESCE(model_reported, model_requested, '')",
                    }[by]
                    sql = f"SELECT {group} AS k, {_SUMS} FROM calls WHERE {' AND '.join(where)} GROUP BY k"
                    rows = [_report_row(r) for r in self._conn.execute(sql, params).fetchall()]
                self._find_skipped_at(filters, filter_params)  # a row without a time is in no period, and named
            finally:
                if self._conn.in_transaction:
                    self._conn.execute("COMMIT")
        if by != "day":
            rows.sort(key=lambda r: (-(r.cost_usd or 0.0), -r.last_at.timestamp(), r.key))
        return rows

    def _report_by_day(self, where: list[str], params: list[Any], since: float | None) -> list[ReportRow]:
        """One aggregate per local day, each over one index range on ``at``.

        A single ``GROUP BY date(at, ...)`` sorts every matching row in a temporary
        B-tree (1.4 s for 1,000,000 calls); a range aggregate per day reads rows in
        index order and sorts nothing. Each query carries exactly one lower bound
        on ``at``: with two (since and the day's start) SQLite may seek on the
        looser one and filter the rest of the table.
        """
        bounds = [*where, "at >= ?"]
        first, last = self._conn.execute(
            f"SELECT MIN(at), MAX(at) FROM calls WHERE {' AND '.join([*bounds, _AT_HIGH])}", [*params, since or 0.0]
        ).fetchone()
        if first is None:
            return []
        sql = f"SELECT '', {_SUMS} FROM calls WHERE {' AND '.join([*bounds, 'at < ?'])}"
        rows = []
        for key, lo, hi in _local_days(first, last):
            row = self._conn.execute(sql, [*params, max(lo, first), hi]).fetchone()
            if row[1]:
                rows.append(_report_row((key, *row[1:])))
        return rows

    def skipped(self) -> list[str]:
        """One line for each malformed call row the reads so far skipped and no earlier call of this named.

        A row another program wrote (or a damaged file) is left out of every
        report and budget instead of failing them; the caller prints these
        lines (the usage command) or passes them on as notices (a launch).
        """
        with self._lock:
            new = [(i, what) for i, what in self._skipped.items() if i not in self._named]
            self._named.update(i for i, _ in new)
        return [f"{self.path}: skipped call row {i}: {what}" for i, what in new]

    def _find_skipped(self, where: list[str], params: Sequence[Any], good: str) -> None:
        """Note the rows among the calls ``where`` selects that ``good`` refuses (at most :data:`SKIPPED_NAMED`)."""
        clause = " AND ".join([*where, f"NOT {good}"])
        rows = self._conn.execute(
            f"SELECT id, {', '.join(_CHECKED_COLUMNS)} FROM calls WHERE {clause} ORDER BY id LIMIT ?",
            [*params, SKIPPED_NAMED],
        ).fetchall()
        for row in rows:
            self._skipped.setdefault(row[0], _row_problem(row[1:]))

    def _find_skipped_at(self, where: list[str], params: Sequence[Any]) -> None:
        """Note the calls ``where`` selects whose ``at`` is no time: two seeks at the ends of the ``at`` index."""
        for outside in ("at < 0", f"at > {_LAST_TS}"):
            self._find_skipped([*where, outside], params, "0")

    # ------------------------------------------------------------------ internals

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """Serialize use of the connection and turn SQLite failures into StateError."""
        with self._lock:
            try:
                yield
            except sqlite3.Error as exc:
                raise state_error(self.path, exc) from None

    def _bulk_insert_calls(self, calls: list[CallRecord]) -> None:
        """Insert many calls in one transaction (benchmarks and imports, not live recording)."""
        with self._guard():
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(
                    """INSERT INTO calls (at, agent, provider, session_id, turn, model_requested, model_reported,
                                          input, cache_write, cache_read, output, reasoning, cost_usd, price_key,
                                          cache_write_1h, full_price_usd)
                       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                    (
                        (
                            to_ts(c.at), c.agent, c.provider, c.session_id, c.turn, c.model_requested,
                            c.model_reported, c.usage.input, c.usage.cache_write, c.usage.cache_read,
                            c.usage.output, c.usage.reasoning, c.cost_usd, c.price_key, c.usage.cache_write_1h,
                            c.full_price_usd,
                        )
                        for c in calls
                    ),
                )  # fmt: skip
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise


# --------------------------------------------------------------------------- helpers


def _local_days(first: float, last: float) -> Iterator[tuple[str, float, float]]:
    """(YYYY-MM-DD, start, end) in unix seconds for each local calendar day from ``first`` to ``last``.

    Midnights come from the local zone (naive ``datetime.timestamp`` uses the C
    library's zone rules), so days across a DST change are 23 or 25 hours long.
    """
    day = datetime.fromtimestamp(first).date()
    end = datetime.fromtimestamp(last).date()
    while day <= end:
        nxt = day + timedelta(days=1)
        lo = datetime(day.year, day.month, day.day).timestamp()
        hi = datetime(nxt.year, nxt.month, nxt.day).timestamp()
        yield day.isoformat(), lo, hi
        day = nxt


def _row_problem(values: Sequence[Any]) -> str:
    """What is wrong with a call row, from its :data:`_CHECKED_COLUMNS` values: the first column that is."""
    for column, value in zip(_CHECKED_COLUMNS, values, strict=True):
        shown = repr(value) if not isinstance(value, str) or len(value) <= 40 else repr(value[:40]) + "…"
        if column == "at":
            ok = isinstance(value, int | float) and 0 <= value <= _LAST_TS
            expected = "a time (unix seconds)"
        elif column.endswith("_usd"):
            ok = value is None or (isinstance(value, int | float) and 0 <= value <= 1e12)
            expected = "an amount in USD"
        else:
            ok = isinstance(value, int | float) and 0 <= value <= _MAX_COUNT
            expected = "a token count"
        if not ok:
            return f"calls.{column} is {visible(shown)}, not {expected}"
    return "it does not read as a call"


def shorten(prompt: str, limit: int = TITLE_CHARS) -> str:
    """A prompt as a title: whitespace runs (newlines too) as one space, cut to ``limit`` characters with an ellipsis."""
    text = " ".join(prompt.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _session_row(row: tuple[Any, ...]) -> SessionRow:
    started, last_used, ended = from_ts(row[5]), from_ts(row[6]), from_ts(row[7])
    assert started is not None and last_used is not None
    return SessionRow(
        session_id=row[0],
        agent=row[1],
        provider=row[2],
        model=row[3],
        working_dir=row[4],
        started=started,
        last_used=last_used,
        ended=ended,
        exit_status=row[8],
        turns=row[9],
        provider_state=None if row[10] is None else json.loads(row[10]),
        tmux_session=row[11],
        tmux_window=row[12],
        tmux_layout=row[13],
        title=row[14],
    )


def _call_record(row: tuple[Any, ...]) -> CallRecord:
    at = from_ts(row[1])
    assert at is not None
    return CallRecord(
        id=row[0],
        at=at,
        agent=row[2],
        provider=row[3],
        session_id=row[4],
        turn=row[5],
        model_requested=row[6],
        model_reported=row[7],
        usage=Usage(
            input=row[8], cache_write=row[9], cache_read=row[10], output=row[11], reasoning=row[12], cache_write_1h=row[15]
        ),
        cost_usd=row[13],
        price_key=row[14],
        full_price_usd=row[16],
    )


def _report_row(row: tuple[Any, ...]) -> ReportRow:
    first_at, last_at = from_ts(row[9]), from_ts(row[10])
    assert first_at is not None and last_at is not None
    return ReportRow(
        key=row[0],
        calls=row[1],
        input=row[2] or 0,
        cache_write=row[3] or 0,
        cache_read=row[4] or 0,
        output=row[5] or 0,
        reasoning=row[6] or 0,
        cost_usd=row[7],
        unpriced_calls=row[8] or 0,
        first_at=first_at,
        last_at=last_at,
        cache_write_1h=row[11] or 0,
        saved_usd=row[12],
    )
