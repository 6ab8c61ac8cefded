"""The plan's limits (a subscription's 5-hour and 7-day windows): read from what Claude Code reports, kept on the meter,
held in the status record, said on one line, and a budget that stops at a share of them. In process, fast."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.errors import DefinitionError
from agentlaunch.events import CacheTtl, CallUsage, RateLimits, RateWindow, Warning
from agentlaunch.live.status import checked_record, one_line
from agentlaunch.providers.claude_parser import ClaudeParser
from agentlaunch.providers.native.claude_status_report import StatusReport
from agentlaunch.providers.rate_limits import read_rate_limits
from agentlaunch.token_usage import Usage
from agentlaunch.usage import plan_limits
from agentlaunch.usage.budget import BudgetGuard, Limits, limits_for
from agentlaunch.usage.meter import Meter
from agentlaunch.usage.store import Store
from testbed.agent_files import write_agent
from tests.test_budget import View as BudgetView

RESET = 1796171692  # 2026-12-02 (unix seconds)
NOW = datetime.fromtimestamp(RESET - 3000, UTC)


def headless_line(five: object, seven: object = None, reset: object = RESET) -> dict[str, Any]:
    """A ``rate_limit_event`` line as Claude Code 2.1.332 prints it (measured against the fake API with a gateway token)."""
    windows: dict[str, Any] = {"five_hour": {"utilization": five, "resetsAt": reset, "status": "allowed"}}
    if seven is not None:
        windows["seven_day"] = {"utilization": seven, "resetsAt": RESET + 86400, "status": "allowed"}
    info = {"status": "allowed", "resetsAt": RESET, "isUsingOverage": False, "unifiedWindows": windows}
    return {"type": "rate_limit_event", "rate_limit_info": info, "session_id": "s"}


# -- reading ------------------------------------------------------------------------------------------


def test_the_headless_event_gives_percentages_from_fractions() -> None:
    parser = ClaudeParser()
    (event,) = parser.event(headless_line(0.42, 0.1))
    assert event == RateLimits(RateWindow(42.0, RESET), RateWindow(10.0, RESET + 86400))
    assert event.as_dict()["five_hour"] == {"used_percent": 42.0, "resets_at": RESET}


def test_a_fraction_past_the_cap_is_capped_at_100_as_the_cli_does() -> None:
    (event,) = ClaudeParser().event(headless_line(1.3))
    assert isinstance(event, RateLimits) and event.five_hour == RateWindow(100.0, RESET)


@pytest.mark.parametrize(
    ("value", "said"),
    [("42", "'42', not a number"), (-0.1, "negative"), (True, "True, not a number"), ([1], "list, not a number")],
)
def test_a_figure_that_is_not_a_usable_number_is_left_out_with_one_warning(value: object, said: str) -> None:
    parser = ClaudeParser()
    first = parser.event(headless_line(value, 0.1))
    assert [type(e) for e in first] == [Warning, RateLimits]
    assert said in first[0].message and "five_hour.utilization" in first[0].message  # type: ignore[attr-defined]
    assert first[1] == RateLimits(None, RateWindow(10.0, RESET + 86400))
    assert parser.event(headless_line(value, 0.1)) == [first[1]]  # said once a session


def test_a_reset_that_is_not_a_time_leaves_the_window_out() -> None:
    limits, problems = read_rate_limits(
        {"five_hour": {"used_percentage": 5, "resets_at": "soon"}},
        where="rate_limits",
        percent_key="used_percentage",
        reset_key="resets_at",
    )
    assert limits is None and problems == ["rate_limits.five_hour.resets_at is 'soon', not a time in unix seconds: left out"]


def test_anything_in_place_of_the_windows_is_no_limits_and_no_exception() -> None:
    for raw in (None, "x", 5, [], {"five_hour": "x"}, {"seven_day": None}):
        limits, _ = read_rate_limits(raw, where="w", percent_key="used_percentage", reset_key="resets_at")
        assert limits is None


def status_line_json(**extra: Any) -> dict[str, Any]:
    """The status-line JSON of Claude Code 2.1.332 (fields as measured; the rest left out)."""
    return {"session_id": "s", "version": "2.1.332", "model": {"id": "claude-opus-5-5"}, **extra}


def test_the_status_line_gives_limits_and_the_cache_lifetime_once_each_until_they_change() -> None:
    report = StatusReport()
    payload = status_line_json(
        rate_limits={"five_hour": {"used_percentage": 42, "resets_at": RESET}},
        prompt_cache={"warm": True, "ttl": "1h", "expires_at": RESET},
    )
    assert report.read(payload) == [RateLimits(RateWindow(42.0, RESET)), CacheTtl(3600)]
    assert report.read(payload) == []  # rendered again: nothing new
    payload["rate_limits"]["five_hour"]["used_percentage"] = 43
    assert report.read(payload) == [RateLimits(RateWindow(43.0, RESET))]


def test_a_bad_status_line_figure_is_said_once_and_an_unknown_ttl_is_ignored() -> None:
    report = StatusReport()
    payload = status_line_json(rate_limits={"five_hour": {"used_percentage": "lots"}}, prompt_cache={"ttl": "2h"})
    (warning,) = report.read(payload)
    assert isinstance(warning, Warning) and "rate_limits.five_hour.used_percentage is 'lots', not a number" in warning.message
    assert report.read(payload) == []


# -- kept, recorded, said -----------------------------------------------------------------------------


def test_the_meter_keeps_the_latest_limits_and_the_record_holds_them_under_clear_names() -> None:
    meter = Meter()
    meter.add(RateLimits(RateWindow(42.0, RESET), RateWindow(10.0, RESET + 86400)))
    record = plan_limits.as_record(meter.rate_limits)
    assert record == {
        "five_hour": {"used_percent": 42.0, "resets_at": "2026-12-02T00:34:52+00:00"},
        "seven_day": {"used_percent": 10.0, "resets_at": "2026-12-03T00:34:52+00:00"},
    }
    assert plan_limits.as_record(None) is None


def test_one_line_says_the_five_hour_window_and_when_it_resets_in_local_time() -> None:
    record = {"agent": "demo", "state": "waiting", "rate_limits": plan_limits.as_record(RateLimits(RateWindow(42.0, RESET)))}
    local = datetime.fromtimestamp(RESET).astimezone()
    assert f"demo · waiting · 5h 42% · resets {local:%H:%M}" == one_line(record, NOW)
    # past its reset the window started again: its figure is old and is not shown
    assert "5h" not in one_line(record, NOW + timedelta(hours=2))


def test_a_record_from_anyone_keeps_only_windows_of_the_right_shape() -> None:
    data = {
        "agent": "a",
        "rate_limits": {
            "five_hour": {"used_percent": "42", "resets_at": None},
            "seven_day": {"used_percent": 12.5, "resets_at": "2026-12-03T00:34:52+00:00"},
            "other": {"used_percent": 1},
        },
    }
    kept = checked_record(data)
    assert kept["rate_limits"] == {"seven_day": {"used_percent": 12.5, "resets_at": "2026-12-03T00:34:52+00:00"}}
    for bad in ("x", [], {"five_hour": {"used_percent": 101}}, {"five_hour": {"used_percent": 5, "resets_at": "noon"}}):
        assert checked_record({"rate_limits": bad})["rate_limits"] is None
    assert one_line({"agent": "a", "state": "waiting", "rate_limits": {"five_hour": {"used_percent": -3}}}) == "a · waiting"


# -- the budget ---------------------------------------------------------------------------------------


class Clock:
    def monotonic(self) -> float:
        return 0.0

    def now(self) -> datetime:
        return NOW


class View(BudgetView):
    """The part of a launch the guard reads and asks, with the meter that holds the plan's limits."""

    def __init__(self) -> None:
        super().__init__()
        self.meter = Meter()


