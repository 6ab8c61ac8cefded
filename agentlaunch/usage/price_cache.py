"""genai-prices' rates for a model, resolved once and kept in the state directory.

Importing genai-prices costs about 150 ms of CPU (it brings httpx and
pydantic), which a launch would spend beside the starting CLI. Its answer for
one model never changes while its version stays the same, so the first
launch that prices a model asks genai-prices which rates apply and keeps
them, and every later launch prices that model from the kept rates without
importing genai-prices at all.

The kept rates are the model's priced units exactly as genai-prices holds
them (Decimal strings, thresholds of tiered prices, the start date of each
dated price), and :meth:`Resolved.cost` repeats genai-prices' own
arithmetic on them in the same order, so a kept price equals
``genai_prices.calc_price`` to the last bit. A model whose prices depend on
anything else (a time of day, say) is not kept: it is priced by genai-prices
every time.

One file per (genai-prices version, provider, model) in
``<state dir>/price-cache/``, written atomically, the newest
:data:`ENTRIES_KEEP` kept. A file that cannot be read, is not JSON, has
another format or names another key is ignored and resolved again; the cache
never makes pricing fail.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import threading
from datetime import UTC, date, datetime
from decimal import Decimal
from hashlib import sha256
from pathlib import Path
from typing import Any

CACHE_DIR = "price-cache"
ENTRIES_KEEP = 256  # a few KB each; one per model priced (requested and reported ids count apart)
FORMAT = 1
UNKNOWN = "unknown"
"""What :meth:`PriceCache.resolution` returns for a model genai-prices does not know."""


def genai_prices_version() -> str | None:
    """The installed genai-prices' version, without importing it (about half a millisecond).

    Read from the name of the ``genai_prices-X.Y.Z.dist-info`` folder beside the
    package; ``importlib.metadata`` would give the same answer for ~10 ms of
    imports. None when genai-prices is missing or its metadata is not where a
    normal install puts it (then nothing is cached).
    """
    try:
        spec = importlib.util.find_spec("genai_prices")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    site = Path(spec.origin).parent.parent
    try:
        found = [p.name for p in site.iterdir() if p.name.startswith("genai_prices-") and p.name.endswith(".dist-info")]
    except OSError:
        return None
    if len(found) != 1:
        return None  # none, or stale metadata of an older install beside it: cannot tell which is true
    return found[0][len("genai_prices-") : -len(".dist-info")]


class Resolved:
    """A model's rates as genai-prices holds them, and its arithmetic to price a usage with them."""

    __slots__ = ("provider_id", "model_id", "periods")

    def __init__(self, provider_id: str, model_id: str, periods: list[dict[str, Any]]) -> None:
        self.provider_id = provider_id
        self.model_id = model_id
        # [{"start_date": "YYYY-MM-DD" | None, "units": [{"usage_key", "per", "dims", "price"}]}], genai-prices' order.
        self.periods = periods

    def as_json(self) -> dict[str, Any]:
        return {"provider_id": self.provider_id, "model_id": self.model_id, "periods": self.periods}

    @classmethod
    def from_json(cls, data: Any) -> Resolved:
        """Rebuild from :meth:`as_json`; raises ValueError/KeyError/TypeError on anything else."""
        periods = data["periods"]
        if not isinstance(periods, list) or not periods:
            raise ValueError("no periods")
        for period in periods:
            if period["start_date"] is not None:
                date.fromisoformat(period["start_date"])
            for unit in period["units"]:
                _price_value(unit["price"])
                if not (isinstance(unit["usage_key"], str) and isinstance(unit["dims"], dict)):
                    raise TypeError("bad unit")
                if type(unit["per"]) is not int or unit["per"] <= 0:
                    raise ValueError("bad per")
        return cls(str(data["provider_id"]), str(data["model_id"]), periods)

    def cost(self, counts: dict[str, int], at: datetime | None = None) -> float | None:
        """``genai_prices.calc_price(...).total_price`` as a float, for the usage ``counts``
        (genai-prices usage keys: input_tokens with cache parts included, cache_read_tokens, ...).

        None where genai-prices raises ValueError (a usage it refuses).
        """
        units = self._units_at(at or datetime.now(tz=UTC))
        values: dict[str, int] = {}
        for unit in units:
            if unit["usage_key"] == "requests":
                continue
            value = _usage_value(unit, counts)
            if value is None:
                return None
            values[unit["usage_key"]] = value
        leaves = _leaf_values(units, values)
        if leaves is None:
            return None
        if any(u["usage_key"] == "requests" for u in units):
            leaves["requests"] = 1
        tiered = any(isinstance(u["price"], dict) for u in units)
        total_input = counts.get("input_tokens", 0) if tiered else 0
        total = Decimal(0)
        for unit in units:
            total += _unit_price(unit["price"], leaves[unit["usage_key"]], total_input, unit["per"])
        return float(total)

    def _units_at(self, at: datetime) -> list[dict[str, Any]]:
        # genai-prices: the last period whose start has come (or that has none), else the first.
        if at.tzinfo is not None:
            at = at.astimezone(UTC)
        for period in reversed(self.periods):
            start = period["start_date"]
            if start is None or at.date() >= date.fromisoformat(start):
                return list(period["units"])
        return list(self.periods[0]["units"])


