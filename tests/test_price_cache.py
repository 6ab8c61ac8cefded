"""The price cache: kept rates price exactly as genai-prices does, and a second launch does not import it."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import genai_prices
import pytest
from genai_prices import data_snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlaunch.errors import DefinitionError
from agentlaunch.providers.descriptors import DESCRIPTORS
from agentlaunch.token_usage import Usage
from agentlaunch.usage import price_cache
from agentlaunch.usage.price_cache import UNKNOWN, PriceCache, Resolved, genai_prices_version, resolve
from agentlaunch.usage.pricing import Price, Pricer, genai_price

VERSION = importlib.metadata.version("genai_prices")
# Plain, tiered (200k input threshold), dated (a price that changes on a start date), extra units (audio, 1h writes).
MODELS = [
    ("claude", "claude-sonnet-4-5"),
    ("claude", "claude-opus-4-5"),
    ("claude", "claude-sonnet-4-6"),
    ("claude", "claude-haiku-4-5"),
    ("codex", "gpt-5.5"),
    ("codex", "gpt-5-codex"),
    ("codex", "o3"),
    ("gemini", "gemini-2.5-pro"),
    ("gemini", "gemini-2.5-flash"),
    ("gemini", "gemini-3-pro-preview"),
]
counts = st.one_of(st.just(0), st.integers(0, 300_000), st.integers(0, 10**9))
usages = st.builds(Usage, input=counts, cache_write=counts, cache_read=counts, output=counts, reasoning=st.just(0))
moments = st.one_of(
    st.none(),
    st.datetimes(datetime(2023, 1, 1), datetime(2029, 1, 1), timezones=st.just(UTC)),
    st.datetimes(datetime(2023, 1, 1), datetime(2029, 1, 1)),  # naive: genai-prices reads it as UTC
)


def cache_in(folder: Path, version: str | None = VERSION) -> PriceCache:
    return PriceCache(folder, version)


def from_disk(folder: Path) -> Pricer:
    """A Pricer whose cache starts cold in memory, so every kept rate is read back from its file."""
    return Pricer(None, config_dir=folder / "no-config", env={}, price_cache=cache_in(folder))


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("price-cache")
    filler = from_disk(folder)
    for provider, model in MODELS:
        assert filler.genai_price(Usage(input=1), provider, model) is not None
    assert len(list(folder.glob("*.json"))) == len(MODELS)
    return folder


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(usage=usages, model=st.sampled_from(MODELS), at=moments)
def test_kept_rates_price_exactly_as_genai_prices(
    filled: Path, usage: Usage, model: tuple[str, str], at: datetime | None
) -> None:
    provider, model_id = model
    if at is None:  # "now" on both sides: pin it, so a date boundary cannot fall between the two calls
        at = datetime.now(tz=UTC)
    kept = from_disk(filled).genai_price(usage, provider, model_id, at=at)
    direct = genai_price(usage, provider, model_id, at=at)
    assert kept == direct  # the float cost itself, not approximately, and the same key


def test_every_bundled_model_of_the_three_providers_prices_exactly(tmp_path: Path) -> None:
    samples = [
        Usage(input=12, cache_write=5000, cache_read=9000, output=7),
        Usage(input=199_000, cache_write=900, cache_read=100, output=3),  # just past a 200k tier
        Usage(input=3, output=10**7),
        Usage(cache_read=10**6),
        Usage(input=100, cache_write=23_456, cache_write_1h=20_000, output=10),  # both lifetimes
        Usage(input=199_000, cache_write=5000, cache_write_1h=5000, output=3),  # all 1-hour, past a tier
        Usage(),
    ]
    days = [datetime(2024, 6, 1, tzinfo=UTC), datetime(2026, 3, 13, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC)]
    checked = 0
    snapshot = data_snapshot.get_snapshot()
    for provider, provider_id in ((d.name, d.pricing_id) for d in DESCRIPTORS.values() if d.pricing_id):
        models = next(p for p in snapshot.providers if p.id == provider_id).models
        for info in models:
            pricer = from_disk(tmp_path / provider_id / info.id.replace("/", "_"))
            for usage in samples:
                for at in days:
                    assert pricer.genai_price(usage, provider, info.id, at=at) == genai_price(usage, provider, info.id, at=at)
                    checked += 1
    assert checked > 1000  # the three providers' bundled models, not an empty loop


def test_a_second_process_prices_a_priced_model_without_importing_genai_prices(tmp_path: Path) -> None:
    probe = """
