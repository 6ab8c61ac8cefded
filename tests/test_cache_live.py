"""The cache, live: warm until when, what the next turn pays cold or warm, and a notice when a turn starts cold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agentlaunch.launch.session import spawn_child
from agentlaunch.launch.turn import ChildLike
from agentlaunch.live.status import one_line
from agentlaunch.live.status_table import cache_cell
from agentlaunch.sinks import Notice
from agentlaunch.usage.cache_lifetime import CacheWarmth, lifetime
from agentlaunch.usage.warmth import warmth_text
from tests.test_launch_inprocess import build

T = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


class MovableClock:
    def __init__(self) -> None:
        self.at = T

    def monotonic(self) -> float:
        import time

        return time.monotonic()

    def now(self) -> datetime:
        return self.at


def test_a_turn_that_starts_after_the_cache_went_cold_says_so_with_the_cost(agents_dir: Path, tmp_path: Path) -> None:
    (agents_dir / "pricing.yaml").write_text("fake-1: {input: 3, output: 15, cache_read: 0.3, cache_write: 3.75}\n")

    def factory(argv: Sequence[str], env: Mapping[str, str], cwd: Path, size: tuple[int, int]) -> ChildLike:
        return spawn_child(argv, env, cwd, size)

    launch, collected, _ = build(agents_dir, tmp_path, factory, interactive=True)
    clock = MovableClock()
    launch.clock = clock
    try:
        launch.start()
        launch.run_turn("hello")
        cache = launch.meter.cache
        assert cache is not None and cache.ttl == 300 and cache.last_call == T
        assert cache.context == launch.meter.context and cache.cold_usd and cache.warm_usd
        assert cache.cold_usd == cache.context * 3.75 / 1e6 and abs(cache.warm_usd - cache.context * 0.3 / 1e6) < 1e-12
        clock.at = T + timedelta(minutes=2)
        launch.run_turn("still warm")
        assert not [n for n in collected.of(Notice) if "cache went cold" in n.message]  # type: ignore[attr-defined]
        clock.at += timedelta(minutes=17)  # 5 minutes of life after the second call, then 12 more
        launch.run_turn("cold now")
        (cold,) = [n.message for n in collected.of(Notice) if "cache went cold" in n.message]  # type: ignore[attr-defined]
        assert cold.startswith("the cache went cold 12m00s ago (it lives 5 minutes): this turn writes ~")
        assert "tokens to it again (~$" in cold and "warm it would read them for ~$" in cold
    finally:
        launch.close(0)


def test_one_hour_writes_make_the_cache_live_an_hour_for_the_rest_of_the_session() -> None:
    assert lifetime(None, wrote_1h=False) == 300
    first = CacheWarmth(T, lifetime(None, wrote_1h=True), 10_000)
    assert first.ttl == 3600 and first.expires_at == T + timedelta(hours=1)
    assert lifetime(first, wrote_1h=False) == 3600  # later calls read it: it stays a 1-hour entry


def test_the_status_record_says_warm_or_cold_by_the_readers_clock() -> None:
    record = {"agent": "a", "state": "waiting", "cache": CacheWarmth(T, 300, 20_000, 0.075, 0.006).as_record()}
    assert warmth_text(record, T + timedelta(seconds=48)) == "cache warm 4m12s"
    assert warmth_text(record, T + timedelta(minutes=6)) == "cache cold"
    assert cache_cell(record, T + timedelta(minutes=6)) == "cold: next turn ~$0.0750"
    assert cache_cell(record, T) == "warm 5m00s"
    fresh = {**record, "cache": {**record["cache"], "expires_at": (datetime.now(UTC) + timedelta(minutes=3)).isoformat()}}
    assert one_line(fresh).endswith("· cache warm 2m59s") or one_line(fresh).endswith("· cache warm 3m00s")


def test_a_malformed_cache_field_in_a_record_is_ignored() -> None:
    for cache in (None, "warm", {"expires_at": 5}, {"expires_at": "soon"}, {"expires_at": "2026-12-01T12:00:00"}):
        record = {"agent": "a", "state": "waiting", "cache": cache}
        assert warmth_text(record, T) is None and cache_cell(record, T) == ""
        assert "cache" not in one_line(record)


def test_calls_without_context_leave_no_cold_notice(agents_dir: Path, tmp_path: Path) -> None:
    launch, _, _ = build(agents_dir, tmp_path, lambda *a: spawn_child(*a))
    launch.meter.cache = CacheWarmth(T - timedelta(hours=2), 300, 0)
    launch.clock = MovableClock()
    assert launch.cold_cache_notice() is None
    launch.meter.cache = CacheWarmth(T - timedelta(hours=2), 300, 5)
    assert launch.cold_cache_notice() is not None


# -- the warmth everywhere: the record read back keeps it (checked_record used to drop it) ---------------------


def test_the_cache_survives_reading_the_record_back_for_status_line_and_json(tmp_path: Path) -> None:
    import json
    import os

    from agentlaunch.live.status import checked_record, line_for, read_records

    expires = datetime.now(UTC) + timedelta(minutes=3)
    cache = {
        "expires_at": expires.isoformat(timespec="seconds"),
        "ttl_s": 300,
        "context": 20_000,
        "next_turn_cold_usd": 0.075,
        "next_turn_warm_usd": 0.006,
    }
    data = {"agent": "a", "state": "waiting", "pid": os.getpid(), "cache": cache, "updated": "x"}
    (tmp_path / f"{os.getpid()}.json").write_text(json.dumps(data))
    (found,) = read_records(tmp_path, clean=False)
    assert found.as_dict()["cache"] == cache  # what `status --json` prints
    assert "· cache warm 2m5" in line_for("a", tmp_path) or "· cache warm 3m00s" in line_for("a", tmp_path)
    hostile = {**cache, "ttl_s": "x", "context": 2**70, "next_turn_cold_usd": float("nan"), "extra": {"a": 1}}
    assert checked_record({"cache": hostile})["cache"] == {"expires_at": cache["expires_at"], "next_turn_warm_usd": 0.006}
    assert checked_record({"cache": [1]})["cache"] is None


def test_the_pane_title_leaves_the_countdown_to_the_border_and_hands_it_the_expiry() -> None:
    from agentlaunch.live.status import cache_expiry

    record = {"agent": "a", "state": "waiting", "cache": CacheWarmth(T, 300, 20_000).as_record()}
    assert "cache" not in one_line(record, warmth=False)
    assert cache_expiry(record) == str(int((T + timedelta(minutes=5)).timestamp()))
    assert cache_expiry({"cache": None}) == "" and cache_expiry({"cache": {"expires_at": "2026-12-01T12:00:00"}}) == ""


# -- a resumed session starts from its stored calls --------------------------------------------------------------


def test_a_resumed_meter_has_the_sessions_context_cost_and_cache_before_its_next_call(agents_dir: Path, tmp_path: Path) -> None:
    from agentlaunch.live.status import snapshot
    from agentlaunch.token_usage import Usage
    from agentlaunch.usage.records import CallRecord

    launch, _, _ = build(agents_dir, tmp_path, lambda *a: spawn_child(*a))
    calls = [
        CallRecord("demo", "fake", Usage(input=10, cache_write=5_000, output=7), cost_usd=0.02, at=T - timedelta(minutes=2)),
        CallRecord(
            "demo",
            "fake",
            Usage(input=20, cache_read=5_000, output=9, cache_write_1h=0),
            cost_usd=None,
            at=T - timedelta(minutes=1),
        ),
    ]
    launch.calls.resume(calls)
    record = snapshot(launch, pid=1, pid_start=None, started="s")
    assert record["context"] == 5_020 and record["calls"] == 2
    assert record["usage"]["cache_write"] == 5_000 and record["usage"]["output"] == 16
    assert record["cost_usd"] == 0.02 and record["priced_calls"] == 1 and record["unpriced_calls"] == 1
    assert record["cache"]["expires_at"] == (T + timedelta(minutes=4)).isoformat(timespec="seconds")
    assert launch.meter.calls == 0  # the launch's own footer still counts only its own calls
