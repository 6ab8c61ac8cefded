"""Opening the usage store's SQLite file: recognized before anything is written, WAL, migrations.

Nothing is written to a file until it has been read and recognized: a file
that is not SQLite, not ours, corrupted, or from a newer agentlaunch is refused
with a :class:`StateError` and left as is. Schema changes are an ordered list
of migration functions; ``PRAGMA user_version`` records how many have run.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path

from agentlaunch.errors import StateError
from agentlaunch.fsutil import PRIVATE_FILE_MODE, private_dir, tighten

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_S = 10.0
BUSY_TIMEOUT_ENV = "AGENTLAUNCH_STORE_BUSY_TIMEOUT"

_open_here: dict[str, int] = {}
_open_here_lock = threading.Lock()
"""How many connections this process has open on each store (by real path), counting one being opened.

The checks before a connection open and close the store's file itself, and closing any descriptor of a file
drops every POSIX lock this process holds on it, SQLite's included (SQLite's "How To Corrupt An SQLite
Database File", 2.2). With a connection of this process open, another process closing its own then took
itself for the last one and deleted the ``-wal`` and ``-shm`` files still in use here: what was written
here afterwards was lost, or failed with "disk I/O error". So a store is checked only while this process
has no connection open on it."""


class _Connection(sqlite3.Connection):
    """A connection that says when it closes (or is collected unclosed), for :data:`_open_here`."""

    counted: weakref.finalize[[str], _Connection] | None = None  # set by connect(): uncounts the connection once

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.counted is not None:
                self.counted()


def busy_timeout(environ: dict[str, str] | None = None) -> float:
    """How long a write waits for another process's lock on the store before the call goes to the journal.

    ``$AGENTLAUNCH_STORE_BUSY_TIMEOUT`` (seconds, 0 to 3600), else :data:`BUSY_TIMEOUT_S`; a value that
    is not such a number is ignored (a store that waits 10 s loses nothing either way).
    """
    value = (os.environ if environ is None else environ).get(BUSY_TIMEOUT_ENV, "")
    try:
        seconds = float(value)
    except ValueError:
        return BUSY_TIMEOUT_S
    return seconds if 0 <= seconds <= 3600 else BUSY_TIMEOUT_S


def connect(path: Path, timeout: float = BUSY_TIMEOUT_S) -> sqlite3.Connection:
    """An autocommit connection to the store at ``path`` (created if needed), its schema up to date.

    Raises StateError, without changing the file, when the file is not an
    SQLite database, is corrupted, belongs to something else, or has a
    schema newer than this code; and when the directory is not writable.
    """
    try:
        private_dir(path.parent)
    except OSError as exc:
        raise StateError(
            f"{path.parent}: cannot create the state directory: {exc.strerror or exc}",
            hint="set AGENTLAUNCH_STATE_DIR to a writable directory",
        ) from None
    key = os.path.realpath(path)
    with _open_here_lock:  # held through the checks: no connection of this process opens meanwhile
        if not _open_here.get(key):
            _check_header(path)
            _check_writable(path)
            _private_files(path)
        _open_here[key] = _open_here.get(key, 0) + 1
    try:
        conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False, factory=_Connection)
    except BaseException as exc:
        _closed_here(key)
        if isinstance(exc, sqlite3.Error):
            raise state_error(path, exc) from None
        raise
    conn.counted = weakref.finalize(conn, _closed_here, key)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        _prepare(conn, path, timeout)
    except sqlite3.Error as exc:
        conn.close()
        raise state_error(path, exc) from None
    except BaseException:
        conn.close()
        raise
    return conn


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


def _migration_2(conn: sqlite3.Connection) -> None:
    """Where a session ran in tmux (to bring it back after a reboot), and its title (the first prompt, shortened)."""
    for column in ("tmux_session", "tmux_window", "tmux_layout", "title"):
        conn.execute(f"ALTER TABLE sessions ADD COLUMN {column} TEXT")


def _migration_3(conn: sqlite3.Connection) -> None:
    """Cache economics. ``cache_write_1h``: the 1-hour part of ``cache_write`` (0 in older rows, which were
    all priced as 5-minute writes). ``full_price_usd``: the call at the full input price (NULL in older
    rows: what caching saved is summed over the calls that have it). ``session_events``: what explains a
    cache miss later (the prefix changed at a launch, the CLI compacted)."""
    conn.execute("ALTER TABLE calls ADD COLUMN cache_write_1h INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE calls ADD COLUMN full_price_usd REAL")
    conn.execute("DROP INDEX calls_at")
    conn.execute(
        "CREATE INDEX calls_at ON calls (at, input, cache_write, cache_read, output, reasoning, cost_usd, cache_write_1h,"
        " full_price_usd)"
    )
    conn.execute(
        """CREATE TABLE session_events (
            id         INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            at         REAL NOT NULL,
            kind       TEXT NOT NULL,
            detail     TEXT
        )"""
    )
    conn.execute("CREATE INDEX session_events_session_at ON session_events (session_id, at)")


def _migration_4(conn: sqlite3.Connection) -> None:
    """Telemetry export (issue 17): which calls the OTLP receiver accepted, and who is sending which.

    ``exported_metrics`` / ``exported_logs`` are set (unix seconds) only once the
    receiver accepted that signal for the call; ``export_claim`` and
    ``export_claim_until`` let one of several processes send a call at a time
    (a lease, so a process that died frees its calls). ``sessions.agent_id`` is
    the definition's id, for the exported attributes. ``store_meta`` keeps
    this store's random id, which prefixes each exported call's id.
    """
    conn.execute("ALTER TABLE calls ADD COLUMN exported_metrics REAL")
    conn.execute("ALTER TABLE calls ADD COLUMN exported_logs REAL")
    conn.execute("ALTER TABLE calls ADD COLUMN export_claim TEXT")
    conn.execute("ALTER TABLE calls ADD COLUMN export_claim_until REAL")
    conn.execute("ALTER TABLE sessions ADD COLUMN agent_id TEXT")
    conn.execute("CREATE INDEX calls_unexported ON calls (id) WHERE exported_metrics IS NULL OR exported_logs IS NULL")
    conn.execute("CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("INSERT INTO store_meta (key, value) VALUES ('store_id', lower(hex(randomblob(16))))")


def _migration_5(conn: sqlite3.Connection) -> None:
    """The journal's writes already applied (issue 23), by their uid, so a journal replayed twice counts nothing twice.

    Only writes that went through the journal (the store was locked) have a row
    here; a uid is committed in the same transaction as the write it names
    (:mod:`agentlaunch.usage.journal`). The calls table is unchanged, so live
    recording pays nothing for it.
    """
    conn.execute("CREATE TABLE journal_applied (uid TEXT PRIMARY KEY, at REAL NOT NULL)")


def _migration_6(conn: sqlite3.Connection) -> None:
    """The calls in flight (issue 23): one row per call a launch under a budget has let its CLI make, not stored yet.

    Written in the same ``BEGIN IMMEDIATE`` transaction as the budget check that
    let the call go, deleted once the call is stored (or the turn ends), so the
    other agents' checks count it. ``pid`` and ``pid_start`` say whose it is: a
    row whose process is gone (kill -9) counts for nothing and is deleted by
    the next check. ``usd`` and ``tokens`` are what the call is expected to cost
    (the launch's last call; 0 for its first).
    """
    conn.execute(
        "CREATE TABLE inflight (holder TEXT PRIMARY KEY, pid INTEGER NOT NULL, pid_start TEXT, agent TEXT NOT NULL, "
        "at REAL NOT NULL, usd REAL NOT NULL, tokens INTEGER NOT NULL)"
    )


# Append only: a function's position (1-based) is the schema version it produces.
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    _migration_1,
    _migration_2,
    _migration_3,
    _migration_4,
    _migration_5,
    _migration_6,
]
SCHEMA_VERSION = len(MIGRATIONS)
_OUR_TABLES = {"sessions", "calls", "session_events", "store_meta", "journal_applied", "inflight"}


# --------------------------------------------------------------------------- checks


def _closed_here(key: str) -> None:
    with _open_here_lock:
        left = _open_here.get(key, 0) - 1
        if left > 0:
            _open_here[key] = left
        else:
            _open_here.pop(key, None)


def _check_header(path: Path) -> None:
    """Refuse a file that is not SQLite before SQLite gets a chance to touch it."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StateError(f"{path}: cannot read the usage store: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        # A FIFO or device here would block the open below (or SQLite) forever, or feed it endless bytes.
        kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO, socket or device"
        raise StateError(f"{path}: is {kind}, not a usage store; it was left unchanged")
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as fh:  # never waits on a FIFO swapped in
            head = fh.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        return
    except IsADirectoryError:
        raise StateError(f"{path}: is a directory, not a usage store") from None
    except OSError as exc:
        raise StateError(f"{path}: cannot read the usage store: {exc.strerror or exc}") from None
    # SQLite treats an empty file as a new database.
    if head and head != SQLITE_MAGIC:
        raise StateError(
            f"{path}: not an SQLite database (corrupted or some other file); it was left unchanged",
            hint="move it aside to start a new usage store",
        )


def _private_files(path: Path) -> None:
    """The store and its side files readable by this user only (0600), whatever the umask.

    A new store is created empty at 0600 before SQLite opens it (SQLite takes
    an empty file for a new database, and gives its ``-wal`` and ``-shm`` files
    the database file's mode); an existing one is tightened.
    """
    with contextlib.suppress(OSError):  # it exists (or cannot be made: SQLite's own open says why)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), PRIVATE_FILE_MODE))
    # ``.pending.jsonl``: the calls kept while the store was locked (agentlaunch.usage.journal)
    for suffix in ("", "-wal", "-shm", "-journal", ".pending.jsonl"):
        tighten(path.with_name(path.name + suffix), PRIVATE_FILE_MODE)


def _check_writable(path: Path) -> None:
    """Refuse a store we could read but never write (WAL needs side files in the directory, too).

    Probes by really creating a file, since permission bits say nothing to root
    and nothing about read-only mounts or immutable directories.
    """
    import tempfile

    try:
        fd, probe = tempfile.mkstemp(prefix=".agentlaunch-probe-", dir=path.parent)
        os.close(fd)
        os.unlink(probe)
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


def state_error(path: Path, exc: sqlite3.Error) -> StateError:
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
