"""What agentlaunch reads from ``codex app-server`` (agentlaunch.providers.codex_appserver), on hostile input too,
and when a launch goes through it. The messages' shapes are the real CLI's (tests/e2e/test_codex_appserver_contract.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.definitions.spec import load_agent
from agentlaunch.events import CallUsage, ContextWindow, PermissionRequest, RateLimits, RateWindow, SessionStarted, TurnEnd
from agentlaunch.events import Warning as WarningEvent
from agentlaunch.launch.driver_choice import driver_for
from agentlaunch.providers import codex_appserver as rpc
from agentlaunch.providers import get_adapter
from agentlaunch.providers.codex_appserver import AppServerParser
from agentlaunch.token_usage import Usage
from testbed.agent_files import write_agent

THREAD, TURN = "01a2349b-564e-7af0-927d-50209ba6c298", "01a2349b-5712-71a3-82c4-f3a7118a9ec6"


def breakdown(inp: int, cached: int, out: int, reasoning: int = 0) -> dict[str, Any]:
    return {
        "totalTokens": inp + out,
        "inputTokens": inp,
        "cachedInputTokens": cached,
        "cacheWriteInputTokens": 0,
        "outputTokens": out,
        "reasoningOutputTokens": reasoning,
    }


def usage_line(last: Any, total: Any, turn: str = TURN, window: Any = 258400) -> str:
    token_usage = {"last": last, "total": total, "modelContextWindow": window}
    return json.dumps(
        {"method": "thread/tokenUsage/updated", "params": {"threadId": THREAD, "turnId": turn, "tokenUsage": token_usage}}
    )


def in_turn() -> AppServerParser:
    parser = AppServerParser()
    parser.read_line(json.dumps({"id": 2, "result": {"thread": {"id": THREAD, "ephemeral": False}, "model": "gpt-5.5"}}))
    parser.read_line(json.dumps({"method": "turn/started", "params": {"threadId": THREAD, "turn": {"id": TURN}}}))
    return parser


def test_each_call_once_and_the_window_once() -> None:
    parser = in_turn()
    first = parser.read_line(usage_line(breakdown(9000, 8000, 7, 3), breakdown(9000, 8000, 7, 3)))
    again = parser.read_line(usage_line(breakdown(9000, 8000, 7, 3), breakdown(9000, 8000, 7, 3)))  # turn/interrupt's repeat
    second = parser.read_line(usage_line(breakdown(500, 0, 5), breakdown(9500, 8000, 12, 3)))
    assert first == [CallUsage(Usage(input=1000, cache_read=8000, output=7, reasoning=3)), ContextWindow(258400)]
    assert again == [] and second == [CallUsage(Usage(input=500, output=5))]
    assert parser.total == Usage(input=1500, cache_read=8000, output=12, reasoning=3)


def test_a_resumed_threads_replayed_call_is_not_counted() -> None:
    parser = in_turn()
    assert parser.read_line(usage_line(breakdown(100, 0, 5), breakdown(100, 0, 5), turn="an-earlier-turn")) == [
        ContextWindow(258400)
    ]


@pytest.mark.parametrize(
    "last",
    [breakdown(10, 20, 1), {"inputTokens": "9000", "cachedInputTokens": 0, "outputTokens": 1}, {"inputTokens": -1}, None, [1, 2]],
)
def test_usage_that_is_not_token_counts_is_refused_with_one_warning(last: Any) -> None:
    events = in_turn().read_line(usage_line(last, breakdown(10, 0, 1)))
    (warning,) = [e for e in events if isinstance(e, WarningEvent)]
    assert "the call is not counted" in warning.message
    assert not [e for e in events if isinstance(e, CallUsage)]


def limits_line(primary: Any, secondary: Any = None) -> str:
    return json.dumps(
        {"method": "account/rateLimits/updated", "params": {"rateLimits": {"primary": primary, "secondary": secondary}}}
    )


def test_plan_limits_by_their_window_length() -> None:
    events = AppServerParser().read_line(
        limits_line(
            {"usedPercent": 43, "windowDurationMins": 300, "resetsAt": 1796190000},
            {"usedPercent": 7, "windowDurationMins": 10080, "resetsAt": None},
        )
    )
    assert events == [RateLimits(RateWindow(43.0, 1796190000), RateWindow(7.0, None))]
    assert AppServerParser().read_line(limits_line(None)) == []  # an API key: no windows
    assert AppServerParser().read_line(limits_line({"usedPercent": 5, "windowDurationMins": 60})) == []  # not a plan window


@pytest.mark.parametrize("percent", ["42", -3, True, None, {"x": 1}, float("nan")])
def test_a_plan_limit_that_is_not_a_percentage_is_left_out_with_a_warning(percent: Any) -> None:
    line = limits_line({"usedPercent": percent, "windowDurationMins": 300, "resetsAt": 1796190000}).replace("NaN", '"NaN"')
    events = AppServerParser().read_line(line)
    assert [type(e) for e in events] == [WarningEvent]
    assert "five_hour.usedPercent" in events[0].message


def test_a_refused_request_an_approval_and_a_failed_turn() -> None:
    parser = in_turn()
    refused = parser.read_line(json.dumps({"id": 7, "error": {"code": -32600, "message": "no rollout found for thread id x"}}))
    assert "no rollout found" in refused[0].message and parser.answers["7"] == {
        "error": {"code": -32600, "message": "no rollout found for thread id x"}
    }
    asked = parser.read_line(
        json.dumps(
            {
                "method": "item/commandExecution/requestApproval",
                "id": 0,
                "params": {"threadId": THREAD, "command": "/bin/bash -lc 'touch x'"},
            }
        )
    )
    assert asked == [PermissionRequest("0", "shell", {"command": "/bin/bash -lc 'touch x'"})]
    assert rpc.approval_answer("0", "always") == {"id": 0, "result": {"decision": "acceptForSession"}}
    assert rpc.approval_answer("0", "deny") == {"id": 0, "result": {"decision": "decline"}}
    failed = parser.read_line(
        json.dumps(
            {
                "method": "turn/completed",
                "params": {
                    "threadId": THREAD,
                    "turn": {"id": TURN, "status": "failed", "error": {"message": "bad request from the fake"}},
                },
            }
        )
    )
    assert failed == [TurnEnd(is_error=True, error="bad request from the fake")]


def test_another_threads_messages_are_left_out_once_the_sessions_is_known() -> None:
    parser = in_turn()
    other = usage_line(breakdown(321, 0, 4), breakdown(321, 0, 4)).replace(THREAD, "the-title-thread")
    assert parser.read_line(other) == []
    started = {"method": "thread/started", "params": {"thread": {"id": "eph", "ephemeral": True}}}
    assert AppServerParser().read_line(json.dumps(started)) == []
    assert AppServerParser().read_line(json.dumps({**started, "params": {"thread": {"id": THREAD, "ephemeral": False}}})) == [
        SessionStarted(THREAD)
    ]


@pytest.mark.parametrize(
    "line", ["{", "[1]", '{"method": 5}', '{"method": "turn/completed", "params": []}', '{"id": [], "result": 3}']
)
def test_hostile_lines_never_raise(line: str) -> None:
    for event in AppServerParser().feed(line):
        assert not isinstance(event, TurnEnd) or event.is_error


@pytest.mark.parametrize(
    ("flags", "route"),
    [
        ([], "AppServerDriver"),
        (["-c", "model_reasoning_effort=high", "--enable", "x", "--disable=y", "--config=a=1"], "AppServerDriver"),
        (["--sandbox", "workspace-write"], "PerTurnDriver"),
        (["-c"], "PerTurnDriver"),
        (["--full-auto"], "PerTurnDriver"),
    ],
)
def test_a_codex_line_chat_goes_through_the_app_server_when_it_takes_the_agents_flags(
    agents_dir: Path, workdir: Path, flags: list[str], route: str
) -> None:
    write_agent(agents_dir, "cdx", {"provider": "codex", "working_dir": str(workdir), "provider_flags": flags})
    spec, adapter = load_agent(agents_dir, "cdx"), get_adapter("codex")
    assert type(driver_for(adapter, spec, chat=True)).__name__ == route  # the line chat
    assert type(driver_for(adapter, spec)).__name__ == "PerTurnDriver"  # a one-turn run: codex exec, started early
    assert type(driver_for(adapter, spec, native=True, chat=True)).__name__ == "PerTurnDriver"  # the interface
    assert type(driver_for(adapter, chat=True)).__name__ == "PerTurnDriver"  # no agent: the doctor's view
    assert type(driver_for(get_adapter("gemini"), spec, chat=True)).__name__ == "PerTurnDriver"
