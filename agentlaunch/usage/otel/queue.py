"""The store as the export queue: which calls still wait for the receiver, claimed by one sender at a time.

A call is exported per signal: ``exported_metrics`` and ``exported_logs`` are
set only once the receiver accepted that signal's request. Several processes
may export at once (every running agent, and ``agentlaunch usage export``):
each claims a batch in one ``BEGIN IMMEDIATE`` transaction, with a lease
(``export_claim_until``), so no two send the same call, and a sender that
died frees its calls when the lease runs out. The queue has its own SQLite
connection: the exporting thread never waits on the launch's.
"""

from __future__ import annotations

import os
import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentlaunch.token_usage import Usage
from agentlaunch.usage.records import CallRecord, from_ts
from agentlaunch.usage.store import WELL_FORMED
from agentlaunch.usage.store_file import BUSY_TIMEOUT_S, connect, state_error

LEASE_S = 300.0
"""How long a claim holds: longer than a batch's bounded retries, short enough that a crash costs minutes."""


@dataclass(frozen=True, slots=True)
class PendingCall:
    """A stored call waiting for export, with what its session adds and which signals still go."""

    call: CallRecord
    uid: str  # "<store id>-<row id>": the same call always has the same id, so a receiver can drop duplicates
    working_dir: str | None
    agent_id: str | None
    needs_metrics: bool
    needs_logs: bool


