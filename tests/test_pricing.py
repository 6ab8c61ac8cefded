"""Pricing: genai-prices defaults (reproducing Claude Code's own figure), overrides, and bad input."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import genai_prices
import pytest
from genai_prices import data_snapshot

from agentlaunch.errors import DefinitionError, ExitCode
from agentlaunch.token_usage import Usage
from agentlaunch.usage.pricing import Price, Pricer, Rates, format_cost, genai_price, load_pricing_file, match_override

# What Claude Code 2.1.328 reported for one turn against the fake API (reference/provider-clis.md):
# input 12, cache write 5000, cache read 9000, output 7 on claude-opus-5-5 -> total_cost_usd 0.026988.
CLAUDE_TURN = Usage(input=12, cache_write=5000, cache_read=9000, output=7)
CLAUDE_COST = 0.026988


def pricer(tmp_path: Path, yaml_text: str | None = None, env: dict[str, str] | None = None, **kw: Any) -> Pricer:
    agents = tmp_path / "agents"
    agents.mkdir(exist_ok=True)
    if yaml_text is not None:
        (agents / "pricing.yaml").write_text(yaml_text)
    return Pricer(agents, config_dir=tmp_path / "config", env=env or {}, **kw)


def write_pricing(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pricing.yaml"
    path.write_text(text)
    return path


# --------------------------------------------------------------------------- genai-prices


def test_reproduces_claude_codes_own_cost(tmp_path: Path) -> None:
    price = pricer(tmp_path).price(CLAUDE_TURN, "claude", "claude-opus-5-5", "claude-opus-5-5")
    assert price is not None
    assert price.cost_usd == pytest.approx(CLAUDE_COST, abs=1e-9)
    assert price.key == "genai-prices:anthropic/claude-opus-5-5"


def test_genai_prices_gets_total_input_with_cache_parts_separately() -> None:
    # claude-opus-4-5 list prices, USD/MTok: input 5, cache write 6.25, cache read 0.5, output 25.
    expected = (12 * 5 + 5000 * 6.25 + 9000 * 0.5 + 7 * 25) / 1e6
    price = genai_price(CLAUDE_TURN, "claude", "claude-opus-4-5")
    assert price is not None
    assert price.cost_usd == pytest.approx(expected, abs=1e-12)
    # Handing genai-prices only the uncached 12 as input_tokens is refused by genai-prices itself.
    with pytest.raises(ValueError, match="cannot exceed input_tokens"):
        genai_prices.calc_price(
            genai_prices.Usage(input_tokens=12, cache_write_tokens=5000, cache_read_tokens=9000, output_tokens=7),
            "claude-opus-4-5",
            provider_id="anthropic",
        )


def test_one_hour_cache_writes_are_priced_at_their_own_rate() -> None:
    # claude-sonnet-4-5 list prices, USD/MTok: input 3, cache write 3.75 (5 minutes) and 6 (1 hour), output 15.
    mixed = Usage(input=100, cache_write=23_456, cache_write_1h=20_000, output=10)
    price = genai_price(mixed, "claude", "claude-sonnet-4-5")
    assert price is not None
    assert price.cost_usd == pytest.approx((100 * 3 + 3_456 * 3.75 + 20_000 * 6 + 10 * 15) / 1e6, abs=1e-12)
    five_minutes = genai_price(Usage(input=100, cache_write=23_456, output=10), "claude", "claude-sonnet-4-5")
    assert five_minutes is not None and five_minutes.cost_usd < price.cost_usd


def test_one_hour_writes_in_pricing_yaml_default_to_twice_the_input_rate(tmp_path: Path) -> None:
    p = pricer(
        tmp_path, "m-default: {input: 2, output: 1, cache_write: 2.5}\nm-given: {input: 2, output: 1, cache_write_1h: 3}\n"
    )
    usage = Usage(input=0, cache_write=3_000_000, cache_write_1h=1_000_000)
    assert p.price(usage, "claude", "m-default", None) == Price(2 * 2.5 + 1 * 4.0, "pricing.yaml:m-default")
    assert p.price(usage, "claude", "m-given", None) == Price(2 * 2 + 1 * 3.0, "pricing.yaml:m-given")
    env = pricer(tmp_path, env={"AGENTLAUNCH_PRICE_INPUT": "1", "AGENTLAUNCH_PRICE_OUTPUT": "1"})
    assert env.price(usage, "claude", None, None) == Price(2 * 1 + 1 * 2.0, "env")
    rates = {"AGENTLAUNCH_PRICE_INPUT": "1", "AGENTLAUNCH_PRICE_OUTPUT": "1", "AGENTLAUNCH_PRICE_CACHE_WRITE_1H": "5"}
    env = pricer(tmp_path, env=rates)
    assert env.price(usage, "claude", None, None) == Price(2 * 1 + 1 * 5.0, "env")


def test_a_bad_one_hour_rate_names_file_line_and_field(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError) as err:
        pricer(tmp_path, "m: {input: 1, output: 1, cache_write_1h: -2}\n")
    assert "pricing.yaml:1: m.cache_write_1h: must be >= 0" in str(err.value)


def test_one_hour_writes_above_all_writes_are_unpriced(tmp_path: Path) -> None:
    assert pricer(tmp_path).price(Usage(input=1, cache_write=5, cache_write_1h=6), "claude", None, "claude-sonnet-4-5") is None


def test_usage_genai_prices_rejects_is_unpriced_not_an_error(tmp_path: Path) -> None:
    # A negative figure (say, a cumulative counter that went backwards) cannot be priced honestly.
    assert pricer(tmp_path).price(Usage(input=-5, output=3), "claude", "claude-opus-5-5", None) is None
    assert genai_price(Usage(input=-5, output=3), "claude", "claude-opus-5-5") is None
    env = {"AGENTLAUNCH_PRICE_INPUT": "1", "AGENTLAUNCH_PRICE_OUTPUT": "1"}
    assert pricer(tmp_path, env=env).price(Usage(output=-1), "fake", None, None) is None


@pytest.mark.parametrize(
    ("provider", "model", "key"),
    [
        ("claude", "claude-sonnet-4-5", "genai-prices:anthropic/claude-sonnet-4-5"),
        ("codex", "gpt-5.5", "genai-prices:openai/gpt-5.5"),
        ("gemini", "gemini-2.5-pro", "genai-prices:google/gemini-2.5-pro"),
    ],
)
def test_each_provider_maps_to_its_genai_prices_provider(tmp_path: Path, provider: str, model: str, key: str) -> None:
    price = pricer(tmp_path).price(Usage(input=1000, cache_read=1000, output=100), provider, model, None)
    assert price is not None
    assert price.key == key
    assert price.cost_usd > 0


def test_unknown_models_and_the_fake_provider_are_unpriced(tmp_path: Path) -> None:
    p = pricer(tmp_path)
    assert p.price(CLAUDE_TURN, "fake", "claude-opus-5-5", "claude-opus-5-5") is None
    assert p.price(CLAUDE_TURN, "claude", "no-such-model-xyz", None) is None
    assert p.price(CLAUDE_TURN, "claude", None, None) is None
    assert p.price(CLAUDE_TURN, "someone-else", "gpt-5.5", None) is None


def test_reported_model_first_then_requested(tmp_path: Path) -> None:
    p = pricer(tmp_path)
    both = p.price(CLAUDE_TURN, "claude", "claude-sonnet-4-5", "claude-opus-5-5")
    assert both is not None and both.key.endswith("/claude-sonnet-4-5")
    fallback = p.price(CLAUDE_TURN, "claude", "internal-alias-123", "claude-opus-5-5")
    assert fallback is not None and fallback.key.endswith("/claude-opus-5-5")


def test_genai_prices_can_be_switched_off(tmp_path: Path) -> None:
    assert pricer(tmp_path, use_genai_prices=False).price(CLAUDE_TURN, "claude", "claude-opus-5-5", None) is None


def test_pricing_never_touches_the_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("pricing tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    price = pricer(tmp_path).price(CLAUDE_TURN, "claude", "claude-opus-5-5", None)
    assert price is not None
    assert data_snapshot._custom_snapshot is None  # still the bundled snapshot, no updater ran


# --------------------------------------------------------------------------- overrides

OVERRIDES = """\
claude: {input: 1, output: 2, cache_read: 0.1, cache_write: 1.25}
claude-opus: {input: 10, output: 20, cache_read: 1, cache_write: 12.5}
Claude-Opus-5-5-Exact: {input: 100, output: 200}
default: {input: 3, output: 4}
"""


def test_exact_id_then_longest_substring(tmp_path: Path) -> None:
    p = pricer(tmp_path, OVERRIDES)
    exact = p.price(CLAUDE_TURN, "claude", "claude-opus-5-5-exact", None)
    assert exact is not None and exact.key == "pricing.yaml:Claude-Opus-5-5-Exact"
    longest = p.price(CLAUDE_TURN, "claude", "claude-opus-5-5", None)
    assert longest == Price((12 * 10 + 5000 * 12.5 + 9000 * 1 + 7 * 20) / 1e6, "pricing.yaml:claude-opus")
    shorter = p.price(CLAUDE_TURN, "claude", "claude-sonnet-4-5", None)
    assert shorter is not None and shorter.key == "pricing.yaml:claude"


def test_overrides_win_over_genai_prices_for_reported_then_requested(tmp_path: Path) -> None:
    p = pricer(tmp_path, "gpt-5.5: {input: 1, output: 1}\n")
    assert p.price(CLAUDE_TURN, "codex", "gpt-5.5", None).key == "pricing.yaml:gpt-5.5"  # type: ignore[union-attr]
    # The requested id's override beats genai-prices' price for the reported id too.
    assert p.price(CLAUDE_TURN, "codex", "gpt-5.4", "gpt-5.5").key == "pricing.yaml:gpt-5.5"  # type: ignore[union-attr]


def test_default_entry_prices_what_nobody_knows_but_not_known_models(tmp_path: Path) -> None:
    p = pricer(tmp_path, "default: {input: 3, output: 4}\n")
    unknown = p.price(CLAUDE_TURN, "fake", "fake-model", None)
    assert unknown == Price((14012 * 3 + 7 * 4) / 1e6, "pricing.yaml:default")  # cache rates default to input
    known = p.price(CLAUDE_TURN, "claude", "claude-opus-5-5", None)
    assert known is not None and known.key.startswith("genai-prices:")


def test_default_is_never_matched_as_a_substring() -> None:
    rates = Rates(1, 1, 1, 1, 2)
    assert match_override("my-default-model", {"default": rates}) is None
    assert match_override("x", {}) is None


def test_equal_length_substrings_pick_the_same_key_whatever_the_order() -> None:
    rates = Rates(1, 1, 1, 1, 2)
    assert match_override("opus-sonnet", {"sonnet": rates, "opus-s": rates}) == "opus-s"
    assert match_override("opus-sonnet", {"opus-s": rates, "sonnet": rates}) == "opus-s"


def test_agents_dir_file_before_config_dir_file(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "pricing.yaml").write_text("fake-model: {input: 2, output: 2}\n")
    from_config = pricer(tmp_path).price(Usage(input=1_000_000), "fake", "fake-model", None)
    assert from_config == Price(2.0, "pricing.yaml:fake-model")
    from_agents = pricer(tmp_path, "fake-model: {input: 5, output: 5}\n").price(
        Usage(input=1_000_000), "fake", "fake-model", None
    )
    assert from_agents == Price(5.0, "pricing.yaml:fake-model")


def test_config_dir_defaults_to_paths_config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "cfg"
    config.mkdir()
    (config / "pricing.yaml").write_text("fake-model: {input: 7, output: 7}\n")
    monkeypatch.setenv("AGENTLAUNCH_CONFIG_DIR", str(config))
    p = Pricer(None, env={})
    assert p.pricing_file == config / "pricing.yaml"
    assert p.price(Usage(input=1_000_000), "fake", "fake-model", None) == Price(7.0, "pricing.yaml:fake-model")


def test_environment_overrides_everything(tmp_path: Path) -> None:
    env = {"AGENTLAUNCH_PRICE_INPUT": "2", "AGENTLAUNCH_PRICE_OUTPUT": "8"}
    p = pricer(tmp_path, OVERRIDES, env=env)
    price = p.price(CLAUDE_TURN, "claude", "claude-opus-5-5", None)
    assert price == Price((14012 * 2 + 7 * 8) / 1e6, "env")  # cache rates default to the input rate
    assert p.price(CLAUDE_TURN, "fake", None, None) == price
    env |= {"AGENTLAUNCH_PRICE_CACHE_READ": "0.2", "AGENTLAUNCH_PRICE_CACHE_WRITE": "2.5"}
    cached = pricer(tmp_path, env=env).price(CLAUDE_TURN, "claude", "claude-opus-5-5", None)
    assert cached == Price((12 * 2 + 5000 * 2.5 + 9000 * 0.2 + 7 * 8) / 1e6, "env")


def test_environment_is_read_from_os_environ_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLAUNCH_PRICE_INPUT", "1")
    monkeypatch.setenv("AGENTLAUNCH_PRICE_OUTPUT", "1")
    assert Pricer(tmp_path).price(Usage(input=10**6), "fake", None, None) == Price(1.0, "env")


# --------------------------------------------------------------------------- bad input


def problems_of(exc: pytest.ExceptionInfo[DefinitionError]) -> list[str]:
    assert exc.value.exit_code == ExitCode.DEFINITION
    return exc.value.problems


def test_malformed_yaml_names_file_and_line(tmp_path: Path) -> None:
    path = write_pricing(tmp_path, "claude:\n  input: 1\n  output: [1, 2\nother: {}\n")
    with pytest.raises(DefinitionError) as exc:
        load_pricing_file(path)
    (problem,) = problems_of(exc)
    assert problem.startswith(f"{path}:4: invalid YAML")


def test_negative_rate_names_file_line_and_field(tmp_path: Path) -> None:
    path = write_pricing(tmp_path, "claude:\n  input: 3\n  output: -15\n")
    with pytest.raises(DefinitionError) as exc:
        load_pricing_file(path)
    assert problems_of(exc) == [f"{path}:3: claude.output: must be >= 0, got -15"]


@pytest.mark.parametrize("value", ["abc", "'3'", "true", "[1]", "{a: 1}", ".nan", ".inf"])
def test_non_numeric_rate_names_file_line_and_field(tmp_path: Path, value: str) -> None:
    path = write_pricing(tmp_path, f"# prices\nclaude:\n  input: 3\n  output: 15\n  cache_read: {value}\n")
    with pytest.raises(DefinitionError) as exc:
        load_pricing_file(path)
    (problem,) = problems_of(exc)
    assert problem.startswith(f"{path}:5: claude.cache_read: must be a number")


def test_unknown_field_is_refused(tmp_path: Path) -> None:
    path = write_pricing(tmp_path, "claude:\n  input: 3\n  output: 15\n  cache_reads: 0.3\n")
    with pytest.raises(DefinitionError) as exc:
        load_pricing_file(path)
    (problem,) = problems_of(exc)
    assert problem.startswith(f"{path}:4: claude.cache_reads: unknown field")


def test_missing_output_and_bad_shapes_are_all_reported_at_once(tmp_path: Path) -> None:
    path = write_pricing(tmp_path, "a: {input: 1}\nb: 5\nc: {input: 1, output: 1}\nc: {input: 2, output: 2}\n")
    with pytest.raises(DefinitionError) as exc:
        load_pricing_file(path)
    assert problems_of(exc) == [
        f"{path}:1: a.output: required (USD per million tokens)",
        f"{path}:2: b: must be a mapping with input, output, cache_read, cache_write",
        f"{path}:4: c: given twice",
    ]


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    path = write_pricing(tmp_path, "- claude\n- gpt\n")
    with pytest.raises(DefinitionError, match=r":1: \(top level\): must be a mapping"):
        load_pricing_file(path)


def test_empty_file_means_no_overrides(tmp_path: Path) -> None:
    assert load_pricing_file(write_pricing(tmp_path, "# nothing yet\n")) == {}


def test_pricer_checks_the_file_when_made(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError, match="claude.input"):
        pricer(tmp_path, "claude: {input: x, output: 1}\n")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"AGENTLAUNCH_PRICE_INPUT": "cheap", "AGENTLAUNCH_PRICE_OUTPUT": "1"},
            "environment: AGENTLAUNCH_PRICE_INPUT: must be a number of USD per million tokens, got 'cheap'",
        ),
        (
            {"AGENTLAUNCH_PRICE_INPUT": "1", "AGENTLAUNCH_PRICE_OUTPUT": "-2"},
            "environment: AGENTLAUNCH_PRICE_OUTPUT: must be a finite number >= 0, got '-2'",
        ),
        (
            {"AGENTLAUNCH_PRICE_INPUT": "1", "AGENTLAUNCH_PRICE_OUTPUT": "1", "AGENTLAUNCH_PRICE_CACHE_READ": "nan"},
            "environment: AGENTLAUNCH_PRICE_CACHE_READ: must be a finite number >= 0, got 'nan'",
        ),
        ({"AGENTLAUNCH_PRICE_INPUT": "1"}, "environment: AGENTLAUNCH_PRICE_OUTPUT: required when AGENTLAUNCH_PRICE_INPUT is set"),
    ],
)
def test_bad_environment_rates(tmp_path: Path, env: dict[str, str], message: str) -> None:
    with pytest.raises(DefinitionError) as exc:
        pricer(tmp_path, env=env)
    assert problems_of(exc) == [message]


# --------------------------------------------------------------------------- formatting


@pytest.mark.parametrize(
    ("cost", "text"),
    [
        (None, "unpriced"),
        (0.0166, "$0.0166"),
        (0.026988, "$0.0270"),
        (0.0, "$0.0000"),
        (0.00001, "<$0.0001"),
        (12.345, "$12.35"),
        (1234.5, "$1,234.50"),
    ],
)
def test_format_cost(cost: float | None, text: str) -> None:
    assert format_cost(cost) == text


def test_warm_up_loads_genai_prices_in_the_background_only_when_it_will_be_asked(tmp_path: Path) -> None:
    probe = """
import sys
from pathlib import Path
from agentlaunch.usage.pricing import Pricer
from agentlaunch.token_usage import Usage
root = Path(sys.argv[1])
print(Pricer(root, config_dir=root, env={}).warm_up("fake", "fake-model"), "genai_prices" in sys.modules)
env_priced = Pricer(root, config_dir=root, env={"AGENTLAUNCH_PRICE_INPUT": "1", "AGENTLAUNCH_PRICE_OUTPUT": "2"})
print(env_priced.warm_up("claude", "claude-sonnet-4-5"), "genai_prices" in sys.modules)
pricer = Pricer(root, config_dir=root, env={})
thread = pricer.warm_up("claude", "no-such-model-at-all")
thread.join(60)
print(thread.name, "genai_prices" in sys.modules)
print(pricer.price(Usage(input=1000, output=100), "claude", None, "claude-sonnet-4-5").key)
"""
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.stderr == ""  # an unknown model in the warm-up is not an error, nor a traceback
    assert done.stdout.splitlines() == [
        "None False",
        "None False",
        "genai-prices-warm-up True",
        "genai-prices:anthropic/claude-sonnet-4-5",
    ]
