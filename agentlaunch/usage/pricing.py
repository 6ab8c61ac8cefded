"""Cost from usage: user overrides first, then genai-prices' bundled table, else unpriced.

Order of sources, first match wins:

1. ``AGENTLAUNCH_PRICE_INPUT`` / ``_OUTPUT`` / ``_CACHE_READ`` / ``_CACHE_WRITE``
   (USD per million tokens; cache rates default to the input rate).
2. ``pricing.yaml`` (the agents directory's, else the config directory's):
   the exact model id, else the longest key contained in the id; the id the
   provider reported is tried before the id that was requested.
3. genai-prices' bundled snapshot for the provider (never its network updater),
   through the rates kept in the state directory once a model was priced
   (:mod:`agentlaunch.usage.price_cache`: the same figure, without importing genai-prices).
4. The ``default`` entry of ``pricing.yaml``.

``default`` comes after genai-prices on purpose: it is the rate for models
nobody knows, and should not reprice the ones genai-prices knows exactly.

Nothing matching means *unpriced*: cost None, never a guess and never $0.

``Usage.output`` is billed as output and ``Usage.reasoning`` is taken to be
already inside it (OpenAI and Anthropic count thinking in their output figure);
an adapter whose provider reports thinking separately adds it to ``output``.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from agentlaunch import paths
from agentlaunch.datarecord import datarecord
from agentlaunch.providers.descriptors import DESCRIPTORS
from agentlaunch.token_usage import Usage, usage_problem
from agentlaunch.usage.overrides import (
    DEFAULT_KEY,
    ENV_RATES,
    PRICING_FILE,
    Rates,
    find_pricing_file,
    load_env_rates,
    load_pricing_file,
)
from agentlaunch.usage.price_cache import CACHE_DIR, PriceCache, genai_prices_version

__all__ = [
    "DEFAULT_KEY",
    "ENV_RATES",
    "PRICING_FILE",
    "Price",
    "Pricer",
    "Rates",
    "find_pricing_file",
    "format_cost",
    "genai_price",
    "genai_provider_id",
    "load_env_rates",
    "load_pricing_file",
    "match_override",
]


@datarecord(frozen=True, slots=True)
class Price:
    """A priced call: its cost and which source and key priced it."""

    cost_usd: float
    key: str
    """``env``, ``pricing.yaml:<key>`` or ``genai-prices:<provider>/<model>``."""


class Pricer:
    """Prices calls. Overrides are read and checked once, when the Pricer is made."""

    def __init__(
        self,
        agents_dir: Path | None = None,
        *,
        config_dir: Path | None = None,
        env: Mapping[str, str] | None = None,
        use_genai_prices: bool = True,
        price_cache: PriceCache | None = None,
        state_dir: Path | None = None,
    ) -> None:
        """Load overrides from ``agents_dir``/pricing.yaml, else ``config_dir`` (default
        :func:`paths.config_dir`)/pricing.yaml, and from ``env`` (default ``os.environ``).

        ``price_cache`` keeps genai-prices' rates between launches; by default the
        one in :func:`paths.state_dir`, made when first needed. A pricing.yaml that
        passed its check is remembered in ``state_dir`` (default :func:`paths.state_dir`)
        by its bytes, so an unchanged one is not parsed and checked again.
        Raises DefinitionError for a malformed file or variable.
        """
        self.env_rates = load_env_rates(os.environ if env is None else env)
        self.pricing_file = find_pricing_file(agents_dir, config_dir)
        self.overrides = (
            load_pricing_file(self.pricing_file, state_dir if state_dir is not None else paths.state_dir())
            if self.pricing_file
            else {}
        )
        self.use_genai_prices = use_genai_prices
        self._price_cache = price_cache

    @property
    def price_cache(self) -> PriceCache:
        """The cache of genai-prices' rates this Pricer reads and fills."""
        if self._price_cache is None:
            self._price_cache = PriceCache(paths.state_dir() / CACHE_DIR, genai_prices_version())
        return self._price_cache

    def warm_up(self, provider: str, model: str | None) -> threading.Thread | None:
        """Resolve ``model``'s genai-prices rates on a background thread while the CLI works, unless they are kept already.

        Importing genai-prices and pricing once takes about a quarter of a second;
        done in the first call's handling, that delay would sit between the answer
        and the end of the turn. The rates it finds are kept, so the next launch of
        the same model does not start the thread at all. With no ``model`` named, the
        one the CLI reported last time stands in for it
        (:meth:`~agentlaunch.usage.price_cache.PriceCache.default_model`). Returns
        the thread, or None when nothing needs it.
        """
        provider_id = genai_provider_id(provider)
        if not self.use_genai_prices or self.env_rates is not None or provider_id is None:
            return None
        if model is None:
            # No model named: the CLI's own choice, the one it reported last time. Without this guess every such
            # launch imported genai-prices (~0.3 CPU-s) only to be ready, though the rates it then used were kept.
            model = self.price_cache.default_model(provider_id)
        if model is not None and self.price_cache.kept(provider_id, model) is not None:
            return None
        # One of the launch's two threads, for a measured reason: importing genai-prices and resolving one model's
        # rates took 117-130 ms of CPU on the 2-core development machine. That is work, not a wait on a descriptor,
        # so the loop cannot take it in pieces; on the loop it would sit between the CLI's first output and the person.
        thread = threading.Thread(target=self._resolve_quietly, args=(provider, model), name="genai-prices-warm-up", daemon=True)
        thread.start()
        return thread

    def price(
        self,
        usage: Usage,
        provider: str,
        model_reported: str | None,
        model_requested: str | None,
        *,
        at: datetime | None = None,
    ) -> Price | None:
        """The cost of one call, or None when no source knows the model (unpriced).

        ``at`` is when the call happened, for genai-prices' dated price changes.
        A usage with a negative count (a running total that went backwards, say)
        is unpriced too: no honest price exists for it.
        """
        if usage_problem(usage) is not None:
            return None
        if self.env_rates is not None:
            return Price(self.env_rates.cost(usage), "env")
        models = [m for m in dict.fromkeys((model_reported, model_requested)) if m]
        for model in models:
            key = match_override(model, self.overrides)
            if key is not None:
                return Price(self.overrides[key].cost(usage), f"{PRICING_FILE}:{key}")
        if self.use_genai_prices:
            provider_id = genai_provider_id(provider)
            if model_requested is None and model_reported and provider_id is not None:
                self.price_cache.note_default_model(provider_id, model_reported)  # the next warm-up's guess
            for model in models:
                found = self.genai_price(usage, provider, model, at=at)
                if found is not None:
                    return found
        if DEFAULT_KEY in self.overrides:
            return Price(self.overrides[DEFAULT_KEY].cost(usage), f"{PRICING_FILE}:{DEFAULT_KEY}")
        return None

    def genai_price(self, usage: Usage, provider: str, model: str, *, at: datetime | None = None) -> Price | None:
        """:func:`genai_price`'s answer, from the kept rates when the model's are kept (else they are kept now)."""
        provider_id = genai_provider_id(provider)
        if provider_id is None:
            return None
        found = self.price_cache.resolution(provider_id, model)
        if found is None:  # prices that cannot be kept exactly: ask genai-prices each time
            return genai_price(usage, provider, model, at=at)
        if isinstance(found, str):  # UNKNOWN: genai-prices does not know the model
            return None
        counts = {
            "input_tokens": usage.total_input,
            "cache_write_tokens": usage.cache_write,
            "cache_write_1h_tokens": usage.cache_write_1h,
            "cache_read_tokens": usage.cache_read,
            "output_tokens": usage.output,
        }
        if min(counts.values()) < 0:
            return None  # genai-prices refuses negative counts
        cost = found.cost(counts, at)
        return None if cost is None else Price(cost, f"genai-prices:{found.provider_id}/{found.model_id}")

    def _resolve_quietly(self, provider: str, model: str | None) -> None:
        """The warm-up's work: resolve and keep ``model``'s rates (or only import genai-prices); never raises."""
        with contextlib.suppress(Exception):
            provider_id = genai_provider_id(provider)
            if model is None:
                genai_price(Usage(), provider, "unknown")
            elif provider_id is not None:
                self.price_cache.resolution(provider_id, model)


