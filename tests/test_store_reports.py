"""The SQLite usage store's reports: sums by agent, session and day (the reader's time zone, a DST change), calls
without a price, and the indexes the queries use.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentlaunch.events import Usage
from agentlaunch.usage import store as store_module
from agentlaunch.usage.store import Store
from tests.support.store_rows import T0, call, db, store

__all__ = ["db", "store"]  # the fixtures, used by name


def _fill(store: Store) -> None:
    store.record_call(call("rev", T0, 0.10, session_id="a", model_reported="claude-opus-5-5"))
    store.record_call(call("rev", T0 + timedelta(hours=1), None, session_id="a", model_reported="claude-opus-5-5"))
    store.record_call(
        call(
            "coder",
            T0 + timedelta(days=1),
            None,
            session_id="b",
            model_reported=None,
            model_requested="mystery",
            usage=Usage(input=0, output=3),
        )
    )
    store.record_call(
        call(
            "coder",
            T0 + timedelta(days=2),
            0.30,
            session_id="c",
            model_reported="gpt-5.5",
            usage=Usage(input=100, cache_read=300, output=10),
        )
    )


def test_report_by_agent_sums_and_counts_unpriced(store: Store) -> None:
    _fill(store)
    rows = {r.key: r for r in store.usage_report("agent")}
    rev, coder = rows["rev"], rows["coder"]
    assert (rev.calls, rev.input, rev.cache_write, rev.cache_read, rev.output, rev.reasoning) == (2, 20, 40, 140, 10, 2)
    assert rev.cost_usd == pytest.approx(0.10)
    assert rev.unpriced_calls == 1
    assert rev.cache_hit_ratio == pytest.approx(140 / 200)
    assert rev.full_price_share == pytest.approx(20 / 200)
    assert (rev.first_at, rev.last_at) == (T0, T0 + timedelta(hours=1))
    assert coder.cost_usd == pytest.approx(0.30)
    assert coder.unpriced_calls == 1
    # Most expensive first.
    assert [r.key for r in store.usage_report("agent")] == ["coder", "rev"]


def test_a_group_with_no_priced_call_has_no_cost_not_zero(store: Store) -> None:
    _fill(store)
    rows = {r.key: r for r in store.usage_report("model")}
    assert rows["mystery"].cost_usd is None
    assert rows["mystery"].unpriced_calls == 1
    assert rows["mystery"].cache_hit_ratio is None  # no input at all
    assert rows["mystery"].full_price_share is None
    assert rows["gpt-5.5"].cost_usd == pytest.approx(0.30)


def test_report_by_session_and_filters(store: Store) -> None:
    _fill(store)
    assert {r.key for r in store.usage_report("session")} == {"a", "b", "c"}
    assert [r.key for r in store.usage_report("session", agent="coder")] == ["c", "b"]
    only = store.usage_report("model", session="a")
    assert [(r.key, r.calls) for r in only] == [("claude-opus-5-5", 2)]
    recent = store.usage_report("agent", since=T0 + timedelta(days=1))
    assert [(r.key, r.calls) for r in recent] == [("coder", 2)]


def test_report_by_day_uses_local_days_oldest_first(store: Store) -> None:
    _fill(store)
    rows = store.usage_report("day")
    local = [(T0 + timedelta(days=i)).astimezone().date().isoformat() for i in range(3)]
    assert [r.key for r in rows] == local
    assert [r.calls for r in rows] == [2, 1, 1]
    assert [r.key for r in store.usage_report("day", since=T0 + timedelta(hours=12))] == local[1:]
    assert [r.calls for r in store.usage_report("day", agent="coder", since=T0)] == [1, 1]
    assert store.usage_report("day", since=T0 + timedelta(days=30)) == []


@pytest.fixture
def zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Switch the process's local time zone for one test."""

    def use(name: str) -> None:
        monkeypatch.setenv("TZ", name)
        time.tzset()

    yield use
    monkeypatch.undo()
    time.tzset()


def test_report_by_day_follows_the_readers_time_zone(store: Store, zone: Any) -> None:
    # 2026-11-20 03:30 UTC is still the 19th in New York.
    store.record_call(call(at=datetime(2026, 11, 20, 3, 30, tzinfo=UTC)))
    store.record_call(call(at=datetime(2026, 11, 20, 12, 0, tzinfo=UTC)))
    zone("America/New_York")
    assert [(r.key, r.calls) for r in store.usage_report("day")] == [("2026-11-19", 1), ("2026-11-20", 1)]
    zone("UTC")
    assert [(r.key, r.calls) for r in store.usage_report("day")] == [("2026-11-20", 2)]


def test_report_by_day_across_a_dst_change(store: Store, zone: Any) -> None:
    zone("Europe/Berlin")
    # Clocks went back on 2026-10-25 (a 25-hour day): 23:30 local on the 25th is 22:30 UTC.
    store.record_call(call(at=datetime(2026, 10, 24, 22, 30, tzinfo=UTC)))  # 00:30 on the 25th
    store.record_call(call(at=datetime(2026, 10, 25, 22, 30, tzinfo=UTC)))  # 23:30 on the 25th
    store.record_call(call(at=datetime(2026, 10, 25, 23, 30, tzinfo=UTC)))  # 00:30 on the 26th
    assert [(r.key, r.calls) for r in store.usage_report("day")] == [("2026-10-25", 2), ("2026-10-26", 1)]


def test_unknown_grouping_is_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="by must be one of"):
        store.usage_report("week")  # type: ignore[arg-type]


def test_report_queries_use_indexes(store: Store) -> None:
    plan = " ".join(
        str(r)
        for r in store._conn.execute(
            f"EXPLAIN QUERY PLAN SELECT {store_module._SUMS} FROM calls WHERE at >= ? AND at < ?", (0, 1)
        )
    )
    assert "COVERING INDEX calls_at" in plan
    plan = " ".join(
        str(r)
        for r in store._conn.execute(
            f"EXPLAIN QUERY PLAN SELECT {store_module._SUMS} FROM calls WHERE agent = ? AND at >= ? AND at < ?",
            ("a", 0, 1),
        )
    )
    assert "calls_agent_at" in plan
