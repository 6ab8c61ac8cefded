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
import math
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentlaunch import paths
from agentlaunch.errors import DefinitionError
from agentlaunch.events import Usage
from agentlaunch.usage.price_cache import CACHE_DIR, PriceCache, genai_prices_version

if TYPE_CHECKING:
    import yaml

PRICING_FILE = "pricing.yaml"
DEFAULT_KEY = "default"
ENV_RATES = {
    "input": "AGENTLAUNCH_PRICE_INPUT",
    "output": "AGENTLAUNCH_PRICE_OUTPUT",
    "cache_read": "AGENTLAUNCH_PRICE_CACHE_READ",
    "cache_write": "AGENTLAUNCH_PRICE_CACHE_WRITE",
}
# agentlaunch provider name -> genai-prices provider id. "fake" is absent on purpose.
GENAI_PROVIDERS = {"claude": "anthropic", "codex": "openai", "gemini": "google"}


@dataclass(frozen=True, slots=True)
class Rates:
    """USD per million tokens of each kind."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    def cost(self, usage: Usage) -> float:
        """Cost in USD of ``usage`` at these rates."""
        return (
            usage.input * self.input
            + usage.cache_write * self.cache_write
            + usage.cache_read * self.cache_read
            + usage.output * self.output
        ) / 1_000_000


@dataclass(frozen=True, slots=True)
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
    ) -> None:
        """Load overrides from ``agents_dir``/pricing.yaml, else ``config_dir`` (default
        :func:`paths.config_dir`)/pricing.yaml, and from ``env`` (default ``os.environ``).

        ``price_cache`` keeps genai-prices' rates between launches; by default the
        one in :func:`paths.state_dir`, made when first needed.
        Raises DefinitionError for a malformed file or variable.
        """
        self.env_rates = load_env_rates(os.environ if env is None else env)
        self.pricing_file = find_pricing_file(agents_dir, config_dir)
        self.overrides = load_pricing_file(self.pricing_file) if self.pricing_file else {}
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
        the same model does not start the thread at all. Returns the thread, or None
        when nothing needs it.
        """
        if not self.use_genai_prices or self.env_rates is not None or provider not in GENAI_PROVIDERS:
            return None
        if model is not None and self.price_cache.kept(GENAI_PROVIDERS[provider], model) is not None:
            return None
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
        if min(usage.input, usage.cache_write, usage.cache_read, usage.output, usage.reasoning) < 0:
            return None
        if self.env_rates is not None:
            return Price(self.env_rates.cost(usage), "env")
        models = [m for m in dict.fromkeys((model_reported, model_requested)) if m]
        for model in models:
            key = match_override(model, self.overrides)
            if key is not None:
                return Price(self.overrides[key].cost(usage), f"{PRICING_FILE}:{key}")
        if self.use_genai_prices:
            for model in models:
                found = self.genai_price(usage, provider, model, at=at)
                if found is not None:
                    return found
        if DEFAULT_KEY in self.overrides:
            return Price(self.overrides[DEFAULT_KEY].cost(usage), f"{PRICING_FILE}:{DEFAULT_KEY}")
        return None

    def genai_price(self, usage: Usage, provider: str, model: str, *, at: datetime | None = None) -> Price | None:
        """:func:`genai_price`'s answer, from the kept rates when the model's are kept (else they are kept now)."""
        provider_id = GENAI_PROVIDERS.get(provider)
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
            if model is None:
                genai_price(Usage(), provider, "unknown")
            else:
                self.price_cache.resolution(GENAI_PROVIDERS[provider], model)


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


