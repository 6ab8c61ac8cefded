"""Claude Code's stream-json, parsed from transcripts recorded from the real CLI (tests/data/claude)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentlaunch.events import (
    CallUsage,
    ContextWindow,
    Diagnostic,
    Event,
    PermissionRequest,
    SessionStarted,
    Text,
    TextDelta,
    ToolResult,
    ToolUse,
    TurnEnd,
    Unknown,
)
from agentlaunch.providers.claude_parser import ClaudeParser
from agentlaunch.token_usage import Usage
from agentlaunch.usage.meter import Meter

DATA = Path(__file__).parent / "data" / "claude"


def parse(name: str) -> list[Event]:
    parser = ClaudeParser()
    events: list[Event] = []
    for line in (DATA / name).read_text().splitlines():
        events.extend(parser.feed(line))
    return events + parser.finish()


def calls(events: list[Event]) -> list[Usage]:
    return [e.usage for e in events if isinstance(e, CallUsage)]


def test_text_turn_counts_one_call_with_final_output() -> None:
    events = parse("text_turn.jsonl")
    assert calls(events) == [Usage(input=12, cache_write=5000, cache_read=9000, output=7)]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello there friend"
    assert not [e for e in events if isinstance(e, Text)], "streamed text must not be repeated"
    assert isinstance(events[0], SessionStarted) and events[0].model == "claude-sonnet-4-5"
    end = [e for e in events if isinstance(e, TurnEnd)]
    assert end == [TurnEnd(is_error=False, result="Hello there friend", error=None, provider_cost_usd=0.021591)]
    assert ContextWindow(200000, "claude-sonnet-4-5") in events


def test_tool_turn_counts_each_call_once_not_the_turn_sum() -> None:
    events = parse("tool_turn.jsonl")
    # Two calls, although the first call's assistant line appears twice (text, tool_use)
    # and result.usage holds their sum (28/3150/23000/39).
    assert calls(events) == [Usage(20, 3000, 10000, 30), Usage(8, 150, 13000, 9)]
    (tool,) = [e for e in events if isinstance(e, ToolUse)]
    assert tool.name == "Bash" and tool.summary == "echo hi"
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert result.summary == "hi" and not result.is_error


def test_two_turns_are_per_call_not_session_totals() -> None:
    events = parse("two_turns.jsonl")
    assert calls(events) == [Usage(12, 5000, 9000, 7), Usage(10, 300, 14000, 5)]
    ends = [e for e in events if isinstance(e, TurnEnd)]
    assert [e.result for e in ends] == ["First answer", "Second answer"]
    assert len([e for e in events if isinstance(e, SessionStarted)]) == 2  # one init per turn


def test_permission_request_is_surfaced() -> None:
    events = parse("permission_turn.jsonl")
    (req,) = [e for e in events if isinstance(e, PermissionRequest)]
    assert req.tool_name == "Write" and req.tool_input["content"] == "hello\n"
    assert req.tool_input["file_path"].endswith("/out.txt") and req.request_id
    assert calls(events) == [Usage(15, 2000, 11000, 40), Usage(6, 120, 13000, 4)]


def test_api_error_turn_is_a_failed_turn_with_no_tokens_and_no_answer_text() -> None:
    events = parse("error_turn.jsonl")
    assert calls(events) == []
    assert not [e for e in events if isinstance(e, Text | TextDelta)]
    (end,) = [e for e in events if isinstance(e, TurnEnd)]
    assert end.is_error and end.error is not None and "API Error: 500" in end.error
    assert [e.message for e in events if e.kind == "warning"][0].startswith("API call failed; retry 1/2")


def test_interrupted_turn_keeps_the_aborted_calls_input() -> None:
    events = parse("interrupt_turn.jsonl")
    usages = calls(events)
    assert usages[0].input == 11 and usages[0].cache_write == 4000 and usages[0].cache_read == 9000
    assert usages[1] == Usage(9, 200, 13000, 6)
    ends = [e for e in events if isinstance(e, TurnEnd)]
    assert ends[0].is_error and not ends[1].is_error


@pytest.mark.parametrize("line", ["\x1b[?25h", "Warning: something", "{not json", "[1, 2]", "   "])
def test_noise_is_a_diagnostic_never_a_crash(line: str) -> None:
    events = ClaudeParser().feed(line)
    assert all(isinstance(e, Diagnostic) for e in events)


def test_unknown_event_type_is_reported_as_unknown() -> None:
    assert ClaudeParser().feed('{"type":"brand_new_event"}') == [Unknown("brand_new_event")]


def test_a_line_of_several_megabytes_parses() -> None:
    big = "x" * (5 * 1024 * 1024)
    line = json.dumps(
        {
            "type": "assistant",
            "message": {"id": "m1", "model": "m", "content": [{"type": "text", "text": big}], "usage": {"input_tokens": 1}},
        }
    )
    parser = ClaudeParser()
    # Without partial messages the call's usage waits for its final output (here: the end of the stream).
    events = parser.feed(line) + parser.finish()
    assert [e.kind for e in events] == ["text", "usage"] and len(events[0].text) == len(big)  # type: ignore[attr-defined]


def test_meter_context_is_the_latest_call_and_totals_are_sums() -> None:
    meter = Meter(model="claude-sonnet-4-5")
    for event in parse("tool_turn.jsonl"):
        meter.add(event)
    assert meter.total == Usage(28, 3150, 23000, 39)
    assert meter.context == 8 + 150 + 13000
    assert meter.window == 200000 and meter.window_source == "provider"
    assert meter.to_compaction == 200000 - 33000 - meter.context


def test_compact_boundary_is_reported_and_rearms_the_warning() -> None:
    """The CLI's own compaction ends the crossing: the next crossing warns again."""
    from agentlaunch.events import Compaction

    meter = Meter(configured_window=100_000, buffer=33_000)
    big = CallUsage(Usage(input=10, cache_read=70_000), "m", "c1")
    assert meter.add(big) is not None, "crossing 67,000 warns"
    assert meter.add(CallUsage(Usage(input=10, cache_read=71_000), "m", "c2")) is None, "once per crossing"
    (event,) = ClaudeParser().feed(
        '{"type":"system","subtype":"compact_boundary","compact_metadata":{"trigger":"auto","pre_tokens":71010,"post_tokens":9000}}'
    )
    assert event == Compaction("auto", 71010, 9000)
    meter.add(event)
    assert meter.add(CallUsage(Usage(input=10, cache_read=9_000), "m", "c3")) is None
    warning = meter.add(CallUsage(Usage(input=10, cache_read=80_000), "m", "c4"))
    assert warning is not None and warning.threshold == 67_000 and warning.left == 100_000 - 80_010


