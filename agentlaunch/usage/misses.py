"""Where a session's cache missed, and the likely cause, for ``usage --session ID --calls``.

A call after the first *missed* when it wrote a cache (at least
:data:`MIN_WRITE` tokens) while reading less than half of what the call
before it had in context: the prefix the previous call cached was not there
to read. The cause is the first that fits, from what the store knows: the CLI
compacted the conversation between the two calls; the instructions prefix
changed at a launch between them (which parts); the gap between them was
longer than the cache lives (5 minutes, or 1 hour once the session wrote
1-hour entries); else it is unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from agentlaunch.usage.cache_lifetime import FIVE_MINUTES, ONE_HOUR, lives
from agentlaunch.usage.records import CallRecord
from agentlaunch.usage.warmth import span

MIN_WRITE = 1024
"""Providers cache prefixes of 1,024 tokens or more; a smaller write is new messages, not a miss."""

SessionEvent = tuple[datetime, str, "str | None"]


def cache_misses(calls: Sequence[CallRecord], events: Sequence[SessionEvent]) -> list[str | None]:
    """For each call (in order), why its cache missed, or None where it did not."""
    found: list[str | None] = [None] * len(calls)
    one_hour = False
    for i, call in enumerate(calls):
        if i and call.usage.cache_write >= MIN_WRITE and call.usage.cache_read < calls[i - 1].usage.context / 2:
            found[i] = _cause(calls[i - 1], call, events, ONE_HOUR if one_hour else FIVE_MINUTES)
        one_hour = one_hour or call.usage.cache_write_1h > 0
    return found


def _cause(before: CallRecord, call: CallRecord, events: Sequence[SessionEvent], ttl: float) -> str:
    between = [(kind, detail) for at, kind, detail in events if before.at < at <= call.at]
    if any(kind == "compaction" for kind, _ in between):
        return "the CLI compacted the conversation"
    changed = [detail or "?" for kind, detail in between if kind == "prefix_changed"]
    if changed:
        return f"the instructions prefix changed ({changed[-1]})"
    gap = (call.at - before.at).total_seconds()
    if gap > ttl:
        return f"the cache expired ({span(gap)} after the previous call; it lives {lives(ttl)})"
    return "unknown (no prefix change, expiry or compaction was seen)"
