"""The plan's limits beside the money: a subscription's 5-hour and 7-day windows, kept, checked and said.

The CLI reports them (:class:`~agentlaunch.events.RateLimits`); the meter keeps the latest; the status record
holds them as ``rate_limits: {"five_hour": {"used_percent": 42.0, "resets_at": "2026-12-02T18:20:00+00:00"},
"seven_day": {...}}`` (a window the CLI did not report is absent); the one-line status and the pane border
say ``5h 42% · resets 18:20``. A window whose reset time has passed says nothing any more: it started again.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentlaunch.events import RateLimits, RateWindow

NAMES = {"five_hour": "5h", "seven_day": "7d"}
MAX_RESET = 1 << 40


def windows(limits: RateLimits | None) -> dict[str, RateWindow]:
    """The windows ``limits`` holds, by name (``five_hour``, ``seven_day``)."""
    if limits is None:
        return {}
    found = {"five_hour": limits.five_hour, "seven_day": limits.seven_day}
    return {name: window for name, window in found.items() if window is not None}


def current(limits: RateLimits | None, now: datetime) -> dict[str, RateWindow]:
    """The windows still running at ``now`` (one past its reset has started again: its figure is old)."""
    stamp = now.timestamp()
    return {name: w for name, w in windows(limits).items() if w.resets_at is None or w.resets_at > stamp}


def as_record(limits: RateLimits | None) -> dict[str, Any] | None:
    """For the status record; None when the CLI reported none (an API key never gets any)."""
    found = windows(limits)
    if not found:
        return None
    return {
        name: {
            "used_percent": w.used_percent,
            "resets_at": None if w.resets_at is None else datetime.fromtimestamp(w.resets_at, UTC).isoformat(timespec="seconds"),
        }
        for name, w in found.items()
    }


def checked(value: object) -> dict[str, Any] | None:
    """A record's ``rate_limits`` read from a file anyone could have written: only windows of the right shape."""
    if not isinstance(value, dict):
        return None
    kept: dict[str, Any] = {}
    for name in NAMES:
        window = value.get(name)
        if not isinstance(window, dict):
            continue
        used, resets = window.get("used_percent"), window.get("resets_at")
        if isinstance(used, bool) or not isinstance(used, int | float) or not math.isfinite(used) or not 0 <= used <= 100:
            continue
        if resets is not None and (not isinstance(resets, str) or _time(resets) is None):
            continue
        kept[name] = {"used_percent": used, "resets_at": resets}
    return kept or None


def _time(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def _percent(value: float) -> str:
    return f"{value:.0f}%" if value == int(value) or value >= 10 else f"{value:.1f}%"


def limits_text(record: dict[str, Any], now: datetime) -> str | None:
    """``5h 42% · resets 18:20 · 7d 10% · resets Thu 09:00`` from a record's ``rate_limits`` (local times), or None."""
    found = checked(record.get("rate_limits"))
    if not found:
        return None
    parts: list[str] = []
    for name, short in NAMES.items():
        window = found.get(name)
        if window is None:
            continue
        resets = _time(window["resets_at"]) if window["resets_at"] else None
        if resets is not None and resets <= now:
            continue  # the window started again: its figure is old
        parts.append(f"{short} {_percent(window['used_percent'])}")
        if resets is not None:
            local = resets.astimezone()
            parts.append(f"resets {local:%H:%M}" if name == "five_hour" else f"resets {local:%a %H:%M}")
    return " · ".join(parts) or None