def genai_price(usage: Usage, provider: str, model: str, *, at: datetime | None = None) -> Price | None:
    """Price from genai-prices' bundled data, or None when it does not know provider or model.

    genai-prices wants the *total* input (cache reads and writes included) with
    the cached parts given again separately; agentlaunch's ``input`` is the
    uncached part only.
    """
    provider_id = GENAI_PROVIDERS.get(provider)
    if provider_id is None:
        return None
    try:
        import genai_prices  # imported on the first call priced: it weighs ~130 ms at start-up

        gp_usage = genai_prices.Usage(
            input_tokens=usage.total_input,
            cache_write_tokens=usage.cache_write,
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


# --------------------------------------------------------------------------- loading


def find_pricing_file(agents_dir: Path | None, config_dir: Path | None = None) -> Path | None:
    """The pricing.yaml in ``agents_dir``, else in the config directory, else None."""
    candidates = [agents_dir / PRICING_FILE] if agents_dir is not None else []
    candidates.append((config_dir if config_dir is not None else paths.config_dir()) / PRICING_FILE)
    return next((c for c in candidates if c.is_file()), None)


def load_env_rates(env: Mapping[str, str]) -> Rates | None:
    """Rates from AGENTLAUNCH_PRICE_* variables, or None when none is set.

    Input and output are both required once any is set; cache rates default to input.
    """
    values: dict[str, float] = {}
    problems: list[str] = []
    for field, var in ENV_RATES.items():
        raw = env.get(var)
        if raw is None or raw.strip() == "":
            continue
        try:
            value = float(raw)
        except ValueError:
            problems.append(f"environment: {var}: must be a number of USD per million tokens, got {raw!r}")
            continue
        if not math.isfinite(value) or value < 0:
            problems.append(f"environment: {var}: must be a finite number >= 0, got {raw!r}")
            continue
        values[field] = value
    if problems:
        raise DefinitionError(problems)
    if not values:
        return None
    missing = [ENV_RATES[f] for f in ("input", "output") if f not in values]
    if missing:
        set_vars = ", ".join(ENV_RATES[f] for f in values)
        raise DefinitionError(f"environment: {', '.join(missing)}: required when {set_vars} is set")
    return Rates(
        input=values["input"],
        output=values["output"],
        cache_read=values.get("cache_read", values["input"]),
        cache_write=values.get("cache_write", values["input"]),
    )


def load_pricing_file(path: Path) -> dict[str, Rates]:
    """Read and check a pricing.yaml: ``{model id: {input, output, cache_read, cache_write}}``.

    Every problem is reported at once as ``FILE:LINE: MODEL.FIELD: message``.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DefinitionError(f"{path}: cannot read: {exc}") from None
    import yaml  # only when a pricing.yaml exists

    loader = yaml.SafeLoader(text)
    try:
        return _read_rates(loader, path)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise DefinitionError(f"{where}: invalid YAML: {problem}") from None
    finally:
        loader.dispose()


def _read_rates(loader: yaml.SafeLoader, path: Path) -> dict[str, Rates]:
    """Walk the node tree (for line numbers), constructing only the scalar values."""
    import yaml
    from pydantic import ValidationError  # only when a pricing.yaml exists: pydantic is slow to import

    from agentlaunch.definitions.schemas import RateEntry

    root = loader.get_single_node()
    if root is None:
        return {}
    if not isinstance(root, yaml.MappingNode):
        raise DefinitionError(
            f"{path}:{root.start_mark.line + 1}: (top level): must be a mapping of model id to rates, "
            f"e.g. 'claude-opus-4-5: {{input: 5, output: 25, cache_read: 0.5, cache_write: 6.25}}'"
        )
    rates: dict[str, Rates] = {}
    problems: list[str] = []
    seen: set[str] = set()
    for key_node, value_node in root.value:
        line = key_node.start_mark.line + 1
        if not isinstance(key_node, yaml.ScalarNode) or not key_node.value:
            problems.append(f"{path}:{line}: (model id): must be a non-empty string")
            continue
        model = str(key_node.value)
        if model in seen:
            problems.append(f"{path}:{line}: {model}: given twice")
            continue
        seen.add(model)
        if not isinstance(value_node, yaml.MappingNode):
            problems.append(f"{path}:{line}: {model}: must be a mapping with input, output, cache_read, cache_write")
            continue
        data: dict[str, Any] = {}
        field_lines: dict[str, int] = {}
        for k, v in value_node.value:
            name = str(k.value) if isinstance(k, yaml.ScalarNode) else "?"
            field_lines[name] = k.start_mark.line + 1
            # Nested values are constructed too, so pydantic names them as "not a number".
            data[name] = loader.construct_object(v, deep=True)
        try:
            entry = RateEntry.model_validate(data)
        except ValidationError as exc:
            for err in exc.errors():
                field = str(err["loc"][0]) if err["loc"] else ""
                problems.append(
                    f"{path}:{field_lines.get(field, line)}: {model}.{field or '?'}: {_describe(err, data.get(field))}"
                )
            continue
        rates[model] = Rates(
            input=entry.input,
            output=entry.output,
            cache_read=entry.input if entry.cache_read is None else entry.cache_read,
            cache_write=entry.input if entry.cache_write is None else entry.cache_write,
        )
    if problems:
        raise DefinitionError(problems)
    return rates


def _describe(err: Any, value: Any) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return "unknown field (allowed: input, output, cache_read, cache_write)"
    if kind == "missing":
        return "required (USD per million tokens)"
    if kind in ("greater_than_equal",):
        return f"must be >= 0, got {value!r}"
    if kind in ("float_type", "float_parsing", "finite_number"):
        return f"must be a number of USD per million tokens, got {value!r}"
    return f"{err['msg']}, got {value!r}"
