"""Is the provider's prompt cache still warm, and what does the next turn pay if it is not?

A provider keeps a cached prefix for a while after the last call that read or
wrote it: 5 minutes by default, 1 hour once the session writes 1-hour entries
(Claude Code 2.1.332 asks for 1 hour on a subscription within its limits, 5 minutes
with an API key; ``CLAUDE_CODE_PROMPT_CACHE_TTL``, which agent.yaml's ``cache_ttl``
sets, overrides both). After
that the next call writes the whole context to the cache again, at the
cache-write price, instead of reading it at the cache-read price.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from agentlaunch.datarecord import datarecord
from agentlaunch.usage.warmth import span, warmth_text

FIVE_MINUTES = 300.0
ONE_HOUR = 3600.0
__all__ = ["FIVE_MINUTES", "ONE_HOUR", "CacheWarmth", "lifetime", "lives", "span", "warmth_text"]


@datarecord(frozen=True)
class CacheWarmth:
    """The cache after a session's latest call, and what the next turn's first call would pay."""

    last_call: datetime
    ttl: float
    """Seconds the cache lives after a call."""
    context: int
    """Tokens in context: what the next call reads (warm) or writes again (cold)."""
    cold_usd: float | None = None
    """The next call's price for the context when the cache is cold (written again); None: unpriced."""
    warm_usd: float | None = None
    """... and when it is warm (read)."""

    @property
    def expires_at(self) -> datetime:
        return self.last_call + timedelta(seconds=self.ttl)

    def warm(self, now: datetime) -> bool:
        return now < self.expires_at

    def as_record(self) -> dict[str, Any]:
        """For the live status record (readers compare ``expires_at`` with their own clock)."""
        return {
            "expires_at": self.expires_at.isoformat(timespec="seconds"),
            "ttl_s": int(self.ttl),
            "context": self.context,
            "next_turn_cold_usd": None if self.cold_usd is None else round(self.cold_usd, 6),
            "next_turn_warm_usd": None if self.warm_usd is None else round(self.warm_usd, 6),
        }


def lifetime(previous: CacheWarmth | None, wrote_1h: bool, *, wrote: bool = True, asked: float | None = None) -> float:
    """The cache's lifetime after a call: 1 hour once the session wrote 1-hour entries, else 5 minutes.

    What the API wrote decides (the usage's ``ephemeral_1h_input_tokens``): a CLI may ask for 1 hour and get
    5-minute entries. ``asked`` (the lifetime the CLI says it asks for, or agent.yaml's ``cache_ttl``) counts only
    for a call that wrote nothing when nothing was written before it (a resumed session's first read, say).
    """
    if wrote_1h or (previous is not None and previous.ttl >= ONE_HOUR):
        return ONE_HOUR
    if not wrote and previous is None and asked is not None and asked >= ONE_HOUR:
        return ONE_HOUR
    return FIVE_MINUTES


def lives(ttl: float) -> str:
    """How long the cache lives, said for a person: ``1 hour`` or ``5 minutes``."""
    return "1 hour" if ttl >= ONE_HOUR else "5 minutes"
