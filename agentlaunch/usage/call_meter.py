"""Each model call, counted and priced before anything shows or stores it: the launch's call meter.

A launch hands every provider event to :meth:`CallMeter.count` first. The
:class:`~agentlaunch.usage.meter.Meter` counts it (tokens by kind, context,
distance to compaction); a call is priced (and priced again with all of its
input at the full price, so that what caching saved is the difference), the
cache's warmth after it is worked out (how long it lives, what the next turn
would pay for the context cold and warm), and the call becomes the
:class:`~agentlaunch.sinks.PricedCall` the sinks store and show. When a turn
starts after the cache went cold, :meth:`CallMeter.cold_cache_notice` says so
in one line. Pure: the caller passes the time.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from agentlaunch.events import CallUsage, Event
from agentlaunch.sinks import PricedCall
from agentlaunch.token_usage import Usage, uncached
from agentlaunch.usage.cache_lifetime import ONE_HOUR, CacheWarmth, lifetime, lives
from agentlaunch.usage.call_bound import WorstCall, worst_call
from agentlaunch.usage.meter import CompactionWarning, Earlier, Meter, table_window
from agentlaunch.usage.pricing import Pricer, format_cost
from agentlaunch.usage.records import CallRecord
from agentlaunch.usage.warmth import span


class CallMeter:
    """One session's meter and pricer: every event is counted, every call priced, the cache's warmth kept."""

    def __init__(self, meter: Meter, pricer: Pricer, *, agent: str, provider: str, model: str | None) -> None:
        self.meter, self.pricer = meter, pricer
        self.agent, self.provider, self.model = agent, provider, model

    def count(self, event: Event) -> CompactionWarning | None:
        """Account for ``event`` on the meter; a warning when this call crossed the compaction threshold."""
        return self.meter.add(event)

    def price(self, event: CallUsage, *, session_id: str, turn: int, now: datetime) -> PricedCall:
        """The call priced (None where no price is known), added to the meter's cost, the cache's warmth after it kept."""
        price = self.pricer.price(event.usage, self.provider, event.model, self.model)
        cost = price.cost_usd if price else None
        # The same call with all of its input at the full price: what caching saved is the difference.
        full = self.pricer.price(uncached(event.usage), self.provider, event.model, self.model) if price else None
        self.meter.add_cost(cost)
        self._cache_after(event, now)
        return PricedCall(
            CallRecord(
                agent=self.agent,
                provider=self.provider,
                usage=event.usage,
                session_id=session_id,
                turn=turn,
                model_requested=self.model,
                model_reported=event.model,
                cost_usd=cost,
                price_key=price.key if price else None,
                at=now,
                full_price_usd=full.cost_usd if full else None,
            )
        )

    def resume(self, calls: Sequence[CallRecord]) -> None:
        """A resumed session starts where its stored calls left it: context, cost and the cache after the last one.

        Without this, ``status`` shows context 0 and no cost until the resumed session's next call.
        """
        if not calls:
            return
        last = calls[-1]
        priced = [c.cost_usd for c in calls if c.cost_usd is not None]
        total = sum((c.usage for c in calls), Usage())
        earlier = Earlier(len(calls), total, sum(priced), len(priced), len(calls) - len(priced))
        self.meter.resume(last.usage, last.model_reported or last.model_requested, earlier)
        # The cache lives 1 hour once the session wrote 1-hour entries (as when it was metered call by call).
        self._cache_after(
            CallUsage(last.usage, model=last.model_reported), last.at, wrote_1h=any(c.usage.cache_write_1h > 0 for c in calls)
        )

    def _cache_after(self, event: CallUsage, now: datetime, *, wrote_1h: bool = False) -> None:
        """The cache's warmth after this call, and what the next turn would pay for the context cold and warm."""
        ttl = lifetime(
            self.meter.cache,
            wrote_1h or event.usage.cache_write_1h > 0,
            wrote=event.usage.cache_write > 0,
            asked=self.meter.cache_ttl,
        )
        context = event.usage.context
        one_hour = context if ttl >= ONE_HOUR else 0
        prices = [
            self.pricer.price(usage, self.provider, event.model, self.model)
            for usage in (Usage(cache_write=context, cache_write_1h=one_hour), Usage(cache_read=context))
        ]
        cold, warm = (p.cost_usd if p else None for p in prices)
        self.meter.cache = CacheWarmth(now, ttl, context, cold, warm)

    def cold_cache_notice(self, now: datetime) -> str | None:
        """One line when a turn starts after the cache went cold: how long ago, and what the turn pays for it."""
        cache = self.meter.cache
        if cache is None or cache.warm(now) or not cache.context:
            return None
        ago = span((now - cache.expires_at).total_seconds())
        cost = ""
        if cache.cold_usd is not None and cache.warm_usd is not None:
            cost = f" (~{format_cost(cache.cold_usd)}; warm it would read them for ~{format_cost(cache.warm_usd)})"
        return (
            f"the cache went cold {ago} ago (it lives {lives(cache.ttl)}): this turn writes ~{cache.context:,} tokens "
            f"to it again{cost}"
        )

    def worst_call(self) -> WorstCall:
        """The next call at its worst (:mod:`~agentlaunch.usage.call_bound`): its context window as the CLI reported
        it, else the table's for the model (a ``[1m]`` model's: a million), priced with this launch's pricer."""
        model = self.meter.model or self.model
        window = self.meter.reported_window or (1_000_000 if model and "[1m]" in model else table_window(model))
        return worst_call(lambda usage: self._cost(usage, model), model, window)

    def _cost(self, usage: Usage, model: str | None) -> float | None:
        price = self.pricer.price(usage, self.provider, model, self.model)
        return price.cost_usd if price else None

    def warm_up(self) -> None:
        """Load the price table in the background while the CLI starts (the first call is priced without waiting)."""
        self.pricer.warm_up(self.provider, self.model)
