"""``budget.on_spent: pause``: the setting and its bad values, the guard's pause, confirmation and raised limits,
the control socket's ``resume_budget`` request, ``agentlaunch resume-budget``'s refusals, and how the state reads.

The pause itself, end to end on the real CLIs, is in tests/e2e/test_budget_pause_e2e.py.
"""

from __future__ import annotations

import os
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentlaunch.errors import BudgetExceeded
from agentlaunch.launch.budget_pause import stamp_of
from agentlaunch.launch.control_client import ControlClient
from agentlaunch.launch.control_door import busy_reason
from agentlaunch.launch.control_request import Parsed, parse_request
from agentlaunch.live.needs_you import ALARMS
from agentlaunch.live.status_read import NEEDS_YOU, one_line, shown_state
from agentlaunch.sinks import PricedCall, TurnDone
from agentlaunch.token_usage import Usage
from agentlaunch.usage.budget import BudgetGuard, Limits, limits_for
from agentlaunch.usage.records import CallRecord
from agentlaunch.usage.store import Store
from testbed.agent_files import write_agent
from tests.support.cli_runs import run_cli
from tests.support.control_socket import serve, state_dir, write_record
from tests.test_budget import Clock, View


def _demo(agents_dir: Path, budget: Any) -> None:
    conf = yaml.safe_load((agents_dir / "demo" / "agent.yaml").read_text())
    conf["budget"] = budget
    write_agent(agents_dir, "demo", conf)


def _run(agents_dir: Path, *args: str) -> Any:
    return run_cli("run", *args, "--agents-dir", str(agents_dir))


# -- the setting -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        ({"session_usd": 1, "on_spent": "maybe"}, "budget.on_spent: Input should be 'stop' or 'pause' (got 'maybe')"),
        ({"session_usd": 1, "on_spent": True}, "budget.on_spent: Input should be 'stop' or 'pause' (got True)"),
        ({"five_hour_percent": -5}, "budget.five_hour_percent: Input should be greater than 0 (got -5)"),
        ({"seven_day_percent": -0.5, "on_spent": "pause"}, "budget.seven_day_percent: Input should be greater than 0"),
        ({"on_spend": "pause"}, "budget.on_spend: unknown key (allowed: session_usd, daily_usd, session_tokens"),
    ],
)
def test_a_bad_on_spent_or_percentage_is_a_definition_error_naming_the_allowed_values(
    agents_dir: Path, budget: Any, message: str
) -> None:
    _demo(agents_dir, budget)
    done = _run(agents_dir, "demo", "hello")
    said = done.stderr.decode()
    assert done.returncode == 3, said
    assert message in said and "Traceback" not in said