import json, sys
from agentlaunch.errors import DefinitionError
from agentlaunch.token_usage import Usage
from agentlaunch.usage.pricing import Pricer
pricer = Pricer(None, env={})
thread = pricer.warm_up("claude", "claude-sonnet-4-5")      # what a launch does while the CLI starts
if thread is not None:
    thread.join(60)
price = pricer.price(Usage(input=12, cache_write=5000, cache_read=9000, output=7), "claude",
                     "claude-sonnet-4-5-20250929", "claude-sonnet-4-5")   # reported id first, as Claude reports it
heavy = sorted(m for m in ("genai_prices", "pydantic", "httpx", "httpx2") if m in sys.modules)
print(json.dumps({"thread": thread is not None, "cost": price.cost_usd, "key": price.key, "heavy": heavy}))
"""

    def launch() -> dict[str, object]:
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
        assert done.stderr == ""
        return json.loads(done.stdout)

    first, second = launch(), launch()
    assert first["thread"] is True and "genai_prices" in first["heavy"]  # type: ignore[operator]
    assert second == {"thread": False, "cost": first["cost"], "key": first["key"], "heavy": []}
    direct = genai_price(Usage(input=12, cache_write=5000, cache_read=9000, output=7), "claude", "claude-sonnet-4-5-20250929")
    assert direct is not None and second["cost"] == direct.cost_usd and second["key"] == direct.key


@pytest.mark.parametrize("reported", ["claude-sonnet-4-5-20250929", "claude-from-the-future-9"], ids=["known", "unknown"])
def test_a_launch_that_names_no_model_imports_genai_prices_once_not_every_time(tmp_path: Path, reported: str) -> None:
    """No model named: the warm-up guesses the one the CLI reported last time; its kept rates (or its kept "not known
    to this genai-prices") answer, and genai-prices is not imported again."""
    probe = f"""
import json, sys
from agentlaunch.token_usage import Usage
from agentlaunch.usage.pricing import Pricer
pricer = Pricer(None, env={{}})
thread = pricer.warm_up("claude", None)      # the agent names no model: the CLI chooses
if thread is not None:
    thread.join(60)
price = pricer.price(Usage(input=12, output=7), "claude", {reported!r}, None)
heavy = sorted(m for m in ("genai_prices", "pydantic", "httpx") if m in sys.modules)
print(json.dumps({{"thread": thread is not None, "key": price and price.key, "heavy": heavy}}))
"""

    def launch() -> dict[str, object]:
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
        assert done.stderr == ""
        return json.loads(done.stdout)

    first, second, third = launch(), launch(), launch()
    assert first["thread"] is True and "genai_prices" in first["heavy"]  # type: ignore[operator]
    assert second == third == {"thread": False, "key": first["key"], "heavy": []}
    assert (first["key"] is None) == (reported == "claude-from-the-future-9")


def test_the_default_model_is_kept_per_provider_and_version(tmp_path: Path) -> None:
    cache = cache_in(tmp_path)
    assert cache.default_model("anthropic") is None
    cache.note_default_model("anthropic", "claude-opus-4-5")
    assert cache_in(tmp_path).default_model("anthropic") == "claude-opus-4-5"  # read back from its file
    assert cache_in(tmp_path).default_model("openai") is None
    assert cache_in(tmp_path, "0.0.1").default_model("anthropic") is None  # another genai-prices: not trusted
    cache.note_default_model("anthropic", "claude-sonnet-4-6")  # the CLI's default changed
    assert cache_in(tmp_path).default_model("anthropic") == "claude-sonnet-4-6"
    assert len(list(tmp_path.glob("*.json"))) == 1


@pytest.mark.parametrize(
    "content",
    [b"", b"\x00\xff not json", b"[]", b'{"key": "someone else"}', b'{"key": null, "resolved": {}}'],
    ids=["empty", "binary", "a list", "foreign key", "no key"],
)
def test_a_corrupt_or_foreign_cache_file_is_ignored_and_resolved_again(tmp_path: Path, content: bytes) -> None:
    usage = Usage(input=100, cache_read=50, output=10)
    from_disk(tmp_path).genai_price(usage, "claude", "claude-opus-4-5")
    [entry] = tmp_path.glob("*.json")
    entry.write_bytes(content)
    assert from_disk(tmp_path).genai_price(usage, "claude", "claude-opus-4-5") == genai_price(usage, "claude", "claude-opus-4-5")
    assert json.loads(entry.read_bytes())["key"]["model"] == "claude-opus-4-5"  # written again, whole


def test_a_kept_entry_of_the_right_key_but_a_broken_shape_is_resolved_again(tmp_path: Path) -> None:
    usage = Usage(input=100, output=10)
    from_disk(tmp_path).genai_price(usage, "codex", "gpt-5.5")
    [entry] = tmp_path.glob("*.json")
    record = json.loads(entry.read_bytes())
    unit = {"usage_key": "input_tokens", "per": 1_000_000, "dims": {}, "price": "1"}
    broken_shapes = [
        {"periods": "x"},
        {"periods": []},
        {"periods": [{"start_date": "not a date", "units": []}]},
        {"periods": [{"start_date": None, "units": [{**unit, "per": 0}]}]},
        {"periods": [{"start_date": None, "units": [{**unit, "price": "x"}]}]},
        {"periods": [{"start_date": None, "units": [{**unit, "price": {"base": "1"}}]}]},
    ]
    for broken in broken_shapes:
        entry.write_text(json.dumps({**record, "resolved": {**record["resolved"], **broken}}))
        assert from_disk(tmp_path).genai_price(usage, "codex", "gpt-5.5") == genai_price(usage, "codex", "gpt-5.5")


def test_another_genai_prices_version_does_not_read_the_entries_of_this_one(tmp_path: Path) -> None:
    assert cache_in(tmp_path).resolution("anthropic", "claude-opus-4-5") is not None
    assert cache_in(tmp_path).kept("anthropic", "claude-opus-4-5") is not None
    assert cache_in(tmp_path, "0.0.1").kept("anthropic", "claude-opus-4-5") is None
    assert cache_in(tmp_path, None).kept("anthropic", "claude-opus-4-5") is None  # version unknown: nothing is trusted


def test_the_cache_keeps_only_the_newest_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(price_cache, "ENTRIES_KEEP", 3)
    cache = cache_in(tmp_path)
    for _, model in MODELS[:6]:
        cache.resolution("anthropic", model)
    assert len(list(tmp_path.glob("*.json"))) == 3


def test_unknown_models_are_kept_as_unknown_and_stay_unpriced(tmp_path: Path) -> None:
    assert cache_in(tmp_path).resolution("anthropic", "no-such-model") == UNKNOWN
    assert cache_in(tmp_path).kept("anthropic", "no-such-model") == UNKNOWN
    assert from_disk(tmp_path).genai_price(Usage(input=5), "claude", "no-such-model") is None


def test_prices_that_cannot_be_kept_exactly_are_asked_of_genai_prices_each_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # deepseek's off-peak prices depend on the time of day: not kept.
    assert resolve("deepseek", "deepseek-chat") is None
    monkeypatch.setattr(price_cache, "resolve", lambda provider_id, model: None)
    usage = Usage(input=1000, output=100)
    assert from_disk(tmp_path).genai_price(usage, "claude", "claude-opus-4-5") == genai_price(usage, "claude", "claude-opus-4-5")
    assert list(tmp_path.glob("*.json")) == []


def test_an_unwritable_state_directory_still_prices(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    pricer = Pricer(None, env={}, price_cache=cache_in(blocked / "price-cache"))
    assert pricer.price(Usage(input=10, output=5), "claude", None, "claude-opus-4-5") == genai_price(
        Usage(input=10, output=5), "claude", "claude-opus-4-5"
    )


def test_the_version_is_read_without_importing_genai_prices() -> None:
    assert genai_prices_version() == VERSION
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from agentlaunch.usage.price_cache import genai_prices_version as v;"
            " print(v(), 'genai_prices' in sys.modules, 'importlib.metadata' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.split() == [VERSION, "False", "False"]


def test_a_negative_count_is_unpriced_from_the_cache_too(tmp_path: Path) -> None:
    pricer = from_disk(tmp_path)
    assert pricer.genai_price(Usage(input=-5, output=3), "claude", "claude-opus-4-5") is None
    assert pricer.price(Usage(input=-5, output=3), "claude", None, "claude-opus-4-5") is None


def test_dated_prices_follow_the_call_time(filled: Path) -> None:
    # claude-sonnet-4-6 dropped its long-context tier on 2026-03-13; a call before and after prices differently.
    usage = Usage(input=250_000, output=1000)
    before, after = datetime(2026, 3, 12, 23, 59, tzinfo=UTC), datetime(2026, 3, 13, 0, 1, tzinfo=UTC)
    kept = from_disk(filled)
    assert kept.genai_price(usage, "claude", "claude-sonnet-4-6", at=before) == genai_price(
        usage, "claude", "claude-sonnet-4-6", at=before
    )
    assert kept.genai_price(usage, "claude", "claude-sonnet-4-6", at=after) == genai_price(
        usage, "claude", "claude-sonnet-4-6", at=after
    )
    assert kept.genai_price(usage, "claude", "claude-sonnet-4-6", at=before) != kept.genai_price(
        usage, "claude", "claude-sonnet-4-6", at=after + timedelta(days=1)
    )


def test_resolved_round_trips_through_json() -> None:
    found = resolve("google", "gemini-2.5-pro")
    assert isinstance(found, Resolved)
    again = Resolved.from_json(json.loads(json.dumps(found.as_json())))
    counts = {"input_tokens": 250_000, "cache_write_tokens": 0, "cache_read_tokens": 1000, "output_tokens": 10}
    assert again.cost(counts) == found.cost(counts)
    direct = genai_prices.calc_price(genai_prices.Usage(**counts), "gemini-2.5-pro", provider_id="google")
    assert again.cost(counts) == float(direct.total_price)
    assert Price(float(direct.total_price), "x").cost_usd == again.cost(counts)


# --------------------------------------------------------------------------- pricing.yaml, remembered by its bytes

PRICING_YAML = "claude-opus-4-5: {input: 5, output: 25, cache_read: 0.5, cache_write: 6.25}\ndefault: {input: 1.5, output: 2}\n"


def test_an_unchanged_pricing_yaml_is_not_parsed_or_checked_again(tmp_path: Path) -> None:
    agents, state = tmp_path / "agents", tmp_path / "state"
    agents.mkdir()
    (agents / "pricing.yaml").write_text(PRICING_YAML)
    first = Pricer(agents, env={}, state_dir=state).overrides
    probe = (
        "import sys, json; from pathlib import Path; from agentlaunch.usage.pricing import Pricer; "
        f"p = Pricer(Path({str(agents)!r}), env={{}}, state_dir=Path({str(state)!r})); "
        "print(json.dumps({k: [r.input, r.output, r.cache_read, r.cache_write] for k, r in p.overrides.items()}),"
        " 'yaml' in sys.modules, 'pydantic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split(" ")
    assert out[-2:] == ["False", "False\n"]
    remembered = json.loads(" ".join(out[:-2]))
    assert remembered == {k: [r.input, r.output, r.cache_read, r.cache_write] for k, r in first.items()}
    # A changed file is read again (and a bad one reported, every time, never remembered).
    (agents / "pricing.yaml").write_text("claude-opus-4-5: {input: -1, output: 25}\n")
    for _ in range(2):
        with pytest.raises(DefinitionError, match="must be >= 0"):
            Pricer(agents, env={}, state_dir=state)
    assert len(list((state / "validated-pricing").iterdir())) == 1


@pytest.mark.parametrize("content", [b"", b"[]", b'{"m": [1, 2]}', b'{"m": [1, 2, 3, -4]}', b'{"m": [1, 2, 3, "x"]}'])
def test_a_broken_pricing_memo_is_ignored(tmp_path: Path, content: bytes) -> None:
    agents, state = tmp_path / "agents", tmp_path / "state"
    agents.mkdir()
    (agents / "pricing.yaml").write_text(PRICING_YAML)
    expected = Pricer(agents, env={}, state_dir=state).overrides
    (memo,) = (state / "validated-pricing").iterdir()
    memo.write_bytes(content)
    assert Pricer(agents, env={}, state_dir=state).overrides == expected
