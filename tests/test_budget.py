"""Budgets that stop an agent, on the fake provider (exit 6, counted from the store).

Each ``run`` goes through click in this process (:func:`run_cli_inprocess`: the same command, exit code and
output, without a Python start per run); the fake CLI it launches is a real process. The exit code of a real
``agentlaunch`` process is pinned in tests/test_fast_paths.py and tests/test_run_fake.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentlaunch import paths
from agentlaunch.errors import BudgetExceeded
from agentlaunch.sinks import PricedCall, StateChanged
from agentlaunch.token_usage import Usage
from agentlaunch.usage.budget import BudgetGuard, Limits, call_tokens
from agentlaunch.usage.records import CallRecord
from agentlaunch.usage.store import Store
from tests.support.cli_runs import run_cli_inprocess

# Expensive on purpose: one fake call (about 3,300 tokens) costs a few dollars.
RATES = "fake-1: {input: 1000, output: 1000, cache_read: 1000, cache_write: 1000}\n"


def set_budget(agents_dir: Path, budget: Any, agent: str = "demo") -> None:
    path = agents_dir / agent / "agent.yaml"
    conf = yaml.safe_load(path.read_text())
    conf["budget"] = budget
    path.write_text(yaml.safe_dump(conf))


def run(agents_dir: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return run_cli_inprocess("run", *args, "--agents-dir", str(agents_dir), cwd=agents_dir.parent)


def calls() -> list[CallRecord]:
    with Store.open(paths.store_path()) as store:
        rows = store.list_sessions()
        return [c for s in rows for c in store.calls_for_session(s.session_id)]


@pytest.fixture
def priced(agents_dir: Path) -> Path:
    (agents_dir / "pricing.yaml").write_text(RATES)
    return agents_dir


def test_a_session_budget_stops_the_turn_that_crosses_it_with_exit_6(priced: Path) -> None:
    set_budget(priced, {"session_usd": 1})
    done = run(priced, "demo", "hello")
    err = done.stderr.decode()
    assert done.returncode == 6, err
    assert "budget: stopped the agent: the session budget of agent 'demo' ($1.00) is spent: $" in err
    assert "--budget-usd" in err
    (call,) = calls()  # the call that crossed it is recorded
    assert call.cost_usd is not None and call.cost_usd > 1


def test_the_tool_of_the_call_that_crossed_never_runs_and_no_call_follows(priced: Path) -> None:
    # The fake provider, like Claude Code, makes its second call as soon as the tool has run: only the tool
    # gate (its PreToolUse hook, held until the budget is checked with the crossing call counted) stops it.
    set_budget(priced, {"session_usd": 1})
    done = run(priced, "demo", "/tool hello")
    assert done.returncode == 6, done.stderr.decode()
    assert not (priced.parent / "notes.txt").exists()
    (session,) = (paths.state_dir() / "fake-provider").glob("*.json")
    assert json.loads(session.read_text())["calls"] == 1, "no call may follow the one that crossed the budget"
    assert len(calls()) == 1


def test_resuming_a_session_over_its_budget_is_refused_before_any_call_and_budget_usd_raises_it(priced: Path) -> None:
    assert run(priced, "demo", "hello").returncode == 0  # no budget yet
    spent = sum(c.cost_usd or 0 for c in calls())
    set_budget(priced, {"session_usd": round(spent / 2, 2)})
    again = run(priced, "demo", "-c", "more")
    assert again.returncode == 6, again.stderr.decode()
    assert "budget: not starting: the session budget of agent 'demo'" in again.stderr.decode()
    assert len(calls()) == 1  # refused before any call
    raised = run(priced, "demo", "-c", "more", "--budget-usd", str(round(spent * 10, 2)))
    assert raised.returncode == 0, raised.stderr.decode()
    assert len(calls()) == 2
    fresh = run(priced, "demo", "a new session")  # a new session has spent nothing of its session budget
    assert fresh.returncode == 6 and "budget: stopped the agent" in fresh.stderr.decode()


def test_a_spent_daily_budget_refuses_a_new_session(priced: Path) -> None:
    set_budget(priced, {"daily_usd": 1})
    assert run(priced, "demo", "hello").returncode == 6  # crossed: stopped
    refused = run(priced, "demo", "hello again")
    assert refused.returncode == 6
    assert "budget: not starting: today's budget of agent 'demo' ($1.00) is spent" in refused.stderr.decode()
    assert len(calls()) == 1


def test_eighty_percent_warns_once(priced: Path) -> None:
    assert run(priced, "demo", "hello").returncode == 0
    one = calls()[0].cost_usd or 0
    set_budget(priced, {"daily_usd": round(one * 2.3, 4)})  # the 2nd call passes 80 %, the 3rd 100 %
    second = run(priced, "demo", "-c", "two")
    assert second.returncode == 0 and second.stderr.decode().count("(80 % reached)") == 1
    third = run(priced, "demo", "-c", "three")
    assert third.returncode == 6 and "(80 % reached)" not in third.stderr.decode()


def test_a_global_daily_budget_counts_every_agent(priced: Path, isolated_home: Path) -> None:
    config = Path(os.environ["AGENTLAUNCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    assert run(priced, "demo", "hello").returncode == 0
    spent = calls()[0].cost_usd or 0
    (config / "config.yaml").write_text(f"budget: {{daily_usd: {spent / 2}}}\n")
    other = priced / "other"
    other.mkdir()
    (other / "agent.yaml").write_text("provider: fake\nmodel: fake-1\nworking_dir: '@scratch'\n")
    refused = run(priced, "other", "hi")
    assert refused.returncode == 6
    assert "today's budget for all agents" in refused.stderr.decode() and "config.yaml" in refused.stderr.decode()


def test_a_usd_budget_over_unpriced_calls_is_refused_unless_a_token_budget_is_given(agents_dir: Path) -> None:
    set_budget(agents_dir, {"session_usd": 5})  # no pricing.yaml: fake-1 cannot be priced
    refused = run(agents_dir, "demo", "hello")
    assert refused.returncode == 6
    assert "a USD budget cannot be enforced, because calls of fake-1 cannot be priced" in refused.stderr.decode()
    assert calls() == []
    set_budget(agents_dir, {"session_usd": 5, "session_tokens": 1_000_000})
    assert run(agents_dir, "demo", "hello").returncode == 0


def test_a_token_budget_stops_the_agent(agents_dir: Path) -> None:
    set_budget(agents_dir, {"session_tokens": 100})
    done = run(agents_dir, "demo", "hello")
    assert done.returncode == 6
    assert "the session token budget of agent 'demo' (100 tokens) is spent:" in done.stderr.decode()


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        ({"session_usd": -1}, "budget.session_usd: Input should be greater than 0"),
        ({"session_usd": 0}, "budget.session_usd: Input should be greater than 0"),
        ({"daily_usd": "ten"}, "budget.daily_usd: Input should be a valid number"),
        ({"session_eur": 5}, "budget.session_eur: unknown key (allowed: session_usd, daily_usd, session_tokens, daily_tokens"),
        ({"daily_tokens": 1.5}, "budget.daily_tokens: Input should be a valid integer"),
        ("lots", "budget: Input should be a valid dictionary"),
    ],
)
def test_bad_budgets_are_definition_errors_naming_the_field(agents_dir: Path, budget: Any, message: str) -> None:
    set_budget(agents_dir, budget)
    done = run(agents_dir, "demo", "hello")
    assert done.returncode == 3
    assert message in done.stderr.decode()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("budget: {daily_usd: -3}\n", "budget.daily_usd: must be an amount of US dollars above 0 (got -3)"),
        ("budget: {daily_usd: .nan}\n", "budget.daily_usd: must be an amount of US dollars above 0"),
        ("budget: {daily_gbp: 3}\n", "budget.daily_gbp: unknown key (allowed: daily_usd, daily_tokens, on_spent; budgets"),
        ("budget: [1]\n", "budget: must be a mapping with daily_usd and/or daily_tokens"),
        ("budget: {daily_usd: [\n", "yaml:"),
    ],
)
def test_a_bad_global_budget_is_a_definition_error_naming_the_file(agents_dir: Path, text: str, message: str) -> None:
    config = Path(os.environ["AGENTLAUNCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.yaml").write_text(text)
    done = run(agents_dir, "demo", "hello")
    assert done.returncode == 3
    assert "config.yaml" in done.stderr.decode() and message in done.stderr.decode()


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "ten"])
def test_a_bad_budget_usd_is_a_usage_error(agents_dir: Path, value: str) -> None:
    done = run(agents_dir, "demo", "hello", "--budget-usd", value)
    assert done.returncode == 2, done.stderr.decode()


# -- the guard in process -------------------------------------------------------------


class Clock:
    def __init__(self, now: datetime) -> None:
        self._now = now

    def monotonic(self) -> float:
        return 0.0

    def now(self) -> datetime:
        return self._now


class View:
    """The part of a launch the guard reads and asks."""

    def __init__(self, resumed: bool = False) -> None:
        from agentlaunch.definitions.spec import load_agent

        self.spec = load_agent(Path(__file__).parent.parent / "agents", "demo", None)
        self.session_id, self.resumed = "s-today", resumed
        self.stopped: BudgetExceeded | None = None
        self.notices: list[str] = []

    def stop(self, error: Any) -> None:
        self.stopped = self.stopped or error

    def notice(self, message: str) -> None:
        self.notices.append(message)


def test_a_clock_set_back_across_midnight_still_counts_the_calls_stamped_later(tmp_path: Path) -> None:
    # The clock says 23:55 on the 1st, but calls were stamped at 00:05 on the 2nd (before it was set back):
    # they count against the 1st's budget rather than vanish.
    local = datetime(2026, 12, 1, 23, 55).astimezone()
    with Store.open(tmp_path / "usage.sqlite3") as store:
        store.start_session("s-yesterday", agent="demo", provider="fake", working_dir="/w", model="fake-1")
        later = (local + timedelta(minutes=10)).astimezone(UTC)
        store.record_call(
            CallRecord(agent="demo", provider="fake", usage=Usage(input=10), session_id="s-yesterday", cost_usd=2.0, at=later)
        )
        guard = BudgetGuard(Limits(daily_usd=1.5), store, Clock(local), priceable=True)
        view = View()
        with pytest.raises(BudgetExceeded, match=r"today's budget of agent 'demo' \(\$1.50\) is spent: \$2.00"):
            guard.event(StateChanged("starting"), view)  # type: ignore[arg-type]
        # a call of the day before does not count: $2.00 of today stays under $2.50
        earlier = (local - timedelta(days=1)).astimezone(UTC)
        store.record_call(
            CallRecord(agent="demo", provider="fake", usage=Usage(input=10), session_id="s-yesterday", cost_usd=5.0, at=earlier)
        )
        guard = BudgetGuard(Limits(daily_usd=2.5), store, Clock(local), priceable=True)
        guard.event(StateChanged("starting"), view)  # type: ignore[arg-type]


def test_the_guard_stops_at_the_call_that_crosses_and_warns_once(tmp_path: Path) -> None:
    now = datetime(2026, 12, 1, 12, 0).astimezone()
    with Store.open(tmp_path / "usage.sqlite3") as store:
        store.start_session("s-today", agent="demo", provider="fake", working_dir="/w", model="fake-1")
        guard = BudgetGuard(Limits(session_usd=1.0), store, Clock(now), priceable=True)
        view = View()
        for cost in (0.5, 0.35, 0.1, 0.1):
            record = CallRecord(agent="demo", provider="fake", usage=Usage(input=1), session_id="s-today", cost_usd=cost, at=now)
            store.record_call(record)
            guard.event(PricedCall(record), view)  # type: ignore[arg-type]
            if view.stopped:
                break
        assert len(view.notices) == 1 and "80 % reached" in view.notices[0]
        assert view.stopped is not None and "$1.05 so far" in view.stopped.message


def test_call_tokens_are_all_input_and_output() -> None:
    assert call_tokens(Usage(input=1, cache_write=20, cache_read=300, output=4000, reasoning=7)) == 4321