def _price_value(raw: Any) -> Decimal | tuple[Decimal, list[tuple[int, Decimal]]]:
    if isinstance(raw, str):
        return Decimal(raw)
    tiers = [(int(start), Decimal(price)) for start, price in raw["tiers"]]
    return Decimal(raw["base"]), tiers


def _is_descendant_or_self(ancestor: dict[str, str], descendant: dict[str, str]) -> bool:
    return ancestor.items() <= descendant.items()


def _usage_value(unit: dict[str, Any], counts: dict[str, int]) -> int | None:
    """The count genai-prices reads for ``unit``: the reported one, else 0 unless it would infer a refusal."""
    key = unit["usage_key"]
    if key in counts:
        return counts[key]
    dims = unit["dims"]
    reported = [(k, UNIT_DIMS[k]) for k, v in counts.items() if v > 0 and k in UNIT_DIMS]
    if any(d != dims and _is_descendant_or_self(dims, d) for _, d in reported):
        return None  # "Missing usage for X: reported descendant usage keys ... require explicit X"
    ordered = sorted(reported)
    for i, (_, left) in enumerate(ordered):
        for _, right in ordered[i + 1 :]:
            compatible = all(right.get(k, v) == v for k, v in left.items())
            related = _is_descendant_or_self(left, right) or _is_descendant_or_self(right, left)
            if compatible and not related and dims == {**left, **right}:
                return None  # "reported overlapping usage keys ... require explicit X"
    return 0


def _leaf_values(units: list[dict[str, Any]], values: dict[str, int]) -> dict[str, int] | None:
    """genai-prices' decomposition: each priced unit's count less what its priced descendants took."""
    priced = sorted((u for u in units if u["usage_key"] != "requests"), key=lambda u: (-len(u["dims"]), u["usage_key"]))
    leaves: dict[str, int] = {}
    for unit in priced:
        taken = sum(
            leaves[other["usage_key"]]
            for other in priced
            if other is not unit and _is_descendant_or_self(unit["dims"], other["dims"])
        )
        leaf = values[unit["usage_key"]] - taken
        if leaf < 0:
            return None
        leaves[unit["usage_key"]] = leaf
    return leaves


def _unit_price(raw: Any, count: int, total_input: int, per: int) -> Decimal:
    price = _price_value(raw)
    if isinstance(price, tuple):
        base, tiers = price
        applicable = base
        for start, tier_price in reversed(sorted(tiers, key=lambda t: t[0])):
            if total_input > start:
                applicable = tier_price
                break
        return applicable * Decimal(count) / per
    return price * Decimal(count) / per


# The usage units agentlaunch reports to genai-prices, with their dimensions (genai-prices' data_units).
UNIT_DIMS: dict[str, dict[str, str]] = {
    "input_tokens": {"family": "tokens", "direction": "input"},
    "output_tokens": {"family": "tokens", "direction": "output"},
    "cache_read_tokens": {"family": "tokens", "direction": "input", "token_type": "cache_read"},
    "cache_write_tokens": {"family": "tokens", "direction": "input", "token_type": "cache_write"},
    "cache_write_1h_tokens": {"family": "tokens", "direction": "input", "token_type": "cache_write", "cache_ttl": "1h"},
}


def resolve(provider_id: str, model: str) -> Resolved | str | None:
    """Ask genai-prices (imported here) which rates it applies to ``model``.

    Returns :class:`Resolved`, :data:`UNKNOWN` when it does not know the
    provider or the model, or None when its prices for the model cannot be kept
    exactly (a time-of-day price, units whose dimensions differ from
    :data:`UNIT_DIMS`, or an internal shape this code does not know).
    """
    from genai_prices import data_snapshot, types  # ~150 ms, the reason this cache exists
    from genai_prices.units import _get_registry
    from genai_prices.validation import validate_priced_units

    try:
        provider, info = data_snapshot.get_snapshot().find_provider_model(model, None, provider_id, None)
    except LookupError:
        return UNKNOWN
    try:
        registry = _get_registry()
        for key, dims in UNIT_DIMS.items():
            if dict(registry.units[key].dimensions) != dims:
                return None
        conditional: list[tuple[str | None, Any]] = []
        if isinstance(info.prices, types.ModelPrice):
            conditional.append((None, info.prices))
        else:
            for cp in info.prices:
                if cp.constraint is not None and not isinstance(cp.constraint, types.StartDateConstraint):
                    return None
                conditional.append((cp.constraint.start_date.isoformat() if cp.constraint else None, cp.prices))
        periods = []
        for start, model_price in conditional:
            resolved = types._collect_resolved_model_prices(model_price, registry)
            validate_priced_units(tuple(unit for unit, _ in resolved), registry)
            units = []
            for unit, price in resolved:
                if isinstance(price, types.TieredPrices):
                    value: Any = {"base": str(price.base), "tiers": [[t.start, str(t.price)] for t in price.tiers]}
                else:
                    value = str(price)
                units.append({"usage_key": unit.usage_key, "per": unit.per, "dims": dict(unit.dimensions), "price": value})
            periods.append({"start_date": start, "units": units})
        return Resolved(provider.id, info.id, periods)
    except Exception:  # noqa: BLE001 - a shape this code does not know: price through genai-prices itself
        return None


