"""What Claude Code's status-line JSON says beyond the context window: the plan's limits and the cache's lifetime.

Measured on Claude Code 2.1.332 against the fake API:

* ``rate_limits`` (``five_hour``/``seven_day``: ``used_percentage``, ``resets_at``) is there only once the API's
  ``anthropic-ratelimit-unified-*`` headers were read, i.e. for a claude.ai login or a Claude gateway;
* ``prompt_cache.ttl`` (``"5m"`` or ``"1h"``) is the lifetime the CLI asks for (its ``cache_control``), which
  ``CLAUDE_CODE_PROMPT_CACHE_TTL`` sets; what the API wrote is in the calls' usage (``ephemeral_1h_input_tokens``).

The status line is rendered again and again: an item is sent only when its value changed, and a field that
cannot be read is said once a session.
"""

from __future__ import annotations

from typing import Any

from agentlaunch.events import CacheTtl, Event, RateLimits, Warning
from agentlaunch.providers import untrusted
from agentlaunch.providers.rate_limits import read_rate_limits

TTLS = {"5m": 300, "1h": 3600}


class StatusReport:
    """The status line's plan limits and cache lifetime, each sent when it changes."""

    def __init__(self) -> None:
        self.limits: RateLimits | None = None
        self.ttl: int | None = None
        self._problems_said = False

    def read(self, payload: dict[str, Any]) -> list[Event]:
        items: list[Event] = []
        limits, problems = read_rate_limits(
            payload.get("rate_limits"), where="rate_limits", percent_key="used_percentage", reset_key="resets_at"
        )
        if problems and not self._problems_said:
            self._problems_said = True
            items.append(Warning("Claude Code's status line has plan limits agentlaunch cannot read: " + "; ".join(problems)))
        if limits is not None and limits != self.limits:
            self.limits = limits
            items.append(limits)
        ttl = TTLS.get(untrusted.string(untrusted.obj(payload.get("prompt_cache")).get("ttl")))
        if ttl is not None and ttl != self.ttl:
            self.ttl = ttl
            items.append(CacheTtl(ttl))
        return items