def test_cache_writes_are_split_by_lifetime_where_the_usage_says() -> None:
    from agentlaunch.providers.claude_parser import anthropic_usage
    from agentlaunch.providers.untrusted import BadUsage

    raw = {
        "input_tokens": 100,
        "cache_creation_input_tokens": 23_456,
        "cache_read_input_tokens": 0,
        "output_tokens": 10,
        "cache_creation": {"ephemeral_5m_input_tokens": 3_456, "ephemeral_1h_input_tokens": 20_000},
    }
    usage = anthropic_usage(raw)
    assert (usage.cache_write, usage.cache_write_1h, usage.cache_write_5m) == (23_456, 20_000, 3_456)
    assert anthropic_usage({**raw, "cache_creation": None}).cache_write_1h == 0  # no breakdown: all 5-minute
    for bad, why in (
        ({"ephemeral_1h_input_tokens": 30_000}, "cache_write_1h \\(30,000\\) is more than cache_write"),
        ({"ephemeral_1h_input_tokens": -1}, "ephemeral_1h_input_tokens is -1"),
        ({"ephemeral_1h_input_tokens": "many"}, "ephemeral_1h_input_tokens is 'many'"),
        ("lots", "cache_creation is 'lots', not an object"),
    ):
        with pytest.raises(BadUsage, match=why):
            anthropic_usage({**raw, "cache_creation": bad})
