"""The usage store's rows as values: the columns read, the checks a row must pass, and the converters.

Another program (or a damaged file) can leave anything in a column, so every row is checked before it
becomes a :class:`~agentlaunch.usage.records.SessionRow` or :class:`~agentlaunch.usage.records.CallRecord`,
and what fails names its first bad column (:func:`session_problem`, :func:`row_problem`). Pure functions:
no connection here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from agentlaunch.token_usage import Usage
from agentlaunch.usage.records import CallRecord, ReportRow, SessionRow, from_ts, to_ts
from agentlaunch.visible import visible

CALL_COLUMNS = (
    "id, at, agent, provider, session_id, turn, model_requested, model_reported, "
    "input, cache_write, cache_read, output, reasoning, cost_usd, price_key, cache_write_1h, full_price_usd"
)
SESSION_COLUMNS = (
    "session_id, agent, provider, model, working_dir, started, last_used, ended, exit_status, turns, provider_state, "
    "tmux_session, tmux_window, tmux_layout, title, rowid"
)
TITLE_CHARS = 60  # a session's title: its first prompt, on one line, at most this long
SUMS = (
    "COUNT(*), SUM(input), SUM(cache_write), SUM(cache_read), SUM(output), SUM(reasoning), "
    "SUM(cost_usd), SUM(cost_usd IS NULL), MIN(at), MAX(at), SUM(cache_write_1h), "
    "SUM(full_price_usd - cost_usd)"
)


MAX_COUNT = (1 << 53) - 1
LAST_TS = 253402300799  # 9999-12-31T23:59:59Z: the last second a datetime holds
_COUNTS = ("input", "cache_write", "cache_read", "output", "reasoning", "cache_write_1h")
_AMOUNTS = ("cost_usd", "full_price_usd")
# A call row as agentlaunch writes it. Another program (or a damaged file) can leave anything in a column:
# SQLite's column affinity keeps an ``at`` of 'x' as text. Such a row is skipped and named once
# (:meth:`Store.skipped`). Reports and budgets keep ``at`` to the range a datetime holds, which costs nothing
# (text and blobs sort above every number, so it is a bound of the index range they read already); a count or
# amount that is text there is summed as SQLite reads it (0), never a failure. A session's own calls, read row
# by row, are checked in full (WELL_FORMED).
AT_LOW, AT_HIGH = "at >= 0", f"at <= {LAST_TS}"
WELL_FORMED = (
    "COALESCE("
    + " AND ".join(
        [
            f"+at BETWEEN 0 AND {LAST_TS}",
            *(f"{c} BETWEEN 0 AND {MAX_COUNT}" for c in _COUNTS),
            *(f"({c} IS NULL OR {c} BETWEEN 0 AND 1e12)" for c in _AMOUNTS),
        ]
    )
    + ", 0)"
)
CHECKED_COLUMNS = ("at", *_COUNTS, *_AMOUNTS)
SKIPPED_NAMED = 20  # malformed rows named per query at most (a store full of them still gets one line each)


INSERT_CALL = """INSERT INTO calls (at, agent, provider, session_id, turn, model_requested, model_reported,
                                    input, cache_write, cache_read, output, reasoning, cost_usd, price_key,
                                    cache_write_1h, full_price_usd)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"""


def call_values(c: CallRecord) -> tuple[Any, ...]:
    """A call's values in :data:`INSERT_CALL`'s order."""
    u = c.usage
    return (
        to_ts(c.at),
        c.agent,
        c.provider,
        c.session_id,
        c.turn,
        c.model_requested,
        c.model_reported,
        u.input,
        u.cache_write,
        u.cache_read,
        u.output,
        u.reasoning,
        c.cost_usd,
        c.price_key,
        u.cache_write_1h,
        c.full_price_usd,
    )


def row_problem(values: Sequence[Any]) -> str:
    """What is wrong with a call row, from its :data:`CHECKED_COLUMNS` values: the first column that is."""
    for column, value in zip(CHECKED_COLUMNS, values, strict=True):
        shown = repr(value) if not isinstance(value, str) or len(value) <= 40 else repr(value[:40]) + "…"
        if column == "at":
            ok = isinstance(value, int | float) and 0 <= value <= LAST_TS
            expected = "a time (unix seconds)"
        elif column.endswith("_usd"):
            ok = value is None or (isinstance(value, int | float) and 0 <= value <= 1e12)
            expected = "an amount in USD"
        else:
            ok = isinstance(value, int | float) and 0 <= value <= MAX_COUNT
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


def session_problem(row: Sequence[Any]) -> str | None:
    """What makes a sessions row (its :data:`SESSION_COLUMNS` values) unreadable as a session, or None."""

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
        if not (isinstance(value, int | float) and math.isfinite(value) and 0 <= value <= LAST_TS):
            return said(column, value, "a time (unix seconds)")
    if row[8] is not None and not isinstance(row[8], int):
        return said("exit_status", row[8], "an exit status")
    if not (isinstance(row[9], int) and 0 <= row[9] <= MAX_COUNT):
        return said("turns", row[9], "a count")
    if row[10] is not None:
        try:
            state = json.loads(row[10]) if isinstance(row[10], str) else None
        except (ValueError, RecursionError):
            state = None
        if not isinstance(state, dict):
            return said("provider_state", row[10], "a JSON object")
    return None


def session_row(row: tuple[Any, ...]) -> SessionRow:
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


def call_record(row: tuple[Any, ...]) -> CallRecord:
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


def report_row(row: tuple[Any, ...]) -> ReportRow:
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
