"""Codex's native source reading recorded rollout files (tests/data/native): a file in pieces, late, truncated or
replaced, lines of unknown shapes, a resume, a compaction and the agent's messages; each call counted once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlaunch.events import Compaction, Text, Usage
from agentlaunch.sinks import StateChanged
from tests.support.codex_recorded import (
    DATA,
    EXPECTED,
    RESUMED,
    THREAD,
    Bench,
    calls,
    event_msg,
    json_values,
    recorded,
    states,
)


def texts(items: list[Any]) -> list[str]:
    return [i.text for i in items if isinstance(i, Text)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=0, max_value=70_000), max_size=12))
def test_a_file_growing_in_any_pieces_is_counted_once(tmp_path_factory: pytest.TempPathFactory, cuts: list[int]) -> None:
    bench = Bench(tmp_path_factory.mktemp("grow"))
    data = recorded("codex_tui.rollout.jsonl", bench.home, bench.work)
    source = bench.source(with_socket=False)
    items = source.read()  # the file does not exist yet
    with bench.rollout.open("wb") as fh:
        for cut in sorted({min(c, len(data)) for c in cuts}) + [len(data)]:
            fh.seek(0, 2)
            fh.write(data[fh.tell() : cut])
            fh.flush()
            items += source.read()
    assert calls(items) == EXPECTED
    assert texts(items) == ["first answer done", "second answer done"]


def test_a_late_truncated_or_replaced_file_never_counts_a_call_twice(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    data = recorded("codex_tui.rollout.jsonl", bench.home, bench.work)
    source = bench.source(with_socket=False)
    assert source.read() == [] and source.tail is None  # late: nothing yet, no error
    half = data[: data.index(b"resp_fake_2") - 200]
    bench.rollout.write_bytes(half)
    items = source.read()
    bench.rollout.write_bytes(data[:100])  # truncated under the reader
    items += source.read()
    replacement = bench.rollout.with_suffix(".new")
    replacement.write_bytes(data)
    replacement.replace(bench.rollout)  # a new file at the same path
    items += source.read()
    assert calls(items) == EXPECTED
    assert texts(items) == ["first answer done", "second answer done"]  # read again: still once each
    assert source.tail is not None and source.tail.restarts >= 1


JUNK = [
    b"not json at all",
    b'{"type":"token_usage_record","payload":"a string"}',
    b'{"type":"token_usage_record","payload":{"response_id":"x1","usage":{"input_tokens":-1,"output_tokens":2}}}',
    b'{"type":"token_usage_record","payload":{"response_id":["list"],"usage":{"input_tokens":1,"output_tokens":2}}}',
    b'{"type":"event_msg","payload":{"type":"token_count","info":{"model_context_window":"big"}}}',
    b'{"type":"session_meta","payload":[]}',
    b'{"type":"brand_new_line_type","payload":{"token_count":1}}',
    b"[1,2,3]",
    b'{"type":"token_count"' + b"[" * 5000 + b"}",
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picks=st.lists(st.tuples(st.integers(min_value=0, max_value=200), st.sampled_from(JUNK)), max_size=10))
def test_lines_of_unknown_shapes_are_skipped(tmp_path_factory: pytest.TempPathFactory, picks: list[tuple[int, bytes]]) -> None:
    bench = Bench(tmp_path_factory.mktemp("junk"))
    lines = recorded("codex_tui.rollout.jsonl", bench.home, bench.work).splitlines()
    for where, junk in picks:
        lines.insert(min(where, len(lines)) or 1, junk)  # Codex's first line is always its session_meta
    bench.rollout.write_bytes(b"\n".join(lines) + b"\n")
    source = bench.source(with_socket=False)
    assert calls(source.read()) == EXPECTED


def test_a_huge_line_is_skipped_without_holding_it(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    lines = recorded("codex_tui.rollout.jsonl", bench.home, bench.work).splitlines()
    huge = b'{"type":"response_item","payload":{"type":"function_call_output","output":"' + b"x" * (9 << 20) + b'"}}'
    bench.rollout.write_bytes(b"\n".join([lines[0], huge, *lines[1:]]) + b"\n")
    source = bench.source(with_socket=False)
    assert calls(source.read()) == EXPECTED
    assert source.tail is not None and len(source.tail._partial) == 0


def test_a_resume_reports_only_its_own_calls(tmp_path: Path) -> None:
    bench = Bench(tmp_path, resumed=True)
    before = recorded("codex_tui.rollout.jsonl", bench.home, bench.work)
    after = recorded("codex_tui_resumed.rollout.jsonl", bench.home, bench.work)
    assert after.startswith(before)
    bench.rollout.write_bytes(before)
    source = bench.source()
    with bench.rollout.open("ab") as fh:
        fh.write(after[len(before) :])
    items = source.read()
    assert calls(items) == RESUMED
    assert texts(items) == ["third answer done"]  # the earlier turns' answers are history
    # Read again from the start (the file replaced by a copy): the earlier launches' calls stay counted once.
    copy = bench.rollout.with_suffix(".copy")
    copy.write_bytes(after)
    copy.replace(bench.rollout)
    again = source.read()
    assert calls(again) == [] and texts(again) == []
    source.close()


def test_without_per_call_records_each_new_running_total_is_one_call(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    lines = recorded("codex_tui.rollout.jsonl", bench.home, bench.work).splitlines()
    bench.rollout.write_bytes(b"\n".join(line for line in lines if b'"token_usage_record"' not in line) + b"\n")
    source = bench.source(with_socket=False)
    items = source.read() + source.read()
    assert [usage for usage, _ in calls(items)] == [usage for usage, _ in EXPECTED]


def test_a_manual_compact_is_a_compaction_with_its_trigger_and_ends_at_the_prompt(tmp_path: Path) -> None:
    lines = (DATA / "codex_tui_compact.hooks.jsonl").read_text().splitlines()
    reports = [json.loads(line) for line in lines]
    thread = reports[0]["payload"]["session_id"]
    bench = Bench(tmp_path)
    bench.rollout = bench.rollout.with_name(f"rollout-2026-12-01T11-41-23-{thread}.jsonl")
    data = recorded("codex_tui_compact.rollout.jsonl", bench.home, bench.work)
    source = bench.source()
    items: list[Any] = []
    for report in reports:
        payload = json.loads(json.dumps(report["payload"]).replace("/HOME", str(bench.home)).replace("/WORK", str(bench.work)))
        payload["transcript_path"] = str(bench.rollout)
        bench.send(report["event"], payload)
        if report["event"] == "PostCompact":
            bench.rollout.write_bytes(data)
        items += source.read()
    assert [i for i in items if isinstance(i, Compaction)] == [Compaction(trigger="manual")]
    # The compaction's own model call is a call like any other (its summary's 50 output tokens).
    assert calls(items) == [
        (Usage(input=1000, cache_read=8000, output=7), "resp_fake_1"),
        (Usage(input=100, cache_read=9000, output=50), "resp_fake_2"),
    ]
    assert states(items) == ["waiting", "thinking", "waiting", "thinking", "waiting"]  # SessionStart first: up
    # The compaction's summary is an assistant response_item, never an AgentMessage: it is no answer.
    assert texts(items) == ["first answer done"]
    source.close()


def response_item(payload: dict[str, Any]) -> bytes:
    return json.dumps({"type": "response_item", "payload": payload}).encode() + b"\n"


def agent_message(item_id: Any, content: Any, thread: Any = THREAD, turn: str = "t1") -> bytes:
    item = {"type": "AgentMessage", "id": item_id, "content": content}
    return event_msg({"type": "item_completed", "thread_id": thread, "turn_id": turn, "item": item})


def test_a_turn_without_agent_message_items_gives_its_last_agent_message_once(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    head = recorded("codex_tui.rollout.jsonl", bench.home, bench.work).splitlines(keepends=True)[0]
    turn = [
        event_msg({"type": "task_started", "turn_id": "t1"}),
        event_msg({"type": "task_complete", "turn_id": "t1", "last_agent_message": "the answer, told at the end"}),
        event_msg({"type": "task_started", "turn_id": "t2"}),
        agent_message("m2", [{"type": "Text", "text": "told as an item"}], turn="t2"),
        event_msg({"type": "task_complete", "turn_id": "t2", "last_agent_message": "told as an item"}),  # not twice
        event_msg({"type": "task_started", "turn_id": "t3"}),
        event_msg({"type": "task_complete", "turn_id": "t3", "last_agent_message": None}),  # a /compact: no answer
    ]
    bench.rollout.write_bytes(head + b"".join(turn))
    source = bench.source()
    bench.send("UserPromptSubmit", {"session_id": THREAD, "transcript_path": str(bench.rollout)})
    items = source.read()
    got = [(i.text if isinstance(i, Text) else i.state) for i in items if isinstance(i, Text | StateChanged)]
    assert got == ["thinking", "the answer, told at the end", "waiting", "told as an item"]
    copy = bench.rollout.with_suffix(".copy")  # read again from its start: nothing twice
    copy.write_bytes(bench.rollout.read_bytes())
    copy.replace(bench.rollout)
    assert texts(source.read()) == []
    source.close()
    # A resume knows the file's answers, by item id and by turn, though they are read again.
    resumed = Bench(tmp_path / "resumed", resumed=True)
    resumed.rollout.write_bytes(head + b"".join(turn))
    source = resumed.source(with_socket=False)
    copy = resumed.rollout.with_suffix(".copy")
    copy.write_bytes(
        resumed.rollout.read_bytes() + event_msg({"type": "task_complete", "turn_id": "t4", "last_agent_message": "new"})
    )
    copy.replace(resumed.rollout)
    assert texts(source.read()) == ["new"]


def test_agent_messages_of_odd_shapes_or_other_threads_are_skipped_without_an_exception(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    head = recorded("codex_tui.rollout.jsonl", bench.home, bench.work).splitlines(keepends=True)[0]
    huge = "z" * (2 << 20)
    lines = [
        agent_message("a1", [{"type": "Text", "text": 5}, {"type": "Text"}, "Text", None, {"type": ["Text"], "text": "x"}]),
        agent_message("a2", "a string"),
        agent_message("a3", {"type": "Text", "text": "a dict"}),
        agent_message({"id": 1}, [{"type": "Text", "text": "odd id"}]),
        agent_message("a4", [{"type": "Text", "text": "from a sub-agent"}], thread="another-thread"),
        event_msg({"type": "item_completed", "item": "not an object"}),
        event_msg({"type": "item_completed", "item": [1]}),
        event_msg({"type": "item_completed", "item": {"type": "Reasoning", "content": [{"type": "Text", "text": "hmm"}]}}),
        event_msg({"type": "item_completed", "item": {"type": "CommandExecution", "aggregated_output": "hi"}}),
        event_msg({"type": "task_complete", "last_agent_message": ["not", "text"]}),
        response_item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "summary"}]}),
        response_item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking"}]}),
        agent_message("a5", [{"type": "Text", "text": "two "}, {"type": "text", "text": "parts"}]),
        agent_message("a6", [{"type": "Text", "text": huge}]),
    ]
    bench.rollout.write_bytes(head + b"".join(lines))
    source = bench.source(with_socket=False)
    # {"id": 1} is no id: the message is known by its text (given once).
    assert texts(source.read()) == ["odd id", "two parts", huge]


item_fields = st.sampled_from(["type", "id", "content", "text", "thread_id", "turn_id", "item", "last_agent_message"])
item_shapes = st.dictionaries(
    item_fields | st.text(max_size=6), json_values | st.just("AgentMessage") | st.just("Text"), max_size=5
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    msgs=st.lists(
        st.tuples(st.sampled_from(["item_completed", "task_complete", "task_started"]), item_shapes, item_shapes), max_size=6
    )
)
def test_any_agent_message_shape_gives_only_string_texts_each_once(
    tmp_path_factory: pytest.TempPathFactory, msgs: list[tuple[str, dict[str, Any], dict[str, Any]]]
) -> None:
    source = Bench(tmp_path_factory.mktemp("msgs")).source(with_socket=False)
    got: list[Any] = []
    for kind, payload, item in msgs:
        for _ in range(2):  # every line read twice
            got += source._line({"type": "event_msg", "payload": {**payload, "type": kind, "item": item}})
    assert all(isinstance(t.text, str) and t.text.strip() for t in got if isinstance(t, Text))
    assert len(texts(got)) <= len(msgs)