def reported(view: View, guard: BudgetGuard, percent: float, reset: int = RESET) -> None:
    event = RateLimits(RateWindow(percent, reset))
    view.meter.add(event)
    guard.event(event, view)  # type: ignore[arg-type]


def test_a_five_hour_budget_warns_at_80_percent_of_it_and_stops_at_it(tmp_path: Path) -> None:
    with Store.open(tmp_path / "usage.sqlite3") as store:
        guard = BudgetGuard(limits_for({"five_hour_percent": 90}, {}, None), store, Clock(), priceable=True)  # type: ignore[arg-type]
        view = View()
        reported(view, guard, 50)
        assert view.stopped is None and view.notices == []
        reported(view, guard, 75)
        assert view.notices == ["budget: the 5-hour plan-limit budget of agent 'demo': 75% of 90% spent (80 % reached)"]
        reported(view, guard, 91)
        assert view.stopped is not None
        assert "stopped the agent: the 5-hour plan-limit budget of agent 'demo' (90%) is spent: 91% so far" in str(view.stopped)
        assert "five_hour_percent" in (view.stopped.hint or "")


def test_a_window_past_its_reset_does_not_stop_the_agent(tmp_path: Path) -> None:
    with Store.open(tmp_path / "usage.sqlite3") as store:
        guard = BudgetGuard(Limits(five_hour_percent=90), store, Clock(), priceable=True)  # type: ignore[arg-type]
        view = View()
        reported(view, guard, 99, reset=int(NOW.timestamp()) - 1)
        assert view.stopped is None
        guard.check(view)  # type: ignore[arg-type]  # before a held tool: the same
        assert view.stopped is None


