"""The plan limits a CLI reports (a subscription's 5-hour and 7-day windows), read whatever their shape.

Claude Code 2.1.332 reads them from the API's ``anthropic-ratelimit-unified-*`` response headers
(``-5h-utilization``, ``-5h-reset``, ``-7d-…``; only when ``-status`` is there, i.e. the limiter ran) and
only for a claude.ai login or a Claude gateway: with an API key it reads none (measured against the fake
API). It reports them twice:

* headless (stream-json), a ``rate_limit_event`` line after the call:
  ``rate_limit_info.unifiedWindows.five_hour = {"utilization": 0.42, "resetsAt": 1796171692, ...}``
  (a fraction, which may pass 1);
* to the status-line command, ``rate_limits.five_hour = {"used_percentage": 42, "resets_at": 1796171692}``
  (a percentage, capped at 100).

A field that is not a number, or is negative, is left out with one problem said; never an exception.
"""

from __future__ import annotations

from typing import Any

from agentlaunch.events import RateLimits, RateWindow
from agentlaunch.providers.untrusted import number, obj, shown

WINDOWS = ("five_hour", "seven_day")
MAX_RESET = 1 << 40  # unix seconds past any real reset time


def read_rate_limits(
    raw: Any, *, where: str, percent_key: str, reset_key: str, scale: float = 1.0
) -> tuple[RateLimits | None, list[str]]:
    """The windows in ``raw`` (None when it holds none), and what was wrong with the ones left out.

    ``scale`` turns the CLI's figure into a percentage (100 for a fraction). ``where`` names ``raw`` in a problem.
    """
    found: dict[str, RateWindow] = {}
    problems: list[str] = []
    for name in WINDOWS:
        window = obj(raw).get(name)
        if window is None:
            continue
        if not isinstance(window, dict):
            problems.append(f"{where}.{name} is {shown(window)}, not an object: left out")
            continue
        value = window.get(percent_key)
        used = number(value)
        if used is None or used < 0:
            why = "negative" if used is not None else f"{shown(value)}, not a number"
            problems.append(f"{where}.{name}.{percent_key} is {why}: left out")
            continue
        reset = window.get(reset_key)
        resets_at = number(reset)
        if reset is not None and (resets_at is None or not 0 <= resets_at < MAX_RESET):
            problems.append(f"{where}.{name}.{reset_key} is {shown(reset)}, not a time in unix seconds: left out")
            continue
        found[name] = RateWindow(min(round(used * scale, 1), 100.0), None if resets_at is None else int(resets_at))
    if not found:
        return None, problems
    return RateLimits(found.get("five_hour"), found.get("seven_day")), problems
