"""The SQLite usage store: one row per model call, one row per session.

Several agentlaunch processes (one per running agent) write to the same file at
once, so the store keeps every write short: one statement in autocommit mode,
or a ``BEGIN IMMEDIATE`` transaction that takes the write lock up front (a
deferred transaction that later upgrades to a write can fail with "database is
locked" at once, without waiting for ``busy_timeout``). WAL mode lets reports
read while agents write. Opening the file (recognizing it, WAL, migrations) is
:mod:`agentlaunch.usage.store_file`; the rows as values are :mod:`agentlaunch.usage.records`.

A launch writes through :meth:`Store.write`: a write that finds the store
locked by another process past its busy timeout goes to the journal beside it
(:mod:`agentlaunch.usage.journal`), and the journal is replayed into the
store at the next write, at :meth:`Store.close` and at the next
:meth:`Store.open`, by any process.

Times are stored as UTC unix seconds (REAL): compact, indexable, and converted
to local days only for the by-day report.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, get_args

from agentlaunch.datarecord import datarecord
from agentlaunch.errors import StateError
from agentlaunch.events import Usage, usage_problem
from agentlaunch.processes import process_start, same_process
from agentlaunch.usage import journal
from agentlaunch.usage.journal import Op
from agentlaunch.usage.records import CallRecord, ReportRow, SessionRow, from_ts, now, to_ts
from agentlaunch.usage.store_file import busy_timeout, connect, state_error
from agentlaunch.visible import visible

ReportBy = Literal["session", "agent", "model", "day"]
REPORT_BY: tuple[str, ...] = get_args(ReportBy)


_CALL_COLUMNS = (
    "id, at, agent, provider, session_id, turn, model_requested, model_reported, "
    "input, cache_write, cache_read, output, reasoning, cost_usd, price_key, cache_write_1h, full_price_usd"
)
_SESSION_COLUMNS = (
    "session_id, agent, provider, model, working_dir, started, last_used, ended, exit_status, turns, provider_state, "
    "tmux_session, tmux_window, tmux_layout, title, rowid"
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
REPLAY_WAIT_S = 0.25  # an opportunistic replay (open, close, a store found locked before) waits at most this


@datarecord(frozen=True)
class InFlight:
    """Calls other launches let their CLIs make and did not store yet: how many, and what they are expected to cost."""

    calls: int = 0
    usd: float = 0.0
    tokens: int = 0


class Store:
    """The usage store. Open with :meth:`Store.open`; use as a context manager."""

    def __init__(self, conn: sqlite3.Connection, path: Path, timeout: float | None = None) -> None:
        """Wrap an open, migrated connection (use :meth:`open` instead)."""
        self._conn = conn
        self.path = path
        self.journal = journal.journal_path(path)
        self.timeout = busy_timeout() if timeout is None else timeout
        """How long a write waits for another process's lock before it goes to the journal."""
        self.journaled = 0
        """Writes this store kept in the journal because the store was locked (see :meth:`write`)."""
        # One connection may serve a worker thread and the main thread.
        self._lock = threading.RLock()
        self._skipped: dict[str, str] = {}  # malformed rows and journal lines found so far: key -> the warning
        self._named: set[str] = set()  # those already handed out by skipped()
        self._busy = False  # the last write found the store locked: the next ones wait REPLAY_WAIT_S, not timeout
        self._closed = False

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, path: Path, *, timeout: float | None = None) -> Store:
        """Open (creating if needed) the store at ``path``, bring its schema up to date, and replay its journal.

        ``timeout``: how long a write waits for another process's lock
        (:func:`~agentlaunch.usage.store_file.busy_timeout` when None). Raises
        StateError, without changing the file, when the file is not an SQLite
        database, is corrupted, belongs to something else, or has a schema
        newer than this code; and when the directory is not writable. A journal
        that cannot be replayed now (the store is locked) is left for later.
        """
        path = Path(path)
        wait = busy_timeout() if timeout is None else timeout
        store = cls(connect(path, wait), path, wait)
        if journal.has_lines(store.journal):
            try:
                replayed = store.replay(min(wait, REPLAY_WAIT_S))
            except BaseException:
                store.close()
                raise
            if not replayed:  # a report or budget read now leaves those calls out: say so
                store._skipped["journal-locked"] = (
                    f"{store.journal}: the store is locked by another process; the calls kept in this journal "
                    "are written to it once it is free"
                )
        return store

    def close(self) -> None:
        """Replay the journal if the store is free (a short wait), then close the connection (idempotent)."""
        with self._lock:
            if self._closed:
                return
            try:
                if journal.has_lines(self.journal):
                    with contextlib.suppress(StateError):  # what stays in the journal is replayed by the next open
                        self.replay(min(self.timeout, REPLAY_WAIT_S))
            finally:
                self._closed = True
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
        """Record a new session, or mark a resumed one as in use again (ended cleared).

        A row already there that does not read as a session (another program's) is a StateError naming it.
        """
        op = journal.session_op(session_id, agent=agent, provider=provider, working_dir=str(working_dir), model=model,
                                at=at or now())  # fmt: skip
        with self._guard():
            _apply(self._conn, op)
        row = self.get_session(session_id)
        if row is None:
            raise StateError(
                "; ".join(self.skipped()) or f"{self.path}: session {session_id!r} cannot be read back",
                hint="remove or repair that row of the sessions table",
            )
        return row

    def touch_session(self, session_id: str, turns_delta: int = 1, *, at: datetime | None = None) -> bool:
        """Count ``turns_delta`` more turns and update last_used; False if there is no such session."""
        with self._guard():
            return _apply(self._conn, journal.touch_op(session_id, turns_delta, at or now()))

    def end_session(self, session_id: str, exit_status: int | None, *, at: datetime | None = None) -> bool:
        """Mark the session ended with the child's exit status; False if there is no such session."""
        with self._guard():
            return _apply(self._conn, journal.end_op(session_id, exit_status, at or now()))

    def set_provider_state(self, session_id: str, state: dict[str, Any] | None) -> bool:
        """Replace the session's free-form provider data (JSON); False if there is no such session."""
        with self._guard():
            return _apply(self._conn, journal.state_op(session_id, state))

    def set_place(self, session_id: str, tmux_session: str, tmux_window: str | None, tmux_layout: str | None) -> bool:
        """Remember the tmux session, window and layout the session runs in; False if there is no such session."""
        with self._guard():
            return _apply(self._conn, journal.place_op(session_id, tmux_session, tmux_window, tmux_layout))

    def set_title(self, session_id: str, prompt: str) -> bool:
        """Give the session its title from ``prompt`` (its first: a title once set is kept); False if none was set."""
        with self._guard():
            return _apply(self._conn, journal.title_op(session_id, prompt))

    def latest_of_agent(self, agent: str, *, with_turns: bool = True) -> SessionRow | None:
        """The agent's most recently used session anywhere (only one that had a turn, with ``with_turns``)."""
        sql = f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE agent = ?" + (" AND turns > 0" if with_turns else "")
        with self._guard():
            rows = self._sessions(self._conn.execute(sql + " ORDER BY last_used DESC", (agent,)), 1)
        return rows[0] if rows else None

    def sessions_by_prefix(self, prefix: str, limit: int = 10) -> list[SessionRow]:
        """Sessions whose id starts with ``prefix`` (an exact id first), most recent first, at most ``limit``."""
        with self._guard():
            rows = self._conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE substr(session_id, 1, length(?)) = ? "
                "ORDER BY session_id = ? DESC, last_used DESC",
                (prefix, prefix, prefix),
            )
            return self._sessions(rows, limit)

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
            rows = self._sessions(self._conn.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE session_id = ?",
                                                     (session_id,)), 1)  # fmt: skip
        return rows[0] if rows else None

    def latest_session(self, agent: str, working_dir: str | Path, provider: str | None = None) -> SessionRow | None:
        """The most recently used session of ``agent`` in ``working_dir`` (and ``provider``), or None."""
        sql = f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE agent = ? AND working_dir = ?"
        params: list[Any] = [agent, str(working_dir)]
        if provider is not None:
            sql += " AND provider = ?"
            params.append(provider)
        sql += " ORDER BY last_used DESC"
        with self._guard():
            rows = self._sessions(self._conn.execute(sql, params), 1)
        return rows[0] if rows else None

    def list_sessions(self, agent: str | None = None, *, limit: int | None = None) -> list[SessionRow]:
        """Sessions, most recently used first, optionally of one agent."""
        sql = f"SELECT {_SESSION_COLUMNS} FROM sessions"
        params: list[Any] = []
        if agent is not None:
            sql += " WHERE agent = ?"
            params.append(agent)
        sql += " ORDER BY last_used DESC"
        with self._guard():
            return self._sessions(self._conn.execute(sql, params), limit)

    def _sessions(self, cursor: sqlite3.Cursor, limit: int | None) -> list[SessionRow]:
        """The first ``limit`` session rows of ``cursor`` that read as sessions; the others are skipped and named.

        No ``LIMIT`` in the SQL: a skipped row must not take the place of a good
        one, and the cursor reads no further than the rows kept.
        """
        kept: list[SessionRow] = []
        for row in cursor:
            problem = _session_problem(row)
            if problem is not None:
                key = f"session:{row[-1]}"
                self._skipped.setdefault(key, f"{self.path}: skipped session row {row[-1]}: {problem}")
                continue
            kept.append(_session_row(row))
            if limit is not None and len(kept) >= limit:
                break
        cursor.close()
        return kept

    # ------------------------------------------------------------------ calls

    def record_call(self, call: CallRecord) -> int:
        """Store one call, committed before returning (a crash loses at most the call in flight).

        Returns the new row id. A usage that no call can have (a field that is
        not an int from 0 below 2**53) is a ValueError and nothing is stored: the
        parsers refuse such figures, this is the last guard.
        """
        _check_usage(call.usage)
        with self._guard():
            cur = self._conn.execute(_INSERT_CALL, _call_values(call))
            assert cur.lastrowid is not None
            return cur.lastrowid

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
            # One read transaction: every query of the report sees the same snapshot (a budget check's
            # admission, already in one, keeps its own: the report must not end it).
            own = not self._conn.in_transaction
            if own:
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
                    # A session's agent beside it (one, unless another program wrote two under one id).
                    agents = ", MIN(agent), MAX(agent)" if by == "session" else ""
                    sql = f"SELECT {group} AS k, {_SUMS}{agents} FROM calls WHERE {' AND '.join(where)} GROUP BY k"
                    rows = [_report_row(r) for r in self._conn.execute(sql, params).fetchall()]
                self._find_skipped_at(filters, filter_params)  # a row without a time is in no period, and named
            finally:
                if own and self._conn.in_transaction:
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
        """One line for each malformed row (call or session) or journal line skipped so far and not named before.

        A row another program wrote (or a damaged file) is left out of every
        report and budget instead of failing them; the caller prints these
        lines (the usage command) or passes them on as notices (a launch).
        """
        with self._lock:
            new = [(key, line) for key, line in self._skipped.items() if key not in self._named]
            self._named.update(key for key, _ in new)
        return [line for _, line in new]

    def _find_skipped(self, where: list[str], params: Sequence[Any], good: str) -> None:
        """Note the rows among the calls ``where`` selects that ``good`` refuses (at most :data:`SKIPPED_NAMED`)."""
        clause = " AND ".join([*where, f"NOT {good}"])
        rows = self._conn.execute(
            f"SELECT id, {', '.join(_CHECKED_COLUMNS)} FROM calls WHERE {clause} ORDER BY id LIMIT ?",
            [*params, SKIPPED_NAMED],
        ).fetchall()
        for row in rows:
            self._skipped.setdefault(f"call:{row[0]}", f"{self.path}: skipped call row {row[0]}: {_row_problem(row[1:])}")

    def _find_skipped_at(self, where: list[str], params: Sequence[Any]) -> None:
        """Note the calls ``where`` selects whose ``at`` is no time: two seeks at the ends of the ``at`` index."""
        for outside in ("at < 0", f"at > {_LAST_TS}"):
            self._find_skipped([*where, outside], params, "0")

    # ------------------------------------------------------------------ the journal

    def write(self, op: Op) -> bool:
        """Apply ``op`` (a launch's write: a session, a call, ...) now, or keep it in the journal; True when applied.

        The journal is replayed first, so the store gets the writes in the order
        they were made. When another process holds the store's lock past the busy
        timeout (after one such wait, :data:`REPLAY_WAIT_S`, so a long lock stalls a
        launch once, not at every call), the op is appended to the journal,
        fsynced, and False is returned: nothing is lost, and the next write, the
        close or the next open writes it. Raises StateError when the store fails
        otherwise, or when the journal cannot be written either.
        """
        if op.kind == "call":
            _check_usage(op.call().usage)
        with self._lock:
            wait = REPLAY_WAIT_S if self._busy else self.timeout
            if journal.has_lines(self.journal) and not self.replay(wait):
                self._keep(op)
                return False
            try:
                with self._waiting(wait):
                    _apply(self._conn, op)
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise state_error(self.path, exc) from None
                self._keep(op)
                return False
            except sqlite3.Error as exc:
                raise state_error(self.path, exc) from None
            self._busy = False
            return True

    def replay(self, wait: float | None = None) -> bool:
        """Write the journal's ops into the store and clear it; False when the store stayed locked for ``wait`` seconds.

        The ops' uids are committed with them (table ``journal_applied``), and the
        journal is cleared only after that commit: a replay that a kill -9 cut
        between the two finds the uids at the next replay and applies nothing
        twice. A journal line that is not an op (a half-written last line, a
        damaged one) is left out, named once by :meth:`skipped`.
        """
        with self._lock:
            try:
                found, upto = journal.read(self.journal)
            except OSError as exc:
                self._skipped.setdefault("journal", f"{self.journal}: the journal cannot be read ({exc}); left as is")
                return True  # the store itself is fine: writes go on
            for number in found.bad:
                key = f"journal:{upto.digest.hex() if upto else ''}:{number}"
                self._skipped.setdefault(key, f"{self.journal}: skipped line {number}: not a write agentlaunch kept")
            if upto is None:
                return True
            if found.ops:
                try:
                    self._apply_once(found.ops, self.timeout if wait is None else wait)
                except sqlite3.OperationalError as exc:
                    if not _is_busy(exc):
                        raise state_error(self.path, exc) from None
                    self._busy = True
                    return False
                except sqlite3.Error as exc:
                    raise state_error(self.path, exc) from None
            self._busy = False
            try:
                journal.clear(self.journal, upto)
            except OSError as exc:  # the rows are committed; the next replay finds their uids and adds nothing
                self._skipped.setdefault("journal-clear", f"{self.journal}: cannot clear the journal ({exc})")
            return True

    # ------------------------------------------------------------------ calls in flight (budgets)

    @contextmanager
    def admission(self) -> Iterator[bool]:
        """One ``BEGIN IMMEDIATE`` transaction around a budget check and its :meth:`reserve` (True), committed at the end.

        Checks serialize on the store's write lock, and a call is stored under
        the same lock, so a check either sees a call stored or, when it comes
        first, leaves its own reservation where the check after it sees it: no
        call is let go on a reading already out of date. A store locked by
        another process past a short wait gives False and no transaction: the
        check reads as before, without reserving (never a failure).
        """
        with self._lock:
            try:
                with self._waiting(min(self.timeout, REPLAY_WAIT_S) if self._busy else self.timeout):
                    self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise state_error(self.path, exc) from None
                self._busy = True
                yield False
                return
            except sqlite3.Error as exc:
                raise state_error(self.path, exc) from None
            try:
                yield True
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    def in_flight(self, holder: str, agent: str | None = None) -> InFlight:
        """The live reservations of launches other than ``holder`` (of ``agent`` only, when given).

        A row whose process is gone (killed, say) counts for nothing and is deleted (inside :meth:`admission`).
        """
        with self._guard():
            rows = self._conn.execute("SELECT holder, pid, pid_start, agent, usd, tokens FROM inflight").fetchall()
            dead = [r[0] for r in rows if not same_process(r[1], r[2])]
            if dead and self._conn.in_transaction:
                self._conn.executemany("DELETE FROM inflight WHERE holder = ?", [(h,) for h in dead])
        live = [r for r in rows if r[0] != holder and r[0] not in dead and (agent is None or r[3] == agent)]
        return InFlight(len(live), sum(float(r[4] or 0) for r in live), sum(int(r[5] or 0) for r in live))

    def reserve(self, holder: str, agent: str, usd: float, tokens: int) -> None:
        """``holder`` (one launch) has one call in flight, expected to cost ``usd`` and ``tokens`` (replaces its last)."""
        pid = os.getpid()
        with self._guard():
            self._conn.execute(
                "INSERT OR REPLACE INTO inflight (holder, pid, pid_start, agent, at, usd, tokens) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (holder, pid, process_start(pid), agent, to_ts(now()), usd, tokens),
            )

    def release(self, holder: str) -> None:
        """``holder``'s call is stored (or will not be made): its reservation goes. A locked store keeps it (see below)."""
        # A reservation left behind only makes the other checks stricter until this launch's next check or end
        # replaces or deletes it (or its process is gone): better than stalling the launch on the lock.
        with self._lock, self._waiting(min(self.timeout, REPLAY_WAIT_S)):
            try:
                self._conn.execute("DELETE FROM inflight WHERE holder = ?", (holder,))
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise state_error(self.path, exc) from None
            except sqlite3.Error as exc:
                raise state_error(self.path, exc) from None

    def pending_calls(self) -> list[CallRecord]:
        """The calls in the journal that are not in the store yet (a budget counts them: they were billed)."""
        if not journal.has_lines(self.journal):
            return []
        with self._lock:
            try:
                found, _ = journal.read(self.journal)
            except OSError:
                return []
            calls = [op for op in found.ops if op.kind == "call"]
            if not calls:
                return []
            with self._guard():
                applied = {
                    r[0]
                    for r in self._conn.execute(
                        "SELECT uid FROM journal_applied WHERE uid IN (SELECT value FROM json_each(?))",
                        (json.dumps([op.uid for op in calls]),),
                    )
                }
        return [op.call() for op in calls if op.uid not in applied]

    def _apply_once(self, ops: list[Op], wait: float) -> None:
        """Apply each op whose uid is not in ``journal_applied`` yet, and note its uid, in one transaction."""
        with self._waiting(wait):
            self._conn.execute("BEGIN IMMEDIATE")
        try:
            stamp = to_ts(now())
            for op in ops:
                cur = self._conn.execute(
                    "INSERT INTO journal_applied (uid, at) VALUES (?, ?) ON CONFLICT (uid) DO NOTHING", (op.uid, stamp)
                )
                if cur.rowcount:
                    try:
                        _apply(self._conn, op)
                    except (sqlite3.IntegrityError, sqlite3.DataError, ValueError) as exc:
                        # Never applicable (kept by another version?): named, and not retried for ever.
                        self._skipped.setdefault(f"op:{op.uid}", f"{self.journal}: skipped a {op.kind} write: {exc}")
            self._conn.execute("COMMIT")
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

    def _keep(self, op: Op) -> None:
        """Append ``op`` to the journal (the store is locked); StateError when that fails too."""
        self._busy = True
        try:
            journal.append(self.journal, op)
        except OSError as exc:
            raise StateError(
                f"{self.path}: the usage store stayed locked by another process, and the journal beside it "
                f"cannot be written either ({exc})",
                hint="free the disk or the lock: the call in flight was not stored",
            ) from None
        self.journaled += 1

    @contextmanager
    def _waiting(self, seconds: float) -> Iterator[None]:
        """The connection's busy timeout set to ``seconds`` for the block (it is :attr:`timeout` otherwise)."""
        if seconds == self.timeout:
            yield
            return
        self._conn.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")
        try:
            yield
        finally:
            self._conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")

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
                self._conn.executemany(_INSERT_CALL, (_call_values(c) for c in calls))
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise


