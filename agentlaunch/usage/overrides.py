"""Price overrides people write: ``AGENTLAUNCH_PRICE_*`` variables and ``pricing.yaml``, read and checked.

A pricing.yaml whose exact bytes passed its check before is taken from a memo
in the state directory (no YAML parse, no pydantic: ~50 ms of imports at
start); only files that passed are remembered, so a bad one is reported every
time, as ``FILE:LINE: MODEL.FIELD: message``.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping
from hashlib import sha256
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentlaunch import __version__, paths
from agentlaunch.datarecord import datarecord
from agentlaunch.errors import DefinitionError
from agentlaunch.fsutil import read_regular
from agentlaunch.token_usage import Usage

if TYPE_CHECKING:
    import yaml

PRICING_FILE = "pricing.yaml"
PRICING_LIMIT = 1 << 20  # a pricing.yaml is a few KiB
CHECKED_DIR = "validated-pricing"  # in the state dir: pricing.yaml files that passed, by their exact bytes
CHECKED_KEEP = 16
DEFAULT_KEY = "default"
ENV_RATES = {
    "input": "AGENTLAUNCH_PRICE_INPUT",
    "output": "AGENTLAUNCH_PRICE_OUTPUT",
    "cache_read": "AGENTLAUNCH_PRICE_CACHE_READ",
    "cache_write": "AGENTLAUNCH_PRICE_CACHE_WRITE",
    "cache_write_1h": "AGENTLAUNCH_PRICE_CACHE_WRITE_1H",
}
ONE_HOUR_WRITE = 2.0
"""A 1-hour cache write costs this many times the input rate where no rate is given (Anthropic's documented rate)."""


@datarecord(frozen=True, slots=True)
class Rates:
    """USD per million tokens of each kind (``cache_write`` for the 5-minute lifetime, ``cache_write_1h`` for 1 hour)."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    cache_write_1h: float

    def cost(self, usage: Usage) -> float:
        """Cost in USD of ``usage`` at these rates."""
        return (
            usage.input * self.input
            + usage.cache_write_5m * self.cache_write
            + usage.cache_write_1h * self.cache_write_1h
            + usage.cache_read * self.cache_read
            + usage.output * self.output
        ) / 1_000_000


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
        cache_write_1h=values.get("cache_write_1h", ONE_HOUR_WRITE * values["input"]),
    )


def load_pricing_file(path: Path, state_dir: Path | None = None) -> dict[str, Rates]:
    """Read and check a pricing.yaml: ``{model id: {input, output, cache_read, cache_write}}``.

    Every problem is reported at once as ``FILE:LINE: MODEL.FIELD: message``.
    With ``state_dir``, a file whose exact bytes passed before is taken from the
    memo kept there (no YAML parse, no pydantic: ~50 ms of imports); only files
    that passed are remembered, so a bad one is reported every time.
    """
    try:
        data = read_regular(path, PRICING_LIMIT)  # a FIFO or device named pricing.yaml must not block or flood
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DefinitionError(f"{path}: cannot read: {exc}") from None
    memo: Path | None = None
    if state_dir is not None:
        schema = Path(__file__).parent.parent / "definitions" / "schemas.py"
        with contextlib.suppress(OSError, ValueError, TypeError, AttributeError, RecursionError):
            digest = sha256(f"{__version__}\0".encode() + data + b"\0" + schema.read_bytes()).hexdigest()
            memo = state_dir / CHECKED_DIR / f"{digest[:32]}.json"
            remembered = json.loads(read_regular(memo, PRICING_LIMIT))
            return {str(k): Rates(*(_finite(v) for v in values)) for k, values in remembered.items()}
    import yaml  # only when a pricing.yaml must be read

    from agentlaunch.definitions.yamlload import BoundedLoader

    # Bounded: no alias bombs or deep nesting; duplicate model ids are named by _read_rates with their line.
    loader = BoundedLoader(text, duplicates_ok=True)
    try:
        rates = _read_rates(loader, path)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise DefinitionError(f"{where}: invalid YAML: {problem}") from None
    finally:
        loader.dispose()
    if memo is not None:
        from agentlaunch.fsutil import keep_newest, write_atomic

        record = {k: [r.input, r.output, r.cache_read, r.cache_write, r.cache_write_1h] for k, r in rates.items()}
        with contextlib.suppress(OSError):
            memo.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(memo, json.dumps(record).encode())
            keep_newest(memo.parent, CHECKED_KEEP)
    return rates


def _finite(value: Any) -> float:
    """A remembered rate: a finite number >= 0, else ValueError (the memo is then ignored)."""
    if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
        raise ValueError(f"not a rate: {value!r}")
    return float(value)


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
            cache_write_1h=ONE_HOUR_WRITE * entry.input if entry.cache_write_1h is None else entry.cache_write_1h,
        )
    if problems:
        raise DefinitionError(problems)
    return rates


def _describe(err: Any, value: Any) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return "unknown field (allowed: input, output, cache_read, cache_write, cache_write_1h)"
    if kind == "missing":
        return "required (USD per million tokens)"
    if kind in ("greater_than_equal",):
        return f"must be >= 0, got {value!r}"
    if kind in ("float_type", "float_parsing", "finite_number"):
        return f"must be a number of USD per million tokens, got {value!r}"
    return f"{err['msg']}, got {value!r}"