class PriceCache:
    """Resolutions kept in ``folder`` (``<state dir>/price-cache``); remembered in memory once read."""

    def __init__(self, folder: Path, version: str | None) -> None:
        self.folder = folder
        self.version = version
        self._memory: dict[tuple[str, str], Resolved | str | None] = {}
        self._defaults: dict[str, str | None] = {}  # provider id: the model its CLI reported when none was named
        self._lock = threading.Lock()

    def _key(self, provider_id: str, model: str) -> dict[str, Any]:
        return {"format": FORMAT, "genai_prices": self.version, "provider": provider_id, "model": model}

    def _path(self, key: dict[str, Any]) -> Path:
        digest = sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
        return self.folder / f"{digest}.json"

    def _read(self, key: dict[str, Any]) -> dict[str, Any] | None:
        """The kept record of ``key``, or None when there is none (or it is unreadable, or another key's)."""
        with contextlib.suppress(OSError, ValueError, RecursionError):
            from agentlaunch.fsutil import read_regular  # stdlib only; a FIFO in the cache must not block a launch

            data = json.loads(read_regular(self._path(key), 1 << 20))
            if isinstance(data, dict) and data.get("key") == key:
                return data
        return None

    def kept(self, provider_id: str, model: str) -> Resolved | str | None:
        """The kept resolution (:class:`Resolved` or :data:`UNKNOWN`), or None when none is kept (or it is unusable)."""
        with self._lock:
            if (provider_id, model) in self._memory:
                return self._memory[provider_id, model]
        if self.version is None:
            return None
        found: Resolved | str | None = None
        data = self._read(self._key(provider_id, model))
        with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError, ArithmeticError, RecursionError):
            if data is not None:
                found = UNKNOWN if data.get("unknown") is True else Resolved.from_json(data["resolved"])
        if found is not None:
            with self._lock:
                self._memory[provider_id, model] = found
        return found

    def resolution(self, provider_id: str, model: str) -> Resolved | str | None:
        """The kept resolution, else genai-prices' (kept for next time when it can be); None: use genai-prices."""
        found = self.kept(provider_id, model)
        if found is not None:
            return found
        with self._lock:
            if (provider_id, model) in self._memory:
                return self._memory[provider_id, model]
        found = resolve(provider_id, model)
        with self._lock:
            self._memory[provider_id, model] = found
        if found is not None and self.version is not None:
            self._keep(provider_id, model, found)
        return found

    def default_model(self, provider_id: str) -> str | None:
        """The model the provider's CLI reported when a launch named none (:meth:`note_default_model`), or None.

        A launch that names no model cannot know before its first call which one the CLI will use, and so which
        kept rates to read; this is its best guess (the CLI's default rarely changes), so that it need not import
        genai-prices to be ready for whatever the answer is.
        """
        with self._lock:
            if provider_id in self._defaults:
                return self._defaults[provider_id]
        if self.version is None:
            return None
        data = self._read(self._default_key(provider_id))
        model = data.get("model") if data is not None else None
        found = model if isinstance(model, str) and model else None
        with self._lock:
            self._defaults.setdefault(provider_id, found)
        return found

    def note_default_model(self, provider_id: str, model: str) -> None:
        """Keep ``model`` as the one the provider's CLI uses when none is named (written only when it changed)."""
        if self.default_model(provider_id) == model or self.version is None:
            return
        with self._lock:
            self._defaults[provider_id] = model
        key = self._default_key(provider_id)
        self._write(key, {"key": key, "model": model})

    def _default_key(self, provider_id: str) -> dict[str, Any]:
        return {"format": FORMAT, "genai_prices": self.version, "provider": provider_id, "default_model": True}

    def _keep(self, provider_id: str, model: str, found: Resolved | str) -> None:
        key = self._key(provider_id, model)
        record: dict[str, Any] = {"key": key}
        if isinstance(found, Resolved):
            record["resolved"] = found.as_json()
        else:
            record["unknown"] = True
        self._write(key, record)

    def _write(self, key: dict[str, Any], record: dict[str, Any]) -> None:
        from agentlaunch.fsutil import keep_newest, write_atomic

        with contextlib.suppress(OSError):
            self.folder.mkdir(parents=True, exist_ok=True)
            write_atomic(self._path(key), json.dumps(record, sort_keys=True).encode())
            keep_newest(self.folder, ENTRIES_KEEP)
