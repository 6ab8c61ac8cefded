"""The launch's side of a held tool whose call is not read (issue 41): decided on the call's worst cost with the
launch's own pricer and window, at once; an early ask the bound does not allow is left unanswered, a late one is
refused with both reasons, and a spent budget refuses either way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentlaunch.errors import BudgetExceeded
from agentlaunch.events import ContextWindow
from agentlaunch.launch.tool_gates import ToolGates
from agentlaunch.providers.native.claude_source import UNDECIDED
from agentlaunch.providers.native.source import ToolAsked
from agentlaunch.usage.call_meter import CallMeter
from agentlaunch.usage.meter import Meter
from agentlaunch.usage.pricing import Pricer

LABEL = "the session budget of agent 'spender'"


class Guard:
    """The budget guard as the gates ask it: ``spent`` so far against a session limit, or a spent budget."""

    def __init__(self, spent: float, limit: float, *, spent_budget: bool = False) -> None:
        self.spent, self.limit, self.spent_budget = spent, limit, spent_budget

    def check(self, launch: Launch) -> None:
        if self.spent_budget:
            launch.paused = BudgetExceeded("budget: paused the agent: spent", hint="raise it", spent="spent")

    def headroom(self, launch: Launch) -> list[tuple[str, float, float, str]]:
        return [("session_usd", self.spent, self.limit, LABEL)]


class Launch:
    stopped: Any = None
    paused: Any = None
    child: Any = object()


def gates(tmp_path: Path, guard: Guard, model: str | None = "claude-sonnet-4-5") -> ToolGates:
    rates = {"AGENTLAUNCH_PRICE_INPUT": "3", "AGENTLAUNCH_PRICE_OUTPUT": "15"}  # cache writes: the input rate, 1 h: 2x
    pricer = Pricer(config_dir=tmp_path, env=rates, use_genai_prices=False, state_dir=tmp_path)
    meter = Meter(model=model)
    return ToolGates(guard, CallMeter(meter, pricer, agent="spender", provider="claude", model=model))  # type: ignore[arg-type]


def asked(early: bool, unread: int = 1) -> tuple[ToolAsked, list[tuple[bool, str]]]:
    answers: list[tuple[bool, str]] = []
    return ToolAsked(lambda allow, reason: answers.append((allow, reason)), UNDECIDED, unread, early), answers


def test_far_from_the_limit_a_tool_whose_call_is_unread_runs_at_once(tmp_path: Path) -> None:
    tool, answers = asked(early=True)
    assert gates(tmp_path, Guard(0.01, 5.0)).asked(Launch(), tool) is None  # type: ignore[arg-type]
    assert answers == [(True, "")]  # one Sonnet call at worst: 200,000 x $6/M + 64,000 x $15/M = $2.16


def test_near_the_limit_it_waits_then_is_refused_with_the_bound_on_the_row(tmp_path: Path) -> None:
    tool_gates = gates(tmp_path, Guard(0.01, 2.0))
    tool, answers = asked(early=True)
    assert tool_gates.asked(Launch(), tool) is None and answers == []  # left held: its line may yet be read
    late, answers = asked(early=False)
    reason = tool_gates.asked(Launch(), late)  # type: ignore[arg-type]
    why = f"{UNDECIDED}: at its worst that call could spend {LABEL} ($2.00): $0.01 spent, up to $2.16 more"
    assert reason == why and answers == [(False, why)]


def test_two_unread_calls_count_twice_and_the_window_the_cli_reports_bounds_the_input(tmp_path: Path) -> None:
    tool_gates = gates(tmp_path, Guard(0.01, 5.0))
    tool, answers = asked(early=False, unread=3)  # 3 x $2.16
    assert tool_gates.asked(Launch(), tool) is not None and not answers[0][0]  # type: ignore[arg-type]
    assert tool_gates.calls is not None
    tool_gates.calls.count(ContextWindow(1_000_000, "claude-sonnet-4-5"))  # the status line: a 1M window
    assert tool_gates.calls.worst_call().window == 1_000_000
    tool, answers = asked(early=True)
    assert tool_gates.asked(Launch(), tool) is None and answers == []  # $6.96 at worst: over $5  # type: ignore[arg-type]


def test_a_model_without_a_price_is_refused_and_says_so(tmp_path: Path) -> None:
    pricer = Pricer(config_dir=tmp_path, env={}, use_genai_prices=False, state_dir=tmp_path)
    meter = Meter(model="claude-sonnet-4-5")
    tool_gates = ToolGates(Guard(0.0, 100.0), CallMeter(meter, pricer, agent="a", provider="claude", model=None))  # type: ignore[arg-type]
    tool, answers = asked(early=False)
    reason = tool_gates.asked(Launch(), tool)  # type: ignore[arg-type]
    assert reason == f"{UNDECIDED}: no price is known for claude-sonnet-4-5, so the call's worst cost is unknown"


def test_a_read_call_is_decided_by_the_budget_alone_and_a_spent_one_refuses_at_once(tmp_path: Path) -> None:
    answers: list[tuple[bool, str]] = []
    read = ToolAsked(lambda allow, reason: answers.append((allow, reason)))
    assert gates(tmp_path, Guard(1.99, 2.0)).asked(Launch(), read) is None and answers == [(True, "")]  # type: ignore[arg-type]
    tool, answers = asked(early=True)
    launch = Launch()
    assert gates(tmp_path, Guard(3.0, 2.0, spent_budget=True)).asked(launch, tool) == ""  # type: ignore[arg-type]
    assert answers == [(False, "budget: paused the agent: spent")]
