"""Property tests: whatever a CLI prints or writes, the parsers never raise and never produce an impossible count.

Inputs are arbitrary JSON values in every field of the lines recorded from the
real CLIs (tests/data), arbitrary JSON objects and text, truncated lines and
deep nesting. Example counts are bounded so the whole file runs in seconds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlaunch.events import CallUsage, ContextWindow, Diagnostic, Event, OutputFinal
from agentlaunch.providers.base import JsonLineParser, parse_json_line
from agentlaunch.providers.claude_parser import ANTHROPIC_FIELDS, ClaudeParser, anthropic_usage
from agentlaunch.providers.codex import CodexAdapter, CodexParser
from agentlaunch.providers.codex_rollout import CODEX_FIELDS, codex_usage, rollout_calls
from agentlaunch.providers.gemini import GEMINI_FIELDS, GeminiAdapter, GeminiParser, gemini_usage
from agentlaunch.providers.gemini_session import CALL_FIELDS, call_usage, session_calls
from agentlaunch.providers.untrusted import BadUsage, loads, summarize
from agentlaunch.token_usage import Usage, usage_problem
from agentlaunch.visible import visible

DATA = Path(__file__).parent / "data"
# No example database: the suite writes nothing into the checkout.
PROPERTY = settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
FILES = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# Scalars as JSON can spell them, and a few that only a broken CLI would print (NaN, Infinity, huge ints).
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.sampled_from([10**30, -(10**30), 2**53, 2**53 - 1, -1, 0]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)


def recorded(provider: str, skip: tuple[str, ...] = ()) -> list[list[str]]:
    """Every recorded stdout transcript of ``provider``, as lists of lines."""
    files = sorted((DATA / provider).glob("*.jsonl"))
    return [f.read_text().splitlines() for f in files if not any(s in f.name for s in skip)]


TRANSCRIPTS: dict[str, list[list[str]]] = {
    "claude": recorded("claude"),
    "codex": recorded("codex", skip=("rollout",)),
    "gemini": recorded("gemini", skip=("session",)),
}
PARSERS: dict[str, Callable[[], JsonLineParser]] = {"claude": ClaudeParser, "codex": CodexParser, "gemini": GeminiParser}


def check(events: list[Event]) -> None:
    """No event carries an impossible count, and every event can be written out as JSON and UTF-8."""
    for event in events:
        if isinstance(event, CallUsage):
            assert usage_problem(event.usage) is None, event
        if isinstance(event, OutputFinal | ContextWindow):
            value = event.output if isinstance(event, OutputFinal) else event.tokens
            assert type(value) is int and 0 <= value < 2**53
        json.dumps(event.as_dict(), ensure_ascii=False, allow_nan=True).encode("utf-8")


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a parsed line (keys and list indexes), the root included."""
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value[:4]):
            found += paths(child, (*prefix, i))
    return found


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    cursor = copy
    for step in path[:-1]:
        cursor = cursor[step]
    cursor[path[-1]] = new
    return copy


@st.composite
def mutated_transcript(draw: st.DrawFn, provider: str) -> tuple[list[str], int]:
    """A recorded transcript with one field of one line replaced by an arbitrary JSON value."""
    lines = draw(st.sampled_from(TRANSCRIPTS[provider]))
    index = draw(st.integers(0, len(lines) - 1))
    original = json.loads(lines[index])
    path = draw(st.sampled_from(paths(original)))
    new = draw(json_values)
    line = json.dumps(replaced(original, path, new), allow_nan=True)
    return [*lines[:index], line, *lines[index + 1 :]], index


def feed_all(parser: JsonLineParser, lines: list[str]) -> list[Event]:
    events: list[Event] = []
    for line in lines:
        events += parser.read_line(line)
    return events + parser.finish()


# -- each parser, on its own recorded lines with one field replaced ----------------------------------


@PROPERTY
@given(mutated_transcript("claude"))
def test_claude_parser_survives_any_value_in_any_recorded_field(case: tuple[list[str], int]) -> None:
    check(feed_all(ClaudeParser(), case[0]))


@PROPERTY
@given(mutated_transcript("codex"))
def test_codex_parser_survives_any_value_in_any_recorded_field(case: tuple[list[str], int]) -> None:
    check(feed_all(CodexParser(), case[0]))


@PROPERTY
@given(mutated_transcript("gemini"))
def test_gemini_parser_survives_any_value_in_any_recorded_field(case: tuple[list[str], int]) -> None:
    check(feed_all(GeminiParser(), case[0]))