def test_with_no_limits_reported_a_plan_budget_never_stops(tmp_path: Path) -> None:
    with Store.open(tmp_path / "usage.sqlite3") as store:
        guard = BudgetGuard(Limits(seven_day_percent=1), store, Clock(), priceable=True)  # type: ignore[arg-type]
        view = View()
        guard.check(view)  # type: ignore[arg-type]
        view.meter.add(CallUsage(Usage(input=10)))
        guard.check(view)  # type: ignore[arg-type]
        assert view.stopped is None


# -- agent.yaml -----------------------------------------------------------------------------------------


def load(tmp_path: Path, **conf: Any) -> Any:
    from agentlaunch.definitions.spec import load_agent

    agents = tmp_path / "agents"
    write_agent(agents, "a", {"provider": "claude", "model": "claude-sonnet-4-5", **conf})
    return load_agent(agents, "a", None)


@pytest.mark.parametrize(
    ("budget", "said"),
    [
        ({"five_hour_percent": -5}, "budget.five_hour_percent: Input should be greater than 0 (got -5)"),
        ({"five_hour_percent": 120}, "budget.five_hour_percent: Input should be less than or equal to 100 (got 120)"),
        ({"seven_day_percent": "90%"}, "budget.seven_day_percent: Input should be a valid number (got '90%')"),
        ({"hourly_percent": 5}, "five_hour_percent, seven_day_percent"),
    ],
)
def test_a_bad_plan_budget_is_a_clear_error_naming_agent_yaml(tmp_path: Path, budget: dict[str, Any], said: str) -> None:
    with pytest.raises(DefinitionError) as caught:
        load(tmp_path, budget=budget)
    text = "\n".join(caught.value.problems)
    assert "agent.yaml: budget." in text and said in text


def test_a_plan_budget_loads() -> None:
    spec_budget = {"five_hour_percent": 90, "seven_day_percent": 75.5}
    assert limits_for(spec_budget, {}, None) == Limits(five_hour_percent=90, seven_day_percent=75.5)


def test_the_status_record_of_a_launch_carries_rate_limits_as_json() -> None:
    record = {"rate_limits": plan_limits.as_record(RateLimits(None, RateWindow(3.5, None)))}
    assert json.loads(json.dumps(record)) == {"rate_limits": {"seven_day": {"used_percent": 3.5, "resets_at": None}}}
    assert plan_limits.limits_text(record, NOW) == "7d 3.5%"


def test_agentlaunchs_line_inside_claude_code_says_the_plan_limits_from_its_json() -> None:
    from agentlaunch.providers.native.claude_statusline import ours

    now = float(RESET - 3000)
    info = {
        "rate_limits": {
            "five_hour": {"used_percentage": 42, "resets_at": RESET},
            "seven_day": {"used_percentage": "x", "resets_at": RESET},
        }
    }
    local = datetime.fromtimestamp(RESET).astimezone()
    assert ours(info, {}, now) == f"ctx 0 · 5h 42% · resets {local:%H:%M}"
    assert ours(info, {}, float(RESET + 1)) == "ctx 0"  # the window started again
    assert ours({"rate_limits": {"five_hour": {"used_percentage": -1}}}, {}, now) == "ctx 0"


def test_the_chats_counters_line_says_the_plan_limits_while_they_run() -> None:
    from agentlaunch.live.view import counters

    meter = Meter()
    assert "5h" not in counters(meter)
    later = int(datetime.now(UTC).timestamp()) + 3600
    meter.add(RateLimits(RateWindow(42.0, later)))
    assert f"5h 42% · resets {datetime.fromtimestamp(later).astimezone():%H:%M}" in counters(meter)
