"""The SQLite usage store: one row per model call, one row per session.

Several agentlaunch processes (one per running agent) write to the same file at
once, so the store keeps every write short: one statement in autocommit mode,
or a ``BEGIN IMMEDIATE`` transaction that takes the write lock up front (a
deferred transaction that later upgrades to a write can fail with "database is
locked" at once, without waiting for ``busy_timeout``). WAL mode lets reports
read while agents write.

Schema changes are an ordered list of migration functions; ``PRAGMA
user_version`` records how many have run. Nothing is written to a file until it
has been read and recognized: a file that is not SQLite, not ours, corrupted, or
from a newer agentlaunch is refused with a :class:`StateError` and left as is.

Times are stored as UTC unix seconds (REAL): compact, indexable, and converted
to local days only for the by-day report.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, get_args

from agentlaunch.errors import StateError
from agentlaunch.events import Usage

ReportBy = Literal["session", "agent", "model", "day"]
REPORT_BY: tuple[str, ...] = get_args(ReportBy)

_SQLITE_MAGIC = b"SQLite format 3\x00"
_BUSY_TIMEOUT_S = 10.0


# --------------------------------------------------------------------------- records


def _now() -> datetime:
    return datetime.now(UTC)


def _ts(value: datetime) -> float:
    """Unix seconds of an aware datetime; naive ones are refused (their zone is a guess)."""
    if value.tzinfo is None:
        raise ValueError(f"naive datetime {value!r}: give a timezone (UTC)")
    return value.timestamp()


def _dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One model call as stored: who made it, its usage, and its price if known.

    ``cost_usd`` None means unpriced (never $0); ``price_key`` says which price
    source priced it (see :class:`agentlaunch.pricing.Price`).
    """

    agent: str
    provider: str
    usage: Usage
    session_id: str | None = None
    turn: int | None = None
    model_requested: str | None = None
    model_reported: str | None = None
    cost_usd: float | None = None
    price_key: str | None = None
    at: datetime = field(default_factory=_now)
    id: int | None = None

    @property
    def model(self) -> str | None:
        """The model the provider reported, else the one requested."""
        return self.model_reported or self.model_requested


@dataclass(frozen=True, slots=True)
class SessionRow:
    """A provider session as agentlaunch knows it (for resume and reports)."""

    session_id: str
    agent: str
    provider: str
    model: str | None
    working_dir: str
    started: datetime
    last_used: datetime
    ended: datetime | None
    exit_status: int | None
    turns: int
    provider_state: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class ReportRow:
    """Usage summed over one group (a session, agent, model or local day).

    ``cost_usd`` is the sum over the group's *priced* calls, None when none was
    priced; ``unpriced_calls`` says how many calls that sum leaves out.
    """

    key: str
    calls: int
    input: int
    cache_write: int
    cache_read: int
    output: int
    reasoning: int
    cost_usd: float | None
    unpriced_calls: int
    first_at: datetime
    last_at: datetime

    @property
    def total_input(self) -> int:
        """All input tokens: uncached, cache writes and cache reads."""
        return self.input + self.cache_write + self.cache_read

    @property
    def cache_hit_ratio(self) -> float | None:
        """cache_read / total input; None when there was no input."""
        total = self.total_input
        return self.cache_read / total if total else None

    @property
    def full_price_share(self) -> float | None:
        """Uncached input / total input; None when there was no input."""
        total = self.total_input
        return self.input / total if total else None


# --------------------------------------------------------------------------- schema


def _migration_1(conn: sqlite3.Connection) -> None:
    """Sessions and calls, with the indexes the reports and resume need."""
    conn.execute(
        """CREATE TABLE sessions (
            session_id     TEXT PRIMARY KEY,
            agent          TEXT NOT NULL,
            provider       TEXT NOT NULL,
            model          TEXT,
            working_dir    TEXT NOT NULL,
            started        REAL NOT NULL,
            last_used      REAL NOT NULL,
            ended          REAL,
            exit_status    INTEGER,
            turns          INTEGER NOT NULL DEFAULT 0,
            provider_state TEXT
        )"""
    )
    conn.execute("CREATE INDEX sessions_latest ON sessions (agent, working_dir, last_used)")
    conn.execute("CREATE INDEX sessions_last_used ON sessions (last_used)")
    conn.execute(
        """CREATE TABLE calls (
            id              INTEGER PRIMARY KEY,
            at              REAL NOT NULL,
            agent           TEXT NOT NULL,
            provider        TEXT NOT NULL,
            session_id      TEXT,
            turn            INTEGER,
            model_requested TEXT,
            model_reported  TEXT,
            input           INTEGER NOT NULL DEFAULT 0,
            cache_write     INTEGER NOT NULL DEFAULT 0,
            cache_read      INTEGER NOT NULL DEFAULT 0,
            output          INTEGER NOT NULL DEFAULT 0,
            reasoning       INTEGER NOT NULL DEFAULT 0,
            cost_usd        REAL,
            price_key       TEXT
        )"""
    )
    # Covers the by-day report: its per-day range aggregates never touch the table.
    conn.execute("CREATE INDEX calls_at ON calls (at, input, cache_write, cache_read, output, reasoning, cost_usd)")
    conn.execute("CREATE INDEX calls_session_at ON calls (session_id, at)")
    conn.execute("CREATE INDEX calls_agent_at ON calls (agent, at)")


