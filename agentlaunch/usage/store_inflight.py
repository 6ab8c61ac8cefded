"""The usage store's ledger of calls in flight: the cross-process part of a budget check.

A launch whose budget lets a call go reserves it (table ``inflight``: holder, process, expected cost) inside
one ``BEGIN IMMEDIATE`` transaction (:meth:`StoreInflight.admission`) and releases it once the call is stored,
so two launches checking at once cannot both spend the last of a budget.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from agentlaunch.datarecord import datarecord
from agentlaunch.processes import process_start, same_process
from agentlaunch.usage.records import now, to_ts
from agentlaunch.usage.store_connection import REPLAY_WAIT_S, StoreConnection
from agentlaunch.usage.store_file import state_error
from agentlaunch.usage.store_writes import is_busy


@datarecord(frozen=True)
class InFlight:
    """Calls other launches let their CLIs make and did not store yet: how many, and what they are expected to cost."""

    calls: int = 0
    usd: float = 0.0
    tokens: int = 0


class StoreInflight(StoreConnection):
    """Reservations of calls in flight, one per launch (``holder``)."""

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
                if not is_busy(exc):
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
                if not is_busy(exc):
                    raise state_error(self.path, exc) from None
            except sqlite3.Error as exc:
                raise state_error(self.path, exc) from None
