"""A metric batch sent again (the receiver accepted it, the sender died before marking it) changes nothing.

Log records carry ``log.record.uid`` and can be deduplicated; metric points
cannot. So the token and cost metrics are cumulative sums computed from the
store: a point is a series' total up to a time, and a repeat carries the same
value at the same time. What a backend sees is checked here the way a backend
reads each temporality: delta points are added up; for cumulative points the
latest value of each series is the total.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agentlaunch.token_usage import Usage
from agentlaunch.usage.otel.config import read_config
from agentlaunch.usage.otel.export import Exporter
from agentlaunch.usage.otel.queue import ExportQueue
from agentlaunch.usage.records import CallRecord
from agentlaunch.usage.store import Store
from testbed.otlp_receiver import OtlpReceiver

AT = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
CUMULATIVE = 2


def fill(path: Path, calls: list[tuple[str, str, int, int, float | None]], start: int = 0) -> None:
    """(agent, working dir, input, output, cost) per call, one second apart."""
    with Store.open(path) as store:
        for i, (agent, wd, tin, tout, cost) in enumerate(calls, start):
            session = f"{agent}-{wd}"
            store.start_session(session, agent=agent, provider="claude", working_dir=wd, model="m")
            store.record_call(
                CallRecord(
                    at=AT + timedelta(seconds=i),
                    agent=agent,
                    provider="claude",
                    session_id=session,
                    turn=1,
                    model_requested="m",
                    model_reported="m",
                    usage=Usage(input=tin, cache_read=1000, output=tout),
                    cost_usd=cost,
                )
            )


def forget_export(path: Path) -> None:
    """What a kill -9 between the receiver's acceptance and the mark leaves: the calls unexported, unclaimed."""
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE calls SET exported_metrics = NULL, export_claim = NULL, export_claim_until = NULL")
    conn.close()


def key(attrs: dict[str, Any], *names: str) -> tuple[str, ...]:
    return tuple(str(attrs.get(n)) for n in ("agentlaunch.agent.name", "agentlaunch.project", *names))


def backend_view(receiver: OtlpReceiver, name: str, *kinds: str) -> dict[tuple[str, ...], float]:
    """Per series: the sum of delta points, or the latest cumulative value (a repeat at one time counted once)."""
    temporality = {m.name: getattr(m, m.WhichOneof("data")).aggregation_temporality for m in receiver.metrics()}
    totals: dict[tuple[str, ...], float] = defaultdict(float)
    latest: dict[tuple[str, ...], tuple[int, float]] = {}
    for attrs, point in receiver.metric_points(name):
        value = point.sum if name == "gen_ai.client.token.usage" else (point.as_int or point.as_double)
        series = key(attrs, *kinds)
        if temporality[name] == CUMULATIVE:
            if series not in latest or point.time_unix_nano >= latest[series][0]:
                latest[series] = (point.time_unix_nano, value)
        else:
            totals[series] += value
    return {s: v for s, (_, v) in latest.items()} if temporality[name] == CUMULATIVE else dict(totals)


def test_a_metric_batch_sent_twice_shows_the_stores_totals(isolated_home: Path) -> None:
    path = isolated_home / "state" / "usage.sqlite3"
    fill(path, [("rev", "/p/shop", 10, 5, 0.25), ("rev", "/p/shop", 20, 7, None), ("dev", "/p/api", 30, 9, 0.5)])
    with OtlpReceiver() as receiver:
        config = read_config({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_LOGS_EXPORTER": "none"})
        with ExportQueue(path) as queue:
            assert Exporter(queue, config).drain().exported == 3
        forget_export(path)  # killed before marking: the same batch goes again
        with ExportQueue(path) as queue:
            assert Exporter(queue, config).drain().exported == 3
        assert len(receiver.accepted("/v1/metrics")) == 2
        # More calls later, one of them in a new series: the totals carry on from the store.
        fill(path, [("rev", "/p/shop", 1, 1, 0.125), ("ops", "/p/infra", 2, 2, None)], start=3)
        with ExportQueue(path) as queue:
            assert Exporter(queue, config).drain().exported == 2
        tokens = backend_view(receiver, "agentlaunch.token.usage", "agentlaunch.token.type")
        cost = backend_view(receiver, "agentlaunch.cost.usage")
        usage = backend_view(receiver, "gen_ai.client.token.usage", "gen_ai.token.type")
    assert tokens[("rev", "shop", "uncached_input")] == 31 and tokens[("rev", "shop", "output")] == 13
    assert tokens[("rev", "shop", "cache_read")] == 3000 and tokens[("dev", "api", "output")] == 9
    assert tokens[("ops", "infra", "uncached_input")] == 2
    assert cost == {("rev", "shop"): 0.375, ("dev", "api"): 0.5}  # the unpriced series has no cost point
    assert usage[("rev", "shop", "input")] == 3031 and usage[("rev", "shop", "output")] == 13


def test_the_points_of_a_repeat_are_identical(isolated_home: Path) -> None:
    path = isolated_home / "state" / "usage.sqlite3"
    fill(path, [("rev", "/p/shop", 10, 5, 0.25), ("rev", "/p/shop", 20, 7, 0.5)])
    with OtlpReceiver() as receiver:
        config = read_config({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_LOGS_EXPORTER": "none"})
        for _ in range(2):
            with ExportQueue(path) as queue:
                Exporter(queue, config).drain()
            forget_export(path)
        first, second = receiver.accepted("/v1/metrics")
    assert first.SerializeToString(deterministic=True) == second.SerializeToString(deterministic=True)
