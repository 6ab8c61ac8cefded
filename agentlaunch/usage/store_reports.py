"""The usage store's reads of calls: reports by session, agent, model or day; a session's calls and costs.

Times are stored as UTC unix seconds (REAL): compact, indexable, and converted to local days only for the
by-day report. A call row that does not read as one is left out and named once (:meth:`Store.skipped`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal, get_args

from agentlaunch.usage.records import CallRecord, ReportRow, from_ts, now, to_ts
from agentlaunch.usage.store_connection import StoreConnection
from agentlaunch.usage.store_rows import (
    AT_HIGH,
    AT_LOW,
    CALL_COLUMNS,
    CHECKED_COLUMNS,
    LAST_TS,
    SKIPPED_NAMED,
    SUMS,
    WELL_FORMED,
    call_record,
    report_row,
    row_problem,
)

ReportBy = Literal["session", "agent", "model", "day"]
REPORT_BY: tuple[str, ...] = get_args(ReportBy)


class StoreReports(StoreConnection):
    """Reads of the calls: reports, a session's calls, events and costs."""

    def session_costs(self, session_ids: list[str]) -> dict[str, tuple[float | None, int]]:
        """session id -> (the sum of its priced calls' cost, or None when none was priced; its calls)."""
        if not session_ids:
            return {}
        marks = ", ".join("?" * len(session_ids))
        with self._guard():
            rows = self._conn.execute(
                f"SELECT session_id, SUM(cost_usd), COUNT(*) FROM calls WHERE session_id IN ({marks})"
                f" AND {AT_LOW} AND {AT_HIGH} GROUP BY session_id",
                session_ids,
            ).fetchall()
            self._find_skipped_at([f"session_id IN ({marks})"], session_ids)
        return {r[0]: (r[1], r[2]) for r in rows}

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
                f"SELECT {CALL_COLUMNS} FROM calls WHERE session_id = ? AND {WELL_FORMED} ORDER BY at, id", (session_id,)
            ).fetchall()
            self._find_skipped(["session_id = ?"], [session_id], WELL_FORMED)
        return [call_record(r) for r in rows]

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
            where += ["at >= ?", AT_HIGH]
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
                    sql = f"SELECT {group} AS k, {SUMS}{agents} FROM calls WHERE {' AND '.join(where)} GROUP BY k"
                    rows = [report_row(r) for r in self._conn.execute(sql, params).fetchall()]
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
            f"SELECT MIN(at), MAX(at) FROM calls WHERE {' AND '.join([*bounds, AT_HIGH])}", [*params, since or 0.0]
        ).fetchone()
        if first is None:
            return []
        sql = f"SELECT '', {SUMS} FROM calls WHERE {' AND '.join([*bounds, 'at < ?'])}"
        rows = []
        for key, lo, hi in _local_days(first, last):
            row = self._conn.execute(sql, [*params, max(lo, first), hi]).fetchone()
            if row[1]:
                rows.append(report_row((key, *row[1:])))
        return rows

    def _find_skipped(self, where: list[str], params: Sequence[Any], good: str) -> None:
        """Note the rows among the calls ``where`` selects that ``good`` refuses (at most :data:`SKIPPED_NAMED`)."""
        clause = " AND ".join([*where, f"NOT {good}"])
        rows = self._conn.execute(
            f"SELECT id, {', '.join(CHECKED_COLUMNS)} FROM calls WHERE {clause} ORDER BY id LIMIT ?",
            [*params, SKIPPED_NAMED],
        ).fetchall()
        for row in rows:
            self._skipped.setdefault(f"call:{row[0]}", f"{self.path}: skipped call row {row[0]}: {row_problem(row[1:])}")

    def _find_skipped_at(self, where: list[str], params: Sequence[Any]) -> None:
        """Note the calls ``where`` selects whose ``at`` is no time: two seeks at the ends of the ``at`` index."""
        for outside in ("at < 0", f"at > {LAST_TS}"):
            self._find_skipped([*where, outside], params, "0")


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
