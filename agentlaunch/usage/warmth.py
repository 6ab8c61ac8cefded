"""How a status record's prompt cache reads (``cache warm 4m12s``): standard library only, for ``status --line``.

:mod:`agentlaunch.usage.cache_lifetime` computes the cache's lifetime and price; this module only says,
from the ``cache`` a record holds, whether it is still warm at a given time and for how long.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any


def span(seconds: float) -> str:
    """``4m12s``, ``1h03m``: a duration for a status line."""
    seconds = max(int(seconds), 0)
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def warmth_text(record: dict[str, Any], now: datetime) -> str | None:
    """``cache warm 4m12s`` or ``cache cold``, from a status record's ``cache`` (None when there is none)."""
    cache = record.get("cache")
    if not isinstance(cache, dict) or not isinstance(cache.get("expires_at"), str):
        return None
    try:
        expires = datetime.fromisoformat(cache["expires_at"])
    except ValueError:
        return None
    if expires.tzinfo is None:
        return None
    left = (expires - now).total_seconds()
    return f"cache warm {span(left)}" if left > 0 else "cache cold"


def cache_cell(record: dict[str, Any], now: datetime) -> str:
    """``warm 4m12s``, or ``cold: next turn ~$0.42`` (what it writes again), or empty before the first call: the cache
    column of ``agentlaunch status`` and of the deck."""
    text = warmth_text(record, now)
    if text is None:
        return ""
    cold = record["cache"].get("next_turn_cold_usd")
    if text == "cache cold" and isinstance(cold, int | float) and not isinstance(cold, bool):
        return f"cold: next turn ~${cold:.4f}"
    return text.removeprefix("cache ")