# --------------------------------------------------------------------------- the writes

_INSERT_CALL = """INSERT INTO calls (at, agent, provider, session_id, turn, model_requested, model_reported,
                                     input, cache_write, cache_read, output, reasoning, cost_usd, price_key,
                                     cache_write_1h, full_price_usd)
                  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"""


def _call_values(c: CallRecord) -> tuple[Any, ...]:
    u = c.usage
    return (
        to_ts(c.at), c.agent, c.provider, c.session_id, c.turn, c.model_requested, c.model_reported,
        u.input, u.cache_write, u.cache_read, u.output, u.reasoning, c.cost_usd, c.price_key, u.cache_write_1h,
        c.full_price_usd,
    )  # fmt: skip


def _check_usage(usage: Usage) -> None:
    """A usage that no call can have (a field that is not an int from 0 below 2**53) is never stored."""
    problem = usage_problem(usage)
    if problem is not None:
        raise ValueError(f"refusing to store an impossible usage: {problem}")


def _apply(conn: sqlite3.Connection, op: Op) -> bool:
    """Run ``op``'s one statement on ``conn``: the same SQL whether it is written now or replayed from the journal.

    True when it changed a row (False: an update of a session the store does not have).
    """
    a = op.args
    if op.kind == "call":
        cur = conn.execute(_INSERT_CALL, _call_values(op.call()))
    elif op.kind == "session":
        cur = conn.execute(
            """INSERT INTO sessions (session_id, agent, provider, model, working_dir, started, last_used, turns)
               VALUES (?, ?, ?, ?, ?, ?, ?, 0)
               ON CONFLICT (session_id) DO UPDATE SET
                   last_used = excluded.last_used,
                   model = COALESCE(excluded.model, sessions.model),
                   ended = NULL, exit_status = NULL""",
            (a["session_id"], a["agent"], a["provider"], a["model"], a["working_dir"], a["at"], a["at"]),
        )
    elif op.kind == "touch":
        cur = conn.execute(
            "UPDATE sessions SET last_used = ?, turns = turns + ? WHERE session_id = ?", (a["at"], a["turns"], a["session_id"])
        )
    elif op.kind == "end":
        cur = conn.execute(
            "UPDATE sessions SET ended = ?, last_used = MAX(last_used, ?), exit_status = ? WHERE session_id = ?",
            (a["at"], a["at"], a["exit_status"], a["session_id"]),
        )
    elif op.kind == "state":
        payload = None if a["state"] is None else json.dumps(a["state"], sort_keys=True)
        cur = conn.execute("UPDATE sessions SET provider_state = ? WHERE session_id = ?", (payload, a["session_id"]))
    elif op.kind == "place":
        cur = conn.execute(
            "UPDATE sessions SET tmux_session = ?, tmux_window = ?, tmux_layout = ? WHERE session_id = ?",
            (a["tmux_session"], a["tmux_window"], a["tmux_layout"], a["session_id"]),
        )
    elif op.kind == "title":
        cur = conn.execute(
            "UPDATE sessions SET title = ? WHERE session_id = ? AND title IS NULL", (shorten(a["prompt"]), a["session_id"])
        )
    elif op.kind == "event":
        cur = conn.execute(
            "INSERT INTO session_events (session_id, at, kind, detail) VALUES (?, ?, ?, ?)",
            (a["session_id"], a["at"], a["kind"], a["detail"]),
        )
    else:  # pragma: no cover - read_op admits only the kinds above
        raise ValueError(f"unknown journal op {op.kind!r}")
    return cur.rowcount > 0


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused because another connection holds the lock (SQLITE_BUSY or SQLITE_LOCKED)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    text = str(exc).lower()
    return "locked" in text or "busy" in text


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


