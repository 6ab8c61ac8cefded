"""The SQLite usage store: one row per model call, one row per session, shared by every agentlaunch process.

:class:`Store` is what callers use (``from agentlaunch.usage.store import Store``). It is composed of parts, one
module each, named for what they own:

* :mod:`~agentlaunch.usage.store_connection`: the connection, its lock, its failures as StateError;
* :mod:`~agentlaunch.usage.store_sessions`: the sessions table;
* :mod:`~agentlaunch.usage.store_reports`: the reads of calls (reports, a session's calls and costs);
* :mod:`~agentlaunch.usage.store_writes`: the journaled write path (a write the lock refuses waits in the journal);
* :mod:`~agentlaunch.usage.store_inflight`: the calls in flight, the cross-process part of a budget check;
* :mod:`~agentlaunch.usage.store_rows`: the rows as values (columns, checks, converters).

Why mixins, not composition: every part works on the one connection under the one lock, and callers call
``store.start_session``, ``store.usage_report``, ``store.admission`` on one object. Each part is a subclass of
:class:`~agentlaunch.usage.store_connection.StoreConnection` that adds its methods and nothing else (no state
of its own, no ``__init__``), so :class:`Store` is their union with no method forwarded by hand, and the type
checker sees every attribute a part uses. Opening the file (recognizing it, WAL, migrations) is
:mod:`agentlaunch.usage.store_file`; the rows as values are :mod:`agentlaunch.usage.records`.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from types import TracebackType

from agentlaunch.errors import StateError
from agentlaunch.usage import journal
from agentlaunch.usage.store_connection import REPLAY_WAIT_S
from agentlaunch.usage.store_file import busy_timeout, connect
from agentlaunch.usage.store_inflight import InFlight, StoreInflight
from agentlaunch.usage.store_reports import REPORT_BY, ReportBy, StoreReports
from agentlaunch.usage.store_rows import SKIPPED_NAMED, SUMS, TITLE_CHARS, WELL_FORMED, shorten
from agentlaunch.usage.store_sessions import StoreSessions
from agentlaunch.usage.store_writes import StoreWrites

_SUMS = SUMS  # the name the store's tests read the report's aggregate by

__all__ = [
    "REPLAY_WAIT_S",
    "REPORT_BY",
    "SKIPPED_NAMED",
    "TITLE_CHARS",
    "WELL_FORMED",
    "InFlight",
    "ReportBy",
    "Store",
    "shorten",
]


class Store(StoreSessions, StoreReports, StoreWrites, StoreInflight):
    """The usage store. Open with :meth:`Store.open`; use as a context manager."""

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