class ExportQueue:
    """Claims, reads and marks the calls waiting for export in the store at ``path``."""

    def __init__(self, path: Path, *, timeout: float = BUSY_TIMEOUT_S) -> None:
        self.path = path
        self._conn = connect(path, timeout)
        self.owner = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        row = self._conn.execute("SELECT value FROM store_meta WHERE key = 'store_id'").fetchone()
        self.store_id: str = row[0]

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ExportQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def pending_count(self, session_id: str | None = None, *, ours_only: bool = False) -> int:
        """How many calls (of ``session_id``, else all) the receiver has not accepted yet.

        ``ours_only`` leaves out the calls another sender holds right now (it is sending them, or frees them
        for a later one when it cannot).
        """
        sql = f"SELECT COUNT(*) FROM calls WHERE (exported_metrics IS NULL OR exported_logs IS NULL) AND {WELL_FORMED}"
        params: list[object] = []
        if session_id is not None:
            sql += " AND session_id = ?"
            params.append(session_id)
        if ours_only:
            sql += " AND (export_claim IS NULL OR export_claim = ? OR export_claim_until < ?)"
            params.extend([self.owner, time.time()])
        return int(self._run(sql, tuple(params)).fetchone()[0])

    def note_agent_id(self, session_id: str, agent_id: str) -> None:
        """Remember the definition's id for the session (an exported attribute; the recorder does not keep it)."""
        self._run("UPDATE sessions SET agent_id = ? WHERE session_id = ? AND agent_id IS NULL", (agent_id, session_id))

    def claim(self, limit: int, *, session_id: str | None = None) -> list[PendingCall]:
        """Claim up to ``limit`` unexported calls nobody else holds, oldest first (of ``session_id`` only, if given)."""
        now = time.time()
        where = (
            "(c.exported_metrics IS NULL OR c.exported_logs IS NULL)"
            f" AND (c.export_claim_until IS NULL OR c.export_claim_until < ?) AND {WELL_FORMED}"
        )  # a malformed row (Store.skipped names it) is not sent
        params: list[object] = [now]
        if session_id is not None:
            where += " AND c.session_id = ?"
            params.append(session_id)
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                rows = self._conn.execute(
                    f"""SELECT c.id, c.at, c.agent, c.provider, c.session_id, c.turn, c.model_requested, c.model_reported,
                               c.input, c.cache_write, c.cache_read, c.output, c.reasoning, c.cost_usd, c.price_key,
                               s.working_dir, s.agent_id, c.exported_metrics IS NULL, c.exported_logs IS NULL
                        FROM calls c LEFT JOIN sessions s ON s.session_id = c.session_id
                        WHERE {where} ORDER BY c.id LIMIT ?""",
                    [*params, limit],
                ).fetchall()
                if rows:
                    ids = [r[0] for r in rows]
                    marks = ",".join("?" * len(ids))
                    self._conn.execute(
                        f"UPDATE calls SET export_claim = ?, export_claim_until = ? WHERE id IN ({marks})",
                        [self.owner, now + LEASE_S, *ids],
                    )
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise state_error(self.path, exc) from None
        return [self._pending(r) for r in rows]

    def series_totals(self, ids: list[int], buckets: list[int]) -> tuple[float | None, list[tuple[Any, ...]]]:
        """What the metrics' cumulative points are made of: the time of the latest of the calls ``ids``, and the
        store's totals of every call of their agents up to that time.

        One row per (agent, provider, requested and reported model, agent id, working directory, input bucket,
        output bucket), ``buckets`` being the histogram's upper bounds: count, input and output sums, mins and maxes,
        the four token kinds, the priced cost and how many calls had one, and the earliest call's time. The same
        ids give the same rows as long as no call with an earlier time is stored meanwhile, so a batch sent again
        carries the values it carried the first time.
        """
        if not ids:
            return None, []
        marks = ",".join("?" * len(ids))
        until = self._run(f"SELECT MAX(at) FROM calls WHERE id IN ({marks})", tuple(ids)).fetchone()[0]
        agents = sorted({r[0] for r in self._run(f"SELECT DISTINCT agent FROM calls WHERE id IN ({marks})", tuple(ids))})
        total_in = "(c.input + c.cache_write + c.cache_read)"

        def bucket(expr: str) -> str:
            whens = " ".join(f"WHEN {expr} <= {bound} THEN {i}" for i, bound in enumerate(buckets))
            return f"CASE {whens} ELSE {len(buckets)} END"

        rows = self._run(
            f"""SELECT c.agent, c.provider, c.model_requested, c.model_reported, s.agent_id, s.working_dir,
                       {bucket(total_in)}, {bucket("c.output")}, COUNT(*), SUM({total_in}), SUM(c.output),
                       MIN({total_in}), MAX({total_in}), MIN(c.output), MAX(c.output),
                       SUM(c.input), SUM(c.cache_write), SUM(c.cache_read), SUM(c.reasoning),
                       SUM(c.cost_usd), COUNT(c.cost_usd), MIN(c.at)
                FROM calls c LEFT JOIN sessions s ON s.session_id = c.session_id
                WHERE c.agent IN ({",".join("?" * len(agents))}) AND c.at <= ? AND {WELL_FORMED}
                GROUP BY 1, 2, 3, 4, 5, 6, 7, 8""",
            (*agents, until),
        ).fetchall()
        return until, rows

    def mark(self, ids: list[int], signal: str) -> None:
        """Record that the receiver accepted ``signal`` ("metrics" or "logs") for these calls."""
        if not ids:
            return
        column = {"metrics": "exported_metrics", "logs": "exported_logs"}[signal]
        marks = ",".join("?" * len(ids))
        self._run(f"UPDATE calls SET {column} = ? WHERE id IN ({marks})", (time.time(), *ids))

    def release(self, ids: list[int] | None = None) -> None:
        """Give back this sender's claims (on ``ids``, else all it holds): another sender, or a later one, takes them."""
        sql = "UPDATE calls SET export_claim = NULL, export_claim_until = NULL WHERE export_claim = ?"
        params: list[object] = [self.owner]
        if ids is not None:
            if not ids:
                return
            sql += f" AND id IN ({','.join('?' * len(ids))})"
            params.extend(ids)
        self._run(sql, tuple(params))

    def _run(self, sql: str, params: tuple[object, ...]) -> sqlite3.Cursor:
        try:
            return self._conn.execute(sql, params)
        except sqlite3.Error as exc:
            raise state_error(self.path, exc) from None

    def _pending(self, r: tuple[Any, ...]) -> PendingCall:
        """A row of the pending query (SQLite's values, typed by the query's columns) as the call it exports."""
        at = from_ts(r[1])
        assert at is not None
        call = CallRecord(
            id=r[0],
            at=at,
            agent=r[2],
            provider=r[3],
            session_id=r[4],
            turn=r[5],
            model_requested=r[6],
            model_reported=r[7],
            usage=Usage(input=r[8], cache_write=r[9], cache_read=r[10], output=r[11], reasoning=r[12]),
            cost_usd=r[13],
            price_key=r[14],
        )
        return PendingCall(
            call=call,
            uid=f"{self.store_id}-{r[0]}",
            working_dir=r[15],
            agent_id=r[16],
            needs_metrics=bool(r[17]),
            needs_logs=bool(r[18]),
        )