# -- arbitrary objects, arbitrary text, truncated and split lines, deep nesting ------------------------

event_types = st.sampled_from(
    [
        "assistant",
        "user",
        "result",
        "system",
        "stream_event",
        "control_request",
        "thread.started",
        "turn.completed",
        "turn.failed",
        "item.started",
        "item.completed",
        "error",
        "init",
        "message",
        "tool_use",
        "tool_result",
    ]
)
objects = st.dictionaries(st.text(max_size=12), json_values, max_size=5).flatmap(
    lambda d: st.builds(lambda t, extra: {**d, "type": t, **extra}, event_types | json_values, st.just({}))
)
nested_events = st.builds(
    lambda t, key, inner: {"type": t, key: inner},
    event_types,
    st.sampled_from(["message", "event", "usage", "item", "stats", "request", "error", "content"]),
    st.dictionaries(
        st.sampled_from(["type", "id", "usage", "content", "message", "delta", "input_tokens", "output_tokens", "stats"]),
        json_values,
        max_size=5,
    ),
)


@PROPERTY
@given(st.sampled_from(sorted(PARSERS)), st.lists(objects | nested_events, min_size=1, max_size=8))
def test_every_parser_survives_arbitrary_json_objects(provider: str, objs: list[dict[str, Any]]) -> None:
    parser = PARSERS[provider]()
    check(feed_all(parser, [json.dumps(o, allow_nan=True) for o in objs]))


@PROPERTY
@given(st.sampled_from(sorted(PARSERS)), st.data())
def test_truncated_and_split_recorded_lines_are_diagnostics_or_events(provider: str, data: st.DataObject) -> None:
    lines = data.draw(st.sampled_from(TRANSCRIPTS[provider]))
    line = data.draw(st.sampled_from(lines))
    cut = data.draw(st.integers(0, len(line)))
    parser = PARSERS[provider]()
    check(parser.read_line(line[:cut]) + parser.read_line(line[cut:]) + parser.finish())


@PROPERTY
@given(st.text(max_size=200) | st.binary(max_size=200).map(lambda b: b.decode("utf-8", "replace")))
def test_any_text_line_is_blank_a_diagnostic_or_an_object(line: str) -> None:
    for factory in PARSERS.values():
        check(factory().read_line(line))
        check(factory().read_line("{" + line))


@PROPERTY
@given(st.integers(1, 3000), st.sampled_from(["[", '{"a":']), st.booleans())
def test_deep_nesting_never_raises(depth: int, opener: str, closed: bool) -> None:
    closer = "]" if opener == "[" else "}"
    inner = opener * depth + "1" + closer * depth if closed else opener * depth
    line = '{"type": "assistant", "message": ' + inner + "}"
    result = parse_json_line(line)
    assert isinstance(result, dict | Diagnostic)
    if isinstance(result, dict):
        for factory in PARSERS.values():
            check(factory().event(result))


# -- the usage mappings ----------------------------------------------------------------------------------

usage_values = st.one_of(
    st.integers(min_value=-(2**60), max_value=2**60), st.integers(0, 10**6), json_values, st.sampled_from([10**30, True, 1.5])
)


def usage_dicts(fields: tuple[str, ...]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(fields), usage_values, max_size=len(fields))


MAPPINGS: list[tuple[Callable[[Any], Usage], tuple[str, ...]]] = [
    (anthropic_usage, ANTHROPIC_FIELDS),
    (codex_usage, CODEX_FIELDS),
    (gemini_usage, GEMINI_FIELDS),
    (call_usage, CALL_FIELDS),
]


@PROPERTY
@given(st.sampled_from(range(len(MAPPINGS))), st.data())
def test_usage_mappings_give_counts_or_refuse_whole(which: int, data: st.DataObject) -> None:
    mapping, fields = MAPPINGS[which]
    raw = data.draw(usage_dicts(fields) | json_values)
    try:
        usage = mapping(raw)
    except BadUsage:
        return
    assert usage_problem(usage) is None
    # Accepted only when every field given was a count: nothing partial, nothing guessed.
    assert isinstance(raw, dict)
    for name in fields:
        value = raw.get(name)
        assert value is None or (type(value) is int and 0 <= value < 2**53), (name, value)


counts_dicts = st.fixed_dictionaries(
    {"input_tokens": st.integers(0, 10**7), "output_tokens": st.integers(0, 10**5)},
    optional={"cached_input_tokens": st.integers(0, 10**7), "reasoning_output_tokens": st.integers(0, 10**4)},
)


