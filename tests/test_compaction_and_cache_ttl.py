"""agent.yaml's ``compaction_at`` and ``cache_ttl``: checked against what Claude Code 2.1.332 accepts, passed to it, and
used by the meter and the cache clock. In process, fast (the real CLI's behaviour is pinned in tests/e2e)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.definitions.spec import load_agent
from agentlaunch.errors import DefinitionError
from agentlaunch.events import CacheTtl, CallUsage, Compaction, ContextWindow
from agentlaunch.providers import get_adapter
from agentlaunch.token_usage import Usage
from agentlaunch.usage.cache_lifetime import FIVE_MINUTES, ONE_HOUR, lifetime
from agentlaunch.usage.call_meter import CallMeter
from agentlaunch.usage.meter import Meter
from agentlaunch.usage.pricing import Pricer
from testbed.agent_files import write_agent


def load(tmp_path: Path, **conf: Any) -> Any:
    agents = tmp_path / "agents"
    write_agent(agents, "a", {"provider": "claude", "model": "claude-sonnet-4-5", **conf})
    return load_agent(agents, "a", None)


def problems(tmp_path: Path, **conf: Any) -> str:
    with pytest.raises(DefinitionError) as caught:
        load(tmp_path, **conf)
    return "\n".join(caught.value.problems)


# -- compaction_at --------------------------------------------------------------------------------------


def test_compaction_at_is_passed_as_the_window_claude_code_compacts_33000_tokens_below() -> None:
    spec = load_agent_inline(compaction_at=120_000)
    argv, _ = get_adapter("claude").shared_flags(spec)  # type: ignore[attr-defined]
    assert argv[argv.index("--autocompact") + 1] == "153000"
    interface = get_adapter("claude").interface_argv(  # type: ignore[attr-defined]
        spec, "claude", session_id="s", resumed=False, state={}, placement_argv=[], extra_argv=[], prompt=""
    )
    assert "--autocompact" in interface


def load_agent_inline(**conf: Any) -> Any:
    import tempfile

    return load(Path(tempfile.mkdtemp()), **conf)


def test_without_compaction_at_no_flag_is_passed() -> None:
    argv, _ = get_adapter("claude").shared_flags(load_agent_inline())  # type: ignore[attr-defined]
    assert "--autocompact" not in argv


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (
            50_000,
            "agent.yaml: compaction_at: 50,000 is below the CLI's minimum: --autocompact takes at least 100,000 and "
            "compacts 33,000 tokens before it, so compaction_at is at least 67,000",
        ),
        (
            180_000,
            "agent.yaml: compaction_at: 180,000 is above where the model's 200,000-token window lets the CLI compact "
            "(167,000: it keeps 33,000 tokens for the summary)",
        ),
        ("150k", "agent.yaml: compaction_at: Input should be a valid integer (got '150k')"),
        (1.5e5, "agent.yaml: compaction_at: Input should be a valid integer (got 150000.0)"),
        (-1, "agent.yaml: compaction_at: Input should be greater than 0 (got -1)"),
    ],
)
def test_a_bad_compaction_at_is_a_clear_error_naming_agent_yaml(tmp_path: Path, value: object, said: str) -> None:
    assert said in problems(tmp_path, compaction_at=value)


def test_the_window_in_agent_yaml_bounds_compaction_at(tmp_path: Path) -> None:
    assert load(tmp_path, compaction_at=500_000, context_window=1_000_000).compaction_at == 500_000
    assert "above where the model's 120,000-token window" in problems(tmp_path, compaction_at=100_000, context_window=120_000)


def test_a_provider_without_a_compaction_flag_refuses_compaction_at(tmp_path: Path) -> None:
    said = problems(tmp_path, provider="gemini", model="gemini-2.5-pro", compaction_at=100_000)
    assert "compaction_at: provider gemini takes no compaction point (providers claude and codex do)" in said


def test_codex_gets_compaction_at_as_its_auto_compact_limit_in_every_route(tmp_path: Path) -> None:
    spec = load(tmp_path, provider="codex", model="gpt-5.5", compaction_at=20_010)
    flag = ["-c", "model_auto_compact_token_limit=20010"]  # no reserve: Codex compacts at the limit (measured)
    turn = get_adapter("codex").plan_turn(spec, "codex", {}, "hi")
    assert turn.argv[1:7] == ["-c", "check_for_update_on_startup=false", "-c", "analytics.enabled=false", *flag]
    tui = get_adapter("codex").interface_argv(
        spec, "codex", session_id="s", resumed=False, state={}, placement_argv=[], extra_argv=[], prompt=""
    )
    assert tui[5:7] == flag
    assert load(tmp_path, provider="codex", model="gpt-5.5", compaction_at=1).compaction_at == 1  # any positive limit
    assert "above where the model's 272,000-token window" in problems(
        tmp_path, provider="codex", model="gpt-5.5", compaction_at=272_001
    )


def test_the_meter_counts_to_the_set_compaction_point_and_warns_there() -> None:
    meter = Meter(configured_window=200_000, compaction_at=100_000)
    assert meter.threshold == 100_000
    assert meter.add(CallUsage(Usage(input=90_000))) is None
    assert meter.to_compaction == 10_000
    warning = meter.add(CallUsage(Usage(input=100_500)))
    assert warning is not None and warning.threshold == 100_000 and warning.window == 200_000
    meter.add(Compaction("auto"))
    assert meter.add(CallUsage(Usage(input=101_000))) is not None  # a compaction re-arms it


def test_a_set_point_is_known_before_the_window_is_and_never_past_where_the_cli_compacts_anyway() -> None:
    meter = Meter(compaction_at=100_000)  # no window known yet (a model the table does not know)
    assert meter.compaction_known and meter.threshold == 100_000
    meter.add(CallUsage(Usage(input=5)))
    assert meter.to_compaction == 99_995
    meter.add(ContextWindow(120_000))  # the CLI's report: it clamps to the model's window
    assert meter.threshold == 87_000
    assert Meter(configured_window=200_000).threshold == 167_000  # unset: the window less the buffer, as before


# -- cache_ttl -------------------------------------------------------------------------------------------


def test_cache_ttl_sets_claude_codes_variable(tmp_path: Path) -> None:
    spec = load(tmp_path, cache_ttl="1h")
    delivered = get_adapter("claude").deliver(spec, "x", tmp_path / "i.md", None, tmp_path, {})
    assert delivered.env == {"CLAUDE_CODE_PROMPT_CACHE_TTL": "1h"}
    assert get_adapter("claude").deliver(load(tmp_path), "x", tmp_path / "i.md", None, tmp_path, {}).env == {}


@pytest.mark.parametrize(
    ("conf", "said"),
    [
        ({"cache_ttl": "2h"}, "agent.yaml: cache_ttl: Input should be '5m' or '1h' (got '2h')"),
        ({"cache_ttl": 3600}, "agent.yaml: cache_ttl: Input should be '5m' or '1h' (got 3600)"),
        (
            {"cache_ttl": "1h", "env": {"CLAUDE_CODE_PROMPT_CACHE_TTL": "5m"}},
            "agent.yaml: cache_ttl: '1h' disagrees with env.CLAUDE_CODE_PROMPT_CACHE_TTL ('5m'): keep one of them",
        ),
        (
            {"provider": "gemini", "model": "gemini-2.5-pro", "cache_ttl": "1h"},
            "cache_ttl: provider gemini does not let the prompt cache's lifetime be set (provider claude does)",
        ),
    ],
)
def test_a_bad_cache_ttl_is_a_clear_error_naming_agent_yaml(tmp_path: Path, conf: dict[str, Any], said: str) -> None:
    assert said in problems(tmp_path, **conf)


def test_the_clock_follows_what_was_written_and_what_was_asked_only_where_nothing_was_written() -> None:
    assert lifetime(None, wrote_1h=True) == ONE_HOUR
    assert lifetime(None, wrote_1h=False, wrote=True, asked=ONE_HOUR) == FIVE_MINUTES  # asked 1h, the API wrote 5m
    assert lifetime(None, wrote_1h=False, wrote=False, asked=ONE_HOUR) == ONE_HOUR  # only reads: what was asked
    assert lifetime(None, wrote_1h=False, wrote=False, asked=None) == FIVE_MINUTES


def test_the_call_meter_keeps_a_one_hour_clock_for_a_session_that_writes_one_hour_entries() -> None:
    meter = Meter()
    calls = CallMeter(meter, Pricer(), agent="a", provider="claude", model="claude-sonnet-4-5")
    at = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    calls.count(CacheTtl(3600))
    calls.price(CallUsage(Usage(input=10, cache_read=5_000)), session_id="s", turn=1, now=at)
    assert meter.cache is not None and meter.cache.ttl == ONE_HOUR  # a resumed session's first read, asked for 1h
    calls.price(CallUsage(Usage(input=10, cache_write=4_000, cache_write_1h=4_000)), session_id="s", turn=1, now=at)
    assert meter.cache.ttl == ONE_HOUR and meter.cache.expires_at == datetime(2026, 12, 1, 13, 0, tzinfo=UTC)
