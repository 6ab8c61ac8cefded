"""Cache misses and their likely causes, from a session's calls and events (usage --session ID --calls)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agentlaunch.token_usage import Usage
from agentlaunch.usage.misses import cache_misses
from agentlaunch.usage.records import CallRecord

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def call(at: timedelta, write: int, read: int, one_hour: int = 0) -> CallRecord:
    usage = Usage(input=10, cache_write=write, cache_read=read, output=5, cache_write_1h=one_hour)
    return CallRecord(agent="a", provider="claude", usage=usage, at=T0 + at)


def test_each_cause_is_named_and_hits_are_not_misses() -> None:
    s = timedelta(seconds=1)
    calls = [
        call(0 * s, 5000, 0),  # the first call writes: not a miss
        call(30 * s, 200, 5000),  # read what was there: a hit
        call(60 * s, 6000, 0),  # compacted in between
        call(90 * s, 6500, 0),  # the prefix changed at a launch in between
        call(700 * s, 7000, 0),  # 10 minutes later: expired
        call(730 * s, 800, 0),  # a small write is new messages, not a miss
        call(760 * s, 7000, 0),  # nothing explains it
    ]
    events = [(T0 + 45 * s, "compaction", "auto"), (T0 + 75 * s, "prefix_changed", "soul, flags")]
    assert cache_misses(calls, events) == [
        None,
        None,
        "the CLI compacted the conversation",
        "the instructions prefix changed (soul, flags)",
        "the cache expired (10m10s after the previous call; it lives 5 minutes)",
        None,
        "unknown (no prefix change, expiry or compaction was seen)",
    ]


def test_once_the_session_wrote_one_hour_entries_the_cache_lives_an_hour() -> None:
    m = timedelta(minutes=1)
    calls = [call(0 * m, 5000, 0, one_hour=5000), call(10 * m, 5000, 0), call(80 * m, 5000, 0)]
    misses = cache_misses(calls, [])
    assert misses[1] == "unknown (no prefix change, expiry or compaction was seen)"
    assert misses[2] == "the cache expired (1h10m after the previous call; it lives 1 hour)"


def test_no_calls_no_misses() -> None:
    assert cache_misses([], []) == []