@PROPERTY
@given(st.lists(counts_dicts | json_values, min_size=1, max_size=8))
def test_codex_counts_exactly_the_growth_of_the_running_total(totals: list[Any]) -> None:
    parser = CodexParser()
    counted = Usage()
    for total in totals:
        for event in parser.read_line(json.dumps({"type": "turn.completed", "usage": total}, allow_nan=True)):
            if isinstance(event, CallUsage):
                assert usage_problem(event.usage) is None
                counted = counted + event.usage
    assert counted == parser.total  # never a negative call, never a lost one


# -- the files the CLIs keep ------------------------------------------------------------------------------


def file_lines(fields: tuple[str, ...], wrap: Callable[[Any], Any]) -> st.SearchStrategy[list[str]]:
    line = st.one_of(
        usage_dicts(fields).map(lambda d: json.dumps(wrap(d), allow_nan=True)),
        json_values.map(lambda v: json.dumps(wrap(v), allow_nan=True)),
        st.text(max_size=40),
        st.just('{"tokens": ' + "[" * 2000 + "]" * 2000 + "}"),
    )
    return st.lists(line, max_size=6)


def rollout_record(usage: Any) -> dict[str, Any]:
    return {"type": "token_usage_record", "payload": {"usage": usage, "thread_token_usage": usage, "response_id": "r"}}


@FILES
@given(file_lines(MAPPINGS[1][1], rollout_record), st.sampled_from(["0", "a*", "../x", "01a2-b"]))
def test_codex_rollout_of_any_content_gives_counts_only(tmp_path: Path, lines: list[str], thread: str) -> None:
    day = tmp_path / ".codex" / "sessions" / "2026" / "11" / "30"
    day.mkdir(parents=True, exist_ok=True)
    (day / "rollout-2026-11-30T10-00-00-01a2-b.jsonl").write_text("\n".join(lines) + "\n")
    env = {"HOME": str(tmp_path)}
    for call, running in rollout_calls(thread, env):
        assert usage_problem(call.usage) is None and (running is None or usage_problem(running) is None)
    adapter, parser = CodexAdapter(), CodexParser()
    parser.thread_id = thread
    check(adapter.calls_not_counted(parser, env))
    check(adapter.calls_in_turn(CallUsage(Usage(input=1)), parser, env))


def gemini_record(tokens: Any) -> dict[str, Any]:
    return {"type": "gemini", "id": "c", "tokens": tokens, "model": "m"}


@FILES
@given(file_lines(MAPPINGS[3][1], gemini_record))
def test_gemini_session_file_of_any_content_gives_counts_only(tmp_path: Path, lines: list[str]) -> None:
    chats = tmp_path / ".gemini" / "tmp" / "p" / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    sid = "0123abcd-1111"
    (chats / "session-x-0123abcd.jsonl").write_text(json.dumps({"sessionId": sid}) + "\n" + "\n".join(lines) + "\n")
    env = {"HOME": str(tmp_path)}
    for call in session_calls(sid, env):
        assert usage_problem(call.usage) is None
    adapter = GeminiAdapter()
    parser = adapter.parser({"session_id": sid, "started": True, "counted_through": ""})
    check(adapter.calls_not_counted(parser, env))
    check(adapter.calls_in_turn(CallUsage(Usage(input=1)), parser, env))


# -- summaries and what is printed ---------------------------------------------------------------------


@PROPERTY
@given(json_values)
def test_summarize_is_one_short_line_for_any_value(value: Any) -> None:
    text = summarize(value)
    assert len(text) <= 120 and "\n" not in text


@PROPERTY
@given(st.text(), st.booleans())
def test_visible_leaves_no_control_character(text: str, keep_newlines: bool) -> None:
    shown = visible(text, keep_newlines=keep_newlines)
    allowed = {"\n", "\t"} if keep_newlines else set()
    bidi = {chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]}
    assert not [c for c in shown if (ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in bidi) and c not in allowed]
    if text.isascii() and text.isprintable():
        assert shown == text


def test_loads_refuses_nesting_past_the_limit_and_accepts_it_up_to_it() -> None:
    assert loads("[" * 100 + "]" * 100) is not None
    for text in ("[" * 101 + "]" * 101, "[" * 5000 + "]" * 5000):
        try:
            loads(text)
        except ValueError:
            continue
        raise AssertionError("nesting past the limit was accepted")
    assert math.isnan(loads("NaN"))  # a number the parsers then refuse as a count