def match_override(model: str, overrides: Mapping[str, Rates]) -> str | None:
    """The pricing.yaml key for ``model``: exact, else the longest key inside the id (case-insensitive).

    ``default`` is never matched here; the caller uses it last.
    """
    lowered = model.lower()
    keys = {k.lower(): k for k in overrides if k != DEFAULT_KEY}
    if lowered in keys:
        return keys[lowered]
    inside = [k for k in keys if k and k in lowered]
    if not inside:
        return None
    # Longest wins; ties go to the alphabetically first key, so the answer never depends on file order.
    return keys[min(inside, key=lambda k: (-len(k), k))]


def genai_provider_id(provider: str) -> str | None:
    """genai-prices' id for ``provider`` (its descriptor's ``pricing_id``); None: not priced there (``fake``, unknown)."""
    descriptor = DESCRIPTORS.get(provider)
    return descriptor.pricing_id if descriptor else None


def genai_price(usage: Usage, provider: str, model: str, *, at: datetime | None = None) -> Price | None:
    """Price from genai-prices' bundled data, or None when it does not know provider or model.

    genai-prices wants the *total* input (cache reads and writes included) with
    the cached parts given again separately; agentlaunch's ``input`` is the
    uncached part only.
    """
    provider_id = genai_provider_id(provider)
    if provider_id is None:
        return None
    try:
        import genai_prices  # imported on the first call priced: it weighs ~130 ms at start-up

        gp_usage = genai_prices.Usage(
            input_tokens=usage.total_input,
            cache_write_tokens=usage.cache_write,
            cache_write_1h_tokens=usage.cache_write_1h,
            cache_read_tokens=usage.cache_read,
            output_tokens=usage.output,
        )
        calc = genai_prices.calc_price(gp_usage, model, provider_id=provider_id, genai_request_timestamp=at)
    except LookupError:  # provider or model unknown to the bundled snapshot
        return None
    except ValueError:  # usage it refuses to price, e.g. a negative count
        return None
    return Price(float(calc.total_price), f"genai-prices:{calc.provider.id}/{calc.model.id}")


def format_cost(cost: float | None) -> str:
    """``$0.0166`` below a dollar, ``$12.34`` above; ``unpriced`` for None (never ``$0``)."""
    if cost is None:
        return "unpriced"
    if cost != 0 and abs(cost) < 0.00005:
        return "<$0.0001"
    if abs(cost) < 1:
        return f"${cost:.4f}"
    return f"${cost:,.2f}"