_SESSION_TEXT = {0: "session_id", 1: "agent", 2: "provider", 4: "working_dir"}
_SESSION_OPT_TEXT = {3: "model", 11: "tmux_session", 12: "tmux_window", 13: "tmux_layout", 14: "title"}
_SESSION_TIMES = {5: "started", 6: "last_used", 7: "ended"}


def _session_problem(row: Sequence[Any]) -> str | None:
    """What makes a sessions row (its :data:`_SESSION_COLUMNS` values) unreadable as a session, or None."""

    def said(column: str, value: Any, expected: str) -> str:
        shown = repr(value) if not isinstance(value, str) or len(value) <= 40 else repr(value[:40]) + "…"
        return f"sessions.{column} is {visible(shown)}, not {expected}"

    for i, column in _SESSION_TEXT.items():
        if not isinstance(row[i], str):
            return said(column, row[i], "text")
    for i, column in _SESSION_OPT_TEXT.items():
        if row[i] is not None and not isinstance(row[i], str):
            return said(column, row[i], "text")
    for i, column in _SESSION_TIMES.items():
        value = row[i]
        if value is None and column == "ended":
            continue
        if not (isinstance(value, int | float) and math.isfinite(value) and 0 <= value <= _LAST_TS):
            return said(column, value, "a time (unix seconds)")
    if row[8] is not None and not isinstance(row[8], int):
        return said("exit_status", row[8], "an exit status")
    if not (isinstance(row[9], int) and 0 <= row[9] <= _MAX_COUNT):
        return said("turns", row[9], "a count")
    if row[10] is not None:
        try:
            state = json.loads(row[10]) if isinstance(row[10], str) else None
        except (ValueError, RecursionError):
            state = None
        if not isinstance(state, dict):
            return said("provider_state", row[10], "a JSON object")
    return None


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
        agent=_agents(row[13], row[14]) if len(row) > 14 else None,
    )


def _agents(first: object, last: object) -> str:
    """The agent of a session's calls: one name, or the first and last when two share a session id."""
    return str(first) if first == last else f"{first}, {last}"