# Append only: a function's position (1-based) is the schema version it produces.
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_migration_1]
SCHEMA_VERSION = len(MIGRATIONS)
_OUR_TABLES = {"sessions", "calls"}


# --------------------------------------------------------------------------- store

_CALL_COLUMNS = (
    "id, at, agent, provider, session_id, turn, model_requested, model_reported, "
    "input, cache_write, cache_read, output, reasoning, cost_usd, price_key"
)
_SESSION_COLUMNS = (
    "session_id, agent, provider, model, working_dir, started, last_used, ended, exit_status, turns, provider_state"
)
_SUMS = (
    "COUNT(*), SUM(input), SUM(cache_write), SUM(cache_read), SUM(output), SUM(reasoning), "
    "SUM(cost_usd), SUM(cost_usd IS NULL), MIN(at), MAX(at)"
)


class Store:
    """The usage store. Open with :meth:`Store.open`; use as a context manager."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        """Wrap an open, migrated connection (use :meth:`open` instead)."""
        self._conn = conn
        self.path = path
        # One connection may serve a worker thread and the main thread.
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, path: Path, *, timeout: float = _BUSY_TIMEOUT_S) -> Store:
        """Open (creating if needed) the store at ``path`` and bring its schema up to date.

        Raises StateError, without changing the file, when the file is not an
        SQLite database, is corrupted, belongs to something else, or has a
        schema newer than this code; and when the directory is not writable.
        """
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StateError(
                f"{path.parent}: cannot create the state directory: {exc.strerror or exc}",
                hint="set AGENTLAUNCH_STATE_DIR to a writable directory",
            ) from None
        _check_header(path)
        _check_writable(path)
        try:
            conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise _state_error(path, exc) from None
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            _prepare(conn, path, timeout)
        except sqlite3.Error as exc:
            conn.close()
            raise _state_error(path, exc) from None
        except BaseException:
            conn.close()
            raise
        return cls(conn, path)

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
        when = _ts(at or _now())
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
                (_ts(at or _now()), turns_delta, session_id),
            )
            return cur.rowcount > 0

    def end_session(self, session_id: str, exit_status: int | None, *, at: datetime | None = None) -> bool:
        """Mark the session ended with the child's exit status; False if there is no such session."""
        when = _ts(at or _now())
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

        Returns the new row id.
        """
        u = call.usage
        with self._guard():
            cur = self._conn.execute(
                """INSERT INTO calls (at, agent, provider, session_id, turn, model_requested, model_reported,
                                      input, cache_write, cache_read, output, reasoning, cost_usd, price_key)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    _ts(call.at), call.agent, call.provider, call.session_id, call.turn,
                    call.model_requested, call.model_reported,
                    u.input, u.cache_write, u.cache_read, u.output, u.reasoning,
                    call.cost_usd, call.price_key,
                ),
            )  # fmt: skip
            assert cur.lastrowid is not None
            return cur.lastrowid

    def calls_for_session(self, session_id: str) -> list[CallRecord]:
        """Every call of a session, oldest first."""
        with self._guard():
            rows = self._conn.execute(
                f"SELECT {_CALL_COLUMNS} FROM calls WHERE session_id = ? ORDER BY at, id", (session_id,)
            ).fetchall()
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
        since_ts = None if since is None else _ts(since)
        if since_ts is not None and by != "day":
            where.append("at >= ?")
            params.append(since_ts)
        clause = (" WHERE " + " AND ".join(where)) if where else ""
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
                    sql = f"SELECT {group} AS k, {_SUMS} FROM calls{clause} GROUP BY k"
                    rows = [_report_row(r) for r in self._conn.execute(sql, params).fetchall()]
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
            f"SELECT MIN(at), MAX(at) FROM calls WHERE {' AND '.join(bounds)}", [*params, since or float("-inf")]
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

    # ------------------------------------------------------------------ internals

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """Serialize use of the connection and turn SQLite failures into StateError."""
        with self._lock:
            try:
                yield
            except sqlite3.Error as exc:
                raise _state_error(self.path, exc) from None

    def _bulk_insert_calls(self, calls: list[CallRecord]) -> None:
        """Insert many calls in one transaction (benchmarks and imports, not live recording)."""
        with self._guard():
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(
                    """INSERT INTO calls (at, agent, provider, session_id, turn, model_requested, model_reported,
                                          input, cache_write, cache_read, output, reasoning, cost_usd, price_key)
                       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                    (
                        (
                            _ts(c.at), c.agent, c.provider, c.session_id, c.turn, c.model_requested,
                            c.model_reported, c.usage.input, c.usage.cache_write, c.usage.cache_read,
                            c.usage.output, c.usage.reasoning, c.cost_usd, c.price_key,
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


def _check_header(path: Path) -> None:
    """Refuse a file that is not SQLite before SQLite gets a chance to touch it."""
    try:
        with path.open("rb") as fh:
            head = fh.read(len(_SQLITE_MAGIC))
    except FileNotFoundError:
        return
    except IsADirectoryError:
        raise StateError(f"{path}: is a directory, not a usage store") from None
    except OSError as exc:
        raise StateError(f"{path}: cannot read the usage store: {exc.strerror or exc}") from None
    # SQLite treats an empty file as a new database.
    if head and head != _SQLITE_MAGIC:
        raise StateError(
            f"{path}: not an SQLite database (corrupted or some other file); it was left unchanged",
            hint="move it aside to start a new usage store",
        )


def _check_writable(path: Path) -> None:
    """Refuse a store we could read but never write (WAL needs side files in the directory, too).

    Probes by really creating a file, since permission bits say nothing to root
    and nothing about read-only mounts or immutable directories.
    """
    try:
        with tempfile.TemporaryFile(dir=path.parent, prefix=".agentlaunch-probe-"):
            pass
    except OSError as exc:
        raise StateError(
            f"{path.parent}: the state directory is not writable ({exc.strerror or exc})",
            hint="set AGENTLAUNCH_STATE_DIR to a writable directory",
        ) from None
    if path.exists():
        try:
            # Opening for writing changes neither the bytes nor the mtime.
            os.close(os.open(path, os.O_RDWR))
        except OSError as exc:
            raise StateError(
                f"{path}: the usage store is not writable ({exc.strerror or exc})",
                hint="set AGENTLAUNCH_STATE_DIR to a writable directory",
            ) from None


def _prepare(conn: sqlite3.Connection, path: Path, timeout: float) -> None:
    """Recognize the file (reads only), then switch to WAL and migrate (writes)."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    _refuse_newer(version, path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    foreign = {t for t in tables if not t.startswith("sqlite_")} - _OUR_TABLES
    if version == 0 and foreign:
        raise StateError(
            f"{path}: an SQLite database that is not an agentlaunch usage store "
            f"(tables: {', '.join(sorted(foreign))}); it was left unchanged"
        )
    if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        mode = _switch_to_wal(conn, timeout)
        if mode.lower() != "wal":
            raise StateError(f"{path}: cannot switch the usage store to WAL mode (got {mode})")
    # NORMAL is durable across process crashes in WAL mode; only power loss can drop the last commits.
    conn.execute("PRAGMA synchronous = NORMAL")
    if version == SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Re-read under the write lock: another process may have migrated meanwhile.
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        _refuse_newer(version, path)
        for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
            migration(conn)
            conn.execute(f"PRAGMA user_version = {number}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _switch_to_wal(conn: sqlite3.Connection, timeout: float) -> str:
    """``PRAGMA journal_mode = WAL``, retried: when several processes create the store at
    once it can fail with "database is locked" at once, without waiting for busy_timeout."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc).lower() or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _refuse_newer(version: int, path: Path) -> None:
    if version > SCHEMA_VERSION:
        raise StateError(
            f"{path}: usage store schema version {version} is newer than this agentlaunch "
            f"understands ({SCHEMA_VERSION}); it was left unchanged",
            hint="upgrade agentlaunch, or set AGENTLAUNCH_STATE_DIR to use another store",
        )


def _state_error(path: Path, exc: sqlite3.Error) -> StateError:
    text = str(exc)
    lowered = text.lower()
    if "readonly" in lowered or "read-only" in lowered:
        return StateError(
            f"{path}: the usage store is read-only ({text})", hint="set AGENTLAUNCH_STATE_DIR to a writable directory"
        )
    if "not a database" in lowered or "malformed" in lowered:
        return StateError(
            f"{path}: the usage store is corrupted ({text}); it was left unchanged",
            hint="move it aside to start a new usage store",
        )
    if "unable to open" in lowered:
        return StateError(f"{path}: cannot open the usage store ({text})", hint="check that the state directory is writable")
    if "locked" in lowered or "busy" in lowered:
        return StateError(f"{path}: the usage store stayed locked by another process ({text})")
    return StateError(f"{path}: usage store error: {text}")


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


def _session_row(row: tuple[Any, ...]) -> SessionRow:
    started, last_used, ended = _dt(row[5]), _dt(row[6]), _dt(row[7])
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
    )


def _call_record(row: tuple[Any, ...]) -> CallRecord:
    at = _dt(row[1])
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
        usage=Usage(input=row[8], cache_write=row[9], cache_read=row[10], output=row[11], reasoning=row[12]),
        cost_usd=row[13],
        price_key=row[14],
    )


def _report_row(row: tuple[Any, ...]) -> ReportRow:
    first_at, last_at = _dt(row[9]), _dt(row[10])
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
    )
