"""The usage store's one connection: shared by threads under a lock, its failures as StateError.

:class:`StoreConnection` is the base of every part of :class:`~agentlaunch.usage.store.Store`
(sessions, reports, the journaled writes, the calls in flight): it holds the connection, the busy timeout a
write waits for another process's lock, and the malformed rows found so far (:meth:`StoreConnection.skipped`).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agentlaunch.usage import journal
from agentlaunch.usage.store_file import busy_timeout, state_error

REPLAY_WAIT_S = 0.25  # an opportunistic replay (open, close, a store found locked before) waits at most this


class StoreConnection:
    """An open, migrated connection to the usage store and what its parts share."""

    def __init__(self, conn: sqlite3.Connection, path: Path, timeout: float | None = None) -> None:
        """Wrap an open, migrated connection (use ``Store.open`` instead)."""
        self._conn = conn
        self.path = path
        self.journal = journal.journal_path(path)
        self.timeout = busy_timeout() if timeout is None else timeout
        """How long a write waits for another process's lock before it goes to the journal."""
        self.journaled = 0
        """Writes this store kept in the journal because the store was locked (see ``Store.write``)."""
        # One connection may serve a worker thread and the main thread.
        self._lock = threading.RLock()
        self._skipped: dict[str, str] = {}  # malformed rows and journal lines found so far: key -> the warning
        self._named: set[str] = set()  # those already handed out by skipped()
        self._busy = False  # the last write found the store locked: the next ones wait REPLAY_WAIT_S, not timeout
        self._closed = False

    @property
    def schema_version(self) -> int:
        """The schema version recorded in the file."""
        with self._guard():
            return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

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

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """Serialize use of the connection and turn SQLite failures into StateError."""
        with self._lock:
            try:
                yield
            except sqlite3.Error as exc:
                raise state_error(self.path, exc) from None
