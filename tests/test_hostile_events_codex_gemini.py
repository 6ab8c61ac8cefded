"""The fixed regression corpus for Codex's and Gemini's lines: running totals that go down, impossible usage, fields
of the wrong type, rollout and session-file records that are not counts (Claude's: test_hostile_events.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.errors import StateError
from agentlaunch.events import TurnEnd, Usage
from agentlaunch.providers.codex import CodexAdapter, CodexParser
from agentlaunch.providers.codex_rollout import rollout_calls, rollout_context_window
from agentlaunch.providers.gemini import GeminiParser
from agentlaunch.providers.gemini_session import session_calls, session_files
from tests.support import hostile_lines
from tests.support.parser_feed import calls, run, warnings

# -- Codex ----------------------------------------------------------------------------------------------


def completed(**usage: Any) -> str:
    return json.dumps({"type": "turn.completed", "usage": usage})


def test_codex_running_total_that_goes_down_is_refused_and_the_base_kept() -> None:
    parser = CodexParser()
    first = run(parser, [completed(input_tokens=9000, cached_input_tokens=8000, output_tokens=7)])
    assert calls(first) == [Usage(input=1000, cache_read=8000, output=7)]
    back = run(parser, [completed(input_tokens=5000, cached_input_tokens=4000, output_tokens=7)])
    assert calls(back) == [] and "running total went down" in warnings(back)[0]
    assert [e for e in back if isinstance(e, TurnEnd)]  # the turn still ends
    assert parser.total == Usage(input=1000, cache_read=8000, output=7)
    later = run(parser, [completed(input_tokens=18000, cached_input_tokens=16000, output_tokens=14)])
    assert calls(later) == [Usage(input=1000, cache_read=8000, output=7)]


@pytest.mark.parametrize(
    "usage",
    [
        {"input_tokens": 100, "cached_input_tokens": 200, "output_tokens": 1},
        {"input_tokens": -1, "output_tokens": 1},
        {"input_tokens": "abc", "output_tokens": 1},
        {"input_tokens": 10**30, "output_tokens": 1},
        {"input_tokens": 1},
        "abc",
    ],
)
def test_codex_usage_that_is_impossible_is_refused(usage: Any) -> None:
    events = run(CodexParser(), [json.dumps({"type": "turn.completed", "usage": usage})])
    assert calls(events) == [] and len(warnings(events)) == 1


@pytest.mark.parametrize(
    "line",
    [
        '{"type": "item.completed", "item": "abc"}',
        '{"type": "item.completed", "item": {"type": []}}',
        '{"type": "item.started", "item": {"type": "file_change", "changes": "abc"}}',
        '{"type": "item.completed", "item": {"type": "mcp_tool_call", "server": [], "tool": {}}}',
        '{"type": "turn.failed", "error": "abc"}',
        '{"type": "thread.started", "thread_id": []}',
        '{"type": {"x": 1}}',
    ],
)
def test_codex_fields_of_the_wrong_type_never_raise(line: str) -> None:
    assert isinstance(CodexParser().read_line(line), list)


def test_codex_rollout_records_that_are_not_counts_are_left_out(tmp_path: Path) -> None:
    day = tmp_path / ".codex" / "sessions" / "2026" / "11" / "30"
    day.mkdir(parents=True)
    good = {"input_tokens": 10, "cached_input_tokens": 4, "output_tokens": 1}
    records = [
        {"type": "token_usage_record", "payload": {"usage": {"input_tokens": 1, "cached_input_tokens": 5, "output_tokens": 1}}},
        {"type": "token_usage_record", "payload": {"usage": {"input_tokens": "x", "output_tokens": 1}}},
        {"type": "token_usage_record", "payload": {"usage": good, "thread_token_usage": "abc", "response_id": []}},
        {"type": "event_msg", "payload": {"info": "abc", "model_context_window": -5}},
    ]
    text = "\n".join(json.dumps(r) for r in records) + '\n{"token_usage_record": ' + hostile_lines.DEEP + "}\n"
    (day / "rollout-2026-11-30T10-00-00-abc.jsonl").write_text(text)
    env = {"HOME": str(tmp_path)}
    assert [(c.usage, running) for c, running in rollout_calls("abc", env)] == [(Usage(input=6, cache_read=4, output=1), None)]
    assert rollout_context_window("abc", env) is None
    assert rollout_calls("*", env) == [] and rollout_calls("../abc", env) == []  # an id is never a pattern


def test_codex_stored_total_that_is_not_counts_is_a_state_error() -> None:
    with pytest.raises(StateError, match="running total"):
        CodexAdapter().parser({"total": {"input": -5}})
    with pytest.raises(StateError):
        CodexAdapter().parser({"total": {"bogus": 1}})
    assert CodexAdapter().parser({"total": None, "thread_id": ["x"]}).thread_id is None


# -- Gemini ---------------------------------------------------------------------------------------------


def gemini_result(stats: Any) -> str:
    return json.dumps({"type": "result", "status": "success", "stats": stats})


@pytest.mark.parametrize(
    "stats",
    [
        {"input_tokens": 100, "cached": 200, "output_tokens": 1},
        {"input_tokens": 100, "output_tokens": -1},
        {"input_tokens": 100, "output_tokens": 1, "total_tokens": "abc"},
        {"output_tokens": 1},
        "abc",
    ],
)
def test_gemini_usage_that_is_impossible_is_refused(stats: Any) -> None:
    events = run(GeminiParser(), [gemini_result(stats)])
    assert calls(events) == [] and len(warnings(events)) == 1
    assert [e for e in events if isinstance(e, TurnEnd)]


@pytest.mark.parametrize(
    "line",
    [
        '{"type": "result", "status": "error", "error": "abc", "stats": {"models": "abc"}}',
        '{"type": "result", "status": "error", "stats": {"input_tokens": "abc"}}',
        '{"type": "message", "role": "assistant", "content": {"a": 1}}',
        '{"type": "tool_use", "tool_id": [], "tool_name": {}, "parameters": "x"}',
        '{"type": "init", "session_id": {}, "model": []}',
        '{"type": "error", "message": [], "severity": "error"}',
    ],
)
def test_gemini_fields_of_the_wrong_type_never_raise(line: str) -> None:
    assert isinstance(GeminiParser().read_line(line), list)


def test_gemini_session_file_calls_that_are_not_counts_are_left_out(tmp_path: Path) -> None:
    chats = tmp_path / ".gemini" / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    sid = "0123abcd-0000-0000-0000-000000000000"
    lines = [
        json.dumps({"sessionId": sid}),
        json.dumps({"type": "gemini", "id": "a", "tokens": {"input": 5, "cached": 9, "output": 1}}),
        json.dumps({"type": "gemini", "id": "b", "tokens": {"input": 5, "output": "abc"}}),
        json.dumps({"type": "gemini", "id": [], "model": {}, "tokens": {"input": 5, "cached": 2, "output": 1}}),
        '{"type": "gemini", "tokens": ' + hostile_lines.DEEP + "}",
    ]
    (chats / "session-2026-11-30T10-00-0123abcd.jsonl").write_text("\n".join(lines) + "\n")
    (chats / "session-2026-11-30T11-00-0123abcd.jsonl").write_text(hostile_lines.DEEP + "\n")  # a header nested too deep
    env = {"HOME": str(tmp_path)}
    assert len(session_files(sid, env)) == 1
    assert [c.usage for c in session_calls(sid, env)] == [Usage(input=3, cache_read=2, output=1)]
    assert session_files("*", env) == []
