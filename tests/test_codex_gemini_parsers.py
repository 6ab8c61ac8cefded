"""Codex and Gemini output, parsed from transcripts recorded from the real CLIs (tests/data/codex, tests/data/gemini)."""

from __future__ import annotations

from pathlib import Path

from agentlaunch.events import (
    CallUsage,
    Event,
    SessionStarted,
    Text,
    TextDelta,
    ToolResult,
    ToolUse,
    TurnEnd,
    Unknown,
    Usage,
    Warning,
)
from agentlaunch.providers.codex import CodexParser, looks_like_thread_id, rollout_context_window
from agentlaunch.providers.gemini import GeminiParser

DATA = Path(__file__).parent / "data"


def feed(parser: CodexParser | GeminiParser, name: str) -> list[Event]:
    events: list[Event] = []
    for line in (DATA / name).read_text().splitlines():
        events.extend(parser.feed(line))
    return events


def usages(events: list[Event]) -> list[Usage]:
    return [e.usage for e in events if isinstance(e, CallUsage)]


def test_codex_three_turns_over_three_processes_are_per_turn_not_running_totals() -> None:
    parser = CodexParser()
    first = feed(parser, "codex/first_turn.jsonl")
    assert usages(first) == [Usage(input=1000, cache_read=8000, output=7, reasoning=3)]
    assert [e.text for e in first if isinstance(e, Text)] == ["hello from fake"]
    assert isinstance(first[0], SessionStarted) and first[0].session_id == "01a22cad-6eca-7f03-bdb4-633e092a268a"
    # A new agentlaunch process resumes with the total the registry kept.
    resumed = CodexParser(prior_total=parser.total)
    assert usages(feed(resumed, "codex/resume_turn2.jsonl")) == [Usage(1000, 0, 8000, 7, 3)]
    assert usages(feed(resumed, "codex/resume_turn3.jsonl")) == [Usage(1000, 0, 8000, 7, 3)]
    assert resumed.total == Usage(3000, 0, 24000, 21, 9)


def test_codex_tool_items_become_tool_lines() -> None:
    events = feed(CodexParser(), "codex/tool_turn.jsonl")
    (use,) = [e for e in events if isinstance(e, ToolUse)]
    assert use.name == "shell" and "echo hello-from-tool" in use.summary
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert not result.is_error and result.summary == "hello-from-tool"


def test_codex_failed_turn_and_error_items() -> None:
    events = feed(CodexParser(), "codex/error_400.jsonl")
    (end,) = [e for e in events if isinstance(e, TurnEnd)]
    assert end.is_error and end.error is not None and "bad request" in end.error
    warned = feed(CodexParser(), "codex/unknown_model_warning.jsonl")
    assert any(isinstance(e, Warning) and "Model metadata" in e.message for e in warned)
    assert not any(isinstance(e, Unknown) for e in warned)


def test_codex_interrupted_turn_has_no_end_and_the_next_turn_diffs_correctly() -> None:
    parser = CodexParser()
    feed(parser, "codex/interrupt_before.jsonl")
    assert not any(isinstance(e, TurnEnd) for e in feed(parser, "codex/interrupt_turn.jsonl"))
    assert usages(feed(parser, "codex/interrupt_after.jsonl")) == [Usage(input=2000, cache_read=1000, output=3)]


def test_codex_rejects_thread_names_that_would_start_a_new_thread() -> None:
    assert looks_like_thread_id("01a22cad-6eca-7f03-bdb4-633e092a268a")
    assert not looks_like_thread_id("my-thread")


def test_codex_context_window_from_the_rollout_file(tmp_path: Path) -> None:
    day = tmp_path / ".codex" / "sessions" / "2026" / "11" / "30"
    day.mkdir(parents=True)
    (day / "rollout-2026-11-30T10-00-00-abc.jsonl").write_text(
        '{"type":"event_msg","payload":{"type":"token_count","info":{"model_context_window":258400}}}\n'
    )
    assert rollout_context_window("abc", {"HOME": str(tmp_path)}) == 258400
    assert rollout_context_window("other", {"HOME": str(tmp_path)}) is None


def test_gemini_turns_are_per_turn_with_thinking_counted_as_output() -> None:
    for name in ("gemini/first_turn.jsonl", "gemini/resume_turn2.jsonl", "gemini/resume_turn3.jsonl"):
        events = feed(GeminiParser(), name)
        # input 9000 of which 6000 cached, output 7 + 2 thinking tokens.
        assert usages(events) == [Usage(input=3000, cache_read=6000, output=9, reasoning=2)]
        assert [e.is_error for e in events if isinstance(e, TurnEnd)] == [False]
        assert "".join(e.text for e in events if isinstance(e, TextDelta))


def test_gemini_tool_turn_and_error_turn() -> None:
    events = feed(GeminiParser(), "gemini/tool_turn.jsonl")
    assert [e.name for e in events if isinstance(e, ToolUse)] == ["read_file"]
    assert usages(events) == [Usage(input=1200, cache_read=1000, output=29, reasoning=5)]
    failed = feed(GeminiParser(), "gemini/error_500.jsonl")
    assert usages(failed) == []
    (end,) = [e for e in failed if isinstance(e, TurnEnd)]
    assert end.is_error and end.error is not None and "fake internal error" in end.error


def test_gemini_interrupted_turn_has_no_result() -> None:
    events = feed(GeminiParser(), "gemini/interrupt_turn.jsonl")
    assert not any(isinstance(e, TurnEnd) for e in events) and usages(events) == []
