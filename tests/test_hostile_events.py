"""The fixed regression corpus: provider lines of the wrong shape, impossible usage, repeated messages (Claude's here,
Codex's and Gemini's in test_hostile_events_codex_gemini.py).

Each case here once ended a session with a traceback, stored an impossible
number, or printed text twice. ``read_line`` feeds a line without the parser's
last-resort guard, so a handler that raises fails the test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.events import CallUsage, Diagnostic, Event, OutputFinal, Text, TextDelta, ToolUse, TurnEnd, Unknown, Warning
from agentlaunch.providers.base import JsonLineParser, json_lines
from agentlaunch.providers.claude_parser import ClaudeParser
from agentlaunch.providers.untrusted import BadUsage, loads, summarize
from agentlaunch.token_usage import Usage, usage_problem
from agentlaunch.usage.meter import Meter
from agentlaunch.usage.records import CallRecord
from agentlaunch.usage.store import Store
from tests.support import hostile_lines
from tests.support.parser_feed import calls, run, warnings

DATA = Path(__file__).parent / "data"


def without_partials(name: str) -> list[str]:
    """A recorded turn as Claude Code prints it without --include-partial-messages."""
    return [line for line in (DATA / "claude" / name).read_text().splitlines() if not is_stream_event(line)]


def is_stream_event(line: str) -> bool:
    return json.loads(line).get("type") == "stream_event"


# -- Claude: lines of every shape ----------------------------------------------------------------------


def test_the_hostile_claude_corpus_counts_nothing_and_prints_no_answer_text() -> None:
    events = run(ClaudeParser(), hostile_lines.noise())
    assert calls(events) == []
    assert not [e for e in events if isinstance(e, Text | TextDelta)]
    refused = [w for w in warnings(events) if w.startswith("ignored the usage of claude call")]
    # Each refused call is reported once (the repeated assistant line of msg_bad_tool is not reported again).
    assert len(refused) == len(set(refused)) == 13
    assert any("msg_bad_tool" in w for w in refused) and any("input_tokens is -1000000" in w for w in refused)


def test_one_valid_call_among_the_hostile_lines_is_counted_with_its_billed_output() -> None:
    events = run(ClaudeParser(), [hostile_lines.init("s"), *hostile_lines.noise(), *hostile_lines.valid_call("s")])
    assert calls(events) == [Usage(input=12, cache_write=5000, cache_read=9000, output=hostile_lines.BILLED_OUTPUT)]
    assert [e.text for e in events if isinstance(e, Text)] == [hostile_lines.ANSWER]  # the repeated line: printed once
    assert [e.is_error for e in events if isinstance(e, TurnEnd)] == [False]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"type": []}', Unknown("<list>")),
        ('{"type": {"a": 1}}', Unknown("<dict>")),
        ('{"type": "system", "subtype": ["init"]}', Unknown("system/<list>")),
        ('{"type": "control_request", "request": "abc"}', Unknown("control_request/None")),
    ],
)
def test_a_type_that_is_not_a_string_is_an_unknown_event(line: str, expected: Event) -> None:
    assert ClaudeParser().read_line(line) == [expected]


@pytest.mark.parametrize(
    "line",
    [
        '{"type": "assistant", "message": "abc"}',
        '{"type": "assistant", "message": {"content": "abc"}}',
        '{"type": "assistant", "message": {"id": "m", "usage": {"input_tokens": 1}, "content": [1, "x", {"type": []}]}}',
        '{"type": "stream_event", "event": "abc"}',
        '{"type": "stream_event", "event": {"type": "message_start", "message": "abc"}}',
        '{"type": "stream_event", "event": {"type": "content_block_delta", "delta": [1]}}',
        '{"type": "stream_event", "event": {"type": "message_delta", "usage": "abc"}}',
        '{"type": "user", "message": {"content": [{"type": "tool_result", "content": 5, "tool_use_id": {}}]}}',
        '{"type": "result", "modelUsage": "abc", "errors": 5, "is_error": true}',
        '{"type": "result", "modelUsage": {"m": "abc"}, "subtype": "success", "total_cost_usd": "abc"}',
        '{"type": "system", "subtype": "api_retry", "retry_delay_ms": "abc"}',
        '{"type": "system", "subtype": "compact_boundary", "compact_metadata": [1]}',
        '{"type": "control_request", "request": {"subtype": "can_use_tool", "input": "abc", "tool_name": []}}',
    ],
)
def test_a_field_of_the_wrong_type_never_raises(line: str) -> None:
    assert isinstance(ClaudeParser().read_line(line), list)


def test_json_nested_two_thousand_deep_is_a_diagnostic_not_a_recursion_error() -> None:
    line = '{"type": "assistant", "message": ' + hostile_lines.DEEP + "}"
    assert len(line) < 4200
    (event,) = ClaudeParser().feed(line)
    assert isinstance(event, Diagnostic)
    with pytest.raises(ValueError):
        loads(hostile_lines.DEEP)


def test_a_lone_surrogate_becomes_a_replacement_character_that_can_be_written_out() -> None:
    (use,) = ClaudeParser().read_line('{"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "a\\ud800"}]}}')
    assert isinstance(use, ToolUse) and use.name == "a\ufffd"
    use.name.encode("utf-8")


# -- Claude: usage -------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [-1000000, 10**30, 1.5, "abc", True, None, [], {}])
def test_claude_usage_that_is_not_a_count_is_one_warning_and_no_call(value: Any) -> None:
    message = {"id": "m1", "usage": {"input_tokens": value}}
    start = {"type": "stream_event", "event": {"type": "message_start", "message": message}}
    delta = {"type": "stream_event", "event": {"type": "message_delta", "usage": {"output_tokens": 3}}}
    events = run(ClaudeParser(), [json.dumps(start), json.dumps(delta)])
    assert calls(events) == [] and not [e for e in events if isinstance(e, OutputFinal)]
    assert len(warnings(events)) == 1 and "m1" in warnings(events)[0]
    meter = Meter()
    for event in events:
        meter.add(event)
    assert meter.total == Usage() and meter.calls == 0  # the footer never shows "tokens in -1,000,000"


def test_claude_nan_in_usage_is_refused() -> None:
    line = '{"type": "assistant", "message": {"id": "m", "usage": {"input_tokens": NaN}, "content": []}}'
    events = run(ClaudeParser(), [line])
    assert calls(events) == [] and "input_tokens is nan" in warnings(events)[0]


def test_a_message_delta_count_that_is_not_a_count_refuses_the_whole_call() -> None:
    start = '{"type":"stream_event","event":{"type":"message_start","message":{"id":"m","usage":{"input_tokens":7}}}}'
    delta = '{"type":"stream_event","event":{"type":"message_delta","usage":{"output_tokens":-3}}}'
    events = run(ClaudeParser(), [start, delta])
    assert calls(events) == [] and len(warnings(events)) == 1


def test_store_refuses_an_impossible_usage_and_stores_nothing(tmp_path: Path) -> None:
    with Store.open(tmp_path / "usage.db") as store:
        for usage in (Usage(input=-1), Usage(output=10**30), Usage(cache_read=2**53), Usage(input=True)):
            with pytest.raises(ValueError, match="impossible usage"):
                store.record_call(CallRecord(agent="a", provider="claude", usage=usage, session_id="s"))
        assert store.calls_for_session("s") == []
        store.record_call(CallRecord(agent="a", provider="claude", usage=Usage(input=2**53 - 1), session_id="s"))
        assert [c.usage.input for c in store.calls_for_session("s")] == [2**53 - 1]


def test_usage_problem_names_the_field() -> None:
    assert usage_problem(Usage(1, 2, 3, 4, 5)) is None
    assert usage_problem(Usage(cache_read=-1)) == "cache_read is negative"
    assert usage_problem(Usage(output=2**53)) == "output is 2**53 or more"
    assert usage_problem(Usage(input=1.0)) == "input is a float, not a token count"  # type: ignore[arg-type]


# -- Claude: a repeated message, and the billed output without partial messages -----------------------


def test_a_repeated_assistant_line_is_counted_once_and_its_text_shown_once() -> None:
    line = json.dumps(
        {"type": "assistant", "message": {"id": "m", "usage": {"input_tokens": 3}, "content": [{"type": "text", "text": "hi"}]}}
    )
    tool = json.dumps(
        {"type": "assistant", "message": {"id": "m", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]}}
    )
    events = run(ClaudeParser(), [line, line, tool, tool])
    assert [e.text for e in events if isinstance(e, Text)] == ["hi"]
    assert [e.tool_id for e in events if isinstance(e, ToolUse)] == ["t1"]
    assert calls(events) == [Usage(input=3)]


def test_a_recorded_turn_without_partial_messages_is_billed_the_results_output() -> None:
    events = run(ClaudeParser(), without_partials("text_turn.jsonl"))
    # The assistant line says output 1 (message start); the result says 7, as billed.
    assert calls(events) == [Usage(input=12, cache_write=5000, cache_read=9000, output=7)]
    assert [e.text for e in events if isinstance(e, Text)] == ["Hello there friend"]


def test_assistant_output_five_and_result_twenty_five_is_billed_twenty_five() -> None:
    events = run(ClaudeParser(), hostile_lines.valid_call())
    assert [u.output for u in calls(events)] == [25]


def test_the_last_open_call_gets_the_results_output_less_the_calls_already_final() -> None:
    # Call 1 streamed (final output 30 from its message_delta); call 2 only printed its assistant line.
    lines = (DATA / "claude" / "tool_turn.jsonl").read_text().splitlines()
    second_start = next(i for i, line in enumerate(lines) if '"msg_fake_0002"' in line and "message_start" in line)
    kept = [line for i, line in enumerate(lines) if i < second_start or not is_stream_event(line)]
    events = run(ClaudeParser(), kept)
    assert calls(events) == [Usage(20, 3000, 10000, 30), Usage(8, 150, 13000, 9)]  # 9 = 39 in result - 30


def test_two_open_calls_keep_their_start_counts_and_the_rest_is_reported() -> None:
    events = run(ClaudeParser(), without_partials("tool_turn.jsonl"))
    assert [u.output for u in calls(events)] == [1, 1]
    assert any("37 more output tokens" in w for w in warnings(events))


def test_an_interrupted_call_is_not_given_the_zero_result() -> None:
    usage = '{"input_tokens":7,"output_tokens":1}'
    start = '{"type":"stream_event","event":{"type":"message_start","message":{"id":"m","usage":' + usage + "}}}"
    result = '{"type":"result","subtype":"error_during_execution","is_error":true,"usage":{"input_tokens":0,"output_tokens":0}}'
    assert calls(run(ClaudeParser(), [start, result])) == [Usage(input=7, output=1)]


def test_json_lines_skips_lines_nested_too_deep(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text('{"m": 1}\n{"m": ' + hostile_lines.DEEP + '}\n{"m": 2}\n')
    assert json_lines(path, '"m"') == [{"m": 1}, {"m": 2}]


# -- summaries ------------------------------------------------------------------------------------------


def test_a_fifty_megabyte_tool_result_is_summarized_from_its_head() -> None:
    big = "word " * (10 * 1024 * 1024)
    assert summarize(big) == ("word " * 24).strip()[:119] + "…"
    assert summarize([{"type": "text", "text": big}]).startswith("word word")
    assert len(summarize({"command": big})) == 120


def test_bad_usage_is_a_value_error() -> None:
    assert issubclass(BadUsage, ValueError)


def test_an_exception_no_handler_foresaw_is_a_warning_and_the_stream_goes_on() -> None:
    class Broken(JsonLineParser):
        def event(self, obj: dict[str, Any]) -> list[Event]:
            raise KeyError("surprise")

    (event,) = Broken().feed('{"type": "x"}')
    assert isinstance(event, Warning) and "KeyError" in event.message and "skipped" in event.message


def test_an_event_type_is_kept_to_a_bounded_label() -> None:
    (event,) = ClaudeParser().read_line('{"type": "' + "t" * 10_000 + '"}')
    assert isinstance(event, Unknown) and len(event.type) == 256


def test_calls_opened_and_never_closed_stay_bounded_and_are_counted_as_started() -> None:
    parser = ClaudeParser()
    events: list[Event] = []
    for i in range(1500):
        message = {"id": f"m{i}", "usage": {"input_tokens": 1, "output_tokens": 1}}
        events += parser.read_line(json.dumps({"type": "stream_event", "event": {"type": "message_start", "message": message}}))
    assert len(calls(events)) == 500 and [e.call_id for e in events if isinstance(e, CallUsage)][0] == "m0"
    assert len(calls(events + parser.finish())) == 1500  # every call once, none lost