@pytest.mark.parametrize("value", ["maybe", "'yes'", "[pause]"])
def test_a_bad_global_on_spent_names_the_file_and_the_values(agents_dir: Path, value: str) -> None:
    config = Path(os.environ["AGENTLAUNCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.yaml").write_text(f"budget: {{daily_usd: 5, on_spent: {value}}}\n")
    done = _run(agents_dir, "demo", "hello")
    said = done.stderr.decode()
    assert done.returncode == 3, said
    assert "config.yaml" in said and "budget.on_spent: must be stop or pause" in said


def test_the_agents_on_spent_wins_the_global_one_applies_else_and_stop_is_the_default() -> None:
    assert limits_for({"session_usd": 1}, {}, None).on_spent == "stop"
    assert limits_for({"session_usd": 1}, {"on_spent": "pause"}, None).on_spent == "pause"
    assert limits_for({"session_usd": 1, "on_spent": "stop"}, {"on_spent": "pause"}, None).on_spent == "stop"
    assert limits_for({"on_spent": "pause"}, {}, None).any is False  # on_spent alone sets no limit: no guard


def test_stop_stays_the_default_with_exit_6(agents_dir: Path) -> None:
    _demo(agents_dir, {"session_tokens": 1})
    first = _run(agents_dir, "demo", "hello")
    assert first.returncode == 6 and b"budget: stopped the agent" in first.stderr, first


# -- the guard ---------------------------------------------------------------------------------


class PausingView(View):
    def __init__(self) -> None:
        super().__init__()
        self.paused: BudgetExceeded | None = None
        self.pauses = 0

    def pause(self, error: Any) -> None:
        self.pauses += 1
        self.paused = self.paused or error


def _call(store: Store, now: datetime, cost: float) -> CallRecord:
    record = CallRecord(agent="demo", provider="fake", usage=Usage(input=1), session_id="s-today", cost_usd=cost, at=now)
    store.record_call(record)
    return record


def _crossed(store: Store, now: datetime) -> tuple[BudgetGuard, PausingView]:
    """A guard with a $1.00 session budget that pauses, and the view it paused at a $1.20 call."""
    store.start_session("s-today", agent="demo", provider="fake", working_dir="/w", model="fake-1")
    guard = BudgetGuard(Limits(session_usd=1.0, on_spent="pause"), store, Clock(now), priceable=True)
    view = PausingView()
    guard.event(PricedCall(_call(store, now, 1.2)), view)  # type: ignore[arg-type]
    return guard, view


def test_pause_instead_of_stop_then_one_confirmed_turn_then_paused_again(tmp_path: Path) -> None:
    now = datetime(2026, 12, 1, 12, 0).astimezone()
    with Store.open(tmp_path / "usage.sqlite3") as store:
        guard, view = _crossed(store, now)
        assert view.stopped is None and view.paused is not None
        assert view.paused.message.startswith("budget: paused the agent: the session budget of agent 'demo' ($1.00)")
        assert view.paused.exit_code == 6
        view.paused = None
        guard.confirm()  # the person: one more turn
        guard.event(PricedCall(_call(store, now, 0.3)), view)  # type: ignore[arg-type]
        guard.check(view)  # type: ignore[arg-type]
        assert view.paused is None and view.pauses == 1, "the confirmed turn's calls go"
        guard.event(TurnDone(), view)  # type: ignore[arg-type]
        guard.check(view)  # type: ignore[arg-type]
        assert view.paused is not None and view.pauses == 2, "the next turn pauses again"


def test_raised_limits_resume_and_a_limit_still_spent_is_named(tmp_path: Path) -> None:
    now = datetime(2026, 12, 1, 12, 0).astimezone()
    with Store.open(tmp_path / "usage.sqlite3") as store:
        guard, view = _crossed(store, now)
        still = guard.relimit(Limits(session_usd=1.1, on_spent="stop"), view)  # type: ignore[arg-type]
        assert still is not None and "($1.10) is spent: $1.20 so far" in still.message
        assert guard.pausing, "what a spent limit does stays as the launch started"
        assert guard.relimit(Limits(session_usd=2.0), view) is None  # type: ignore[arg-type]


# -- the control socket ------------------------------------------------------------------------


def test_a_resume_budget_request_is_parsed_and_answered_through_the_socket(tmp_path: Path) -> None:
    assert parse_request(b'{"resume_budget": true}') == Parsed("", False, resume_budget=True)
    assert isinstance(parse_request(b'{"resume_budget": 1}'), str)  # not true: a prompt request, without a prompt
    answers = iter([(False, "demo is not paused by a budget (it is waiting): nothing to resume"), (True, "resumed demo")])
    server = serve(tmp_path / "control.sock")
    server.on_resume = lambda: next(answers)
    try:
        replies: list[dict[str, Any] | None] = []
        for _ in range(2):
            client = ControlClient(str(server.path))
            thread = threading.Thread(target=lambda c=client: replies.append(c.resume_budget()))  # type: ignore[misc]
            thread.start()
            thread.join(20)
            client.close()
        assert replies[0] == {
            "ok": False,
            "error": "demo is not paused by a budget (it is waiting): nothing to resume",
            "state": None,
        }
        assert replies[1] == {"ok": True, "resumed": "resumed demo"}
        assert not server.pending(), "a resume request is never queued as a prompt"
    finally:
        server.close()


def test_a_paused_session_refuses_a_prompt_naming_the_budget_and_the_way_out() -> None:
    why = busy_reason("demo", "paused")
    assert why is not None and "demo is paused: its budget is spent" in why and "resume-budget demo" in why


# -- agentlaunch resume-budget ---------------------------------------------------------------------


def test_resume_budget_of_an_agent_not_running_is_exit_7() -> None:
    done = run_cli("resume-budget", "demo")  # a bundled example: an agent, not running
    assert done.returncode == 7 and b"demo is not running" in done.stderr, done
    typo = run_cli("resume-budget", "nobody")  # no agent at all: run's message, listing the agents
    assert typo.returncode == 3 and b"agent 'nobody' not found (agents here: " in typo.stderr, typo


def test_resume_budget_of_an_agent_that_is_not_paused_is_exit_7(tmp_path: Path) -> None:
    write_record(state_dir(), "busy", state="thinking", control=str(tmp_path / "c.sock"))
    done = run_cli("resume-budget", "busy")
    assert done.returncode == 7 and b"busy is not paused by a budget (it is thinking): nothing to resume" in done.stderr


def test_resume_budget_of_a_bad_agent_name_is_a_usage_error() -> None:
    done = run_cli("resume-budget", "../etc")
    assert done.returncode == 2, done


def test_resume_budget_of_a_paused_agent_that_says_no_is_exit_7_with_its_reason(tmp_path: Path) -> None:
    server = serve(tmp_path / "control.sock")
    server.on_resume = lambda: (False, "held ends: the session is ending")
    try:
        write_record(state_dir(), "held", state="paused", state_reason="budget", control=str(server.path))
        done = run_cli("resume-budget", "held")
    finally:
        server.close()
    assert done.returncode == 7 and b"held was not resumed: held ends: the session is ending" in done.stderr, done


def test_send_to_a_paused_agent_without_a_socket_names_the_budget() -> None:
    write_record(state_dir(), "still", state="paused", state_reason="budget", control=None)
    done = run_cli("send", "still", "hi")
    assert done.returncode == 7 and b"still is paused: its budget is spent" in done.stderr, done


# -- how it reads ------------------------------------------------------------------------------


def test_paused_reads_paused_budget_and_needs_the_person() -> None:
    record = {"agent": "demo", "state": "paused", "state_reason": "budget"}
    assert shown_state("paused", record) == "paused: budget"
    assert "paused: budget" in one_line(record)
    assert "paused" in NEEDS_YOU and "resume-budget" in ALARMS["paused"]


def test_the_watch_sees_a_file_change_and_a_file_gone(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("a: 1\n")
    before = stamp_of((path, tmp_path / "missing.yaml"))
    assert before[1] is None
    path.write_text("a: 22\n")
    assert stamp_of((path, tmp_path / "missing.yaml")) != before


# -- the deck's key --------------------------------------------------------------------------------


def test_the_decks_b_resumes_a_paused_agent_after_a_yes_and_refuses_one_that_is_not_paused(
    agents_dir: Path, tmp_path: Path
) -> None:
    from textual.pilot import Pilot

    from agentlaunch.deck.app import Deck
    from tests.support.deck_pilot import drive, message, record, settle, sources, table_rows

    asked: list[str] = []
    server = serve(tmp_path / "control.sock")

    def on_resume() -> tuple[bool, str]:
        asked.append("resume")
        return True, "resumed spender for one more turn"

    server.on_resume = on_resume
    record("spender", "paused", 20, state_reason="budget", control=str(server.path))
    record("calm", "thinking", 10)

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        rows = table_rows(app)
        assert rows[0][0] == "spender" and rows[0][1].startswith("paused: budget")
        await pilot.press("b")
        await pilot.press("y")
        await settle(pilot, lambda: "resumed spender for one more turn" in message(app), app, "the resume")
        assert asked == ["resume"]
        await pilot.press("down", "b")
        assert message(app) == "calm is not paused by a budget (thinking)"
        assert asked == ["resume"]

    try:
        drive(Deck(sources(agents_dir)), script)
    finally:
        server.close()
