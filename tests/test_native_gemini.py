"""Gemini's native source on recorded session files (Gemini CLI 0.61.0's TUI, tests/data/native; hooks:
test_native_gemini_hooks.py).

The recordings are replayed into a temporary per-agent Gemini home the way
Gemini writes them; each model call must be reported once with the figures
the headless per-call split reads from the same file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlaunch import datarecord as records
from agentlaunch.dir_watch import open_watch
from agentlaunch.events import CallUsage, SessionStarted, Text
from agentlaunch.providers.gemini_session import session_calls
from agentlaunch.providers.native.gemini import GeminiNativeSource, native_extras
from agentlaunch.sinks import StateChanged
from agentlaunch.token_usage import Usage
from tests.support.gemini_recorded import SESSION, Bench, states

EXPECTED = [
    Usage(input=3000, cache_read=6000, output=10, reasoning=3),
    Usage(input=100, cache_read=9000, output=5),
    Usage(input=100, cache_read=9100, output=4),
]
RESUMED = [Usage(input=100, cache_read=9200, output=8, reasoning=2)]


def usages(items: list[Any]) -> list[Usage]:
    return [i.usage for i in items if isinstance(i, CallUsage)]


def texts(items: list[Any]) -> list[str]:
    return [i.text for i in items if isinstance(i, Text)]


def told(items: list[Any]) -> list[str]:
    """The states and answers, in order."""
    return [i.text if isinstance(i, Text) else i.state for i in items if isinstance(i, Text | StateChanged)]


def test_the_recorded_session_is_every_call_once_with_the_headless_figures(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    source = GeminiNativeSource(bench.ctx(), open_watch())
    assert source.read() == []  # no session file yet
    bench.write(bench.recorded("gemini_tui.session.jsonl"))
    items = source.read()
    assert usages(items) == EXPECTED
    assert {i.model for i in items if isinstance(i, CallUsage)} == {"gemini-2.5-pro"}
    # The same figures the headless split takes from the same file, under the same ids.
    headless = session_calls(SESSION, bench.ctx().env)
    assert [(c.usage, c.call_id) for c in headless] == [(i.usage, i.call_id) for i in items if isinstance(i, CallUsage)]
    assert [i.session_id for i in items if isinstance(i, SessionStarted)] == [SESSION]
    assert states(items) == ["thinking", "tool", "thinking", "waiting", "thinking", "waiting"]
    assert source.read() == []
    source.close()


def test_inotify_wakes_the_relay_when_gemini_writes(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    bench.chats.mkdir(parents=True)
    source = GeminiNativeSource(bench.ctx(), open_watch())
    if source.watch is None:
        pytest.skip("inotify is not available here")
    (fd,) = source.filenos()
    import select

    assert select.select([fd], [], [], 0)[0] == []
    bench.write(bench.recorded("gemini_tui.session.jsonl"))
    assert select.select([fd], [], [], 5)[0] == [fd]
    assert usages(source.read()) == EXPECTED
    assert select.select([fd], [], [], 0)[0] == []  # drained
    source.close()


def test_without_inotify_the_file_is_read_on_a_timer(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    source = GeminiNativeSource(bench.ctx(), None)
    assert source.filenos() == () and source.deadline() is not None
    bench.write(bench.recorded("gemini_tui.session.jsonl"))
    assert usages(source.read()) == EXPECTED


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=12))
def test_a_file_growing_in_any_pieces_is_counted_once(tmp_path_factory: pytest.TempPathFactory, cuts: list[int]) -> None:
    bench = Bench(tmp_path_factory.mktemp("grow"))
    data = bench.recorded("gemini_tui.session.jsonl")
    source = GeminiNativeSource(bench.ctx(), None)
    bench.chats.mkdir(parents=True)
    items: list[Any] = []
    with bench.file.open("wb") as fh:
        for cut in sorted({min(c, len(data)) for c in cuts}) + [len(data)]:
            fh.seek(0, 2)
            fh.write(data[fh.tell() : cut])
            fh.flush()
            items += source.read()
    assert usages(items) == EXPECTED
    assert texts(items) == ["first answer done", "second answer done"]


def test_truncated_replaced_and_odd_lines_never_count_a_call_twice(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    data = bench.recorded("gemini_tui.session.jsonl")
    lines = data.splitlines()
    odd = [
        b"not json",
        b'{"id":"x","type":"gemini","tokens":{"input":"many","output":1}}',
        b'{"id":"y","type":"gemini","tokens":{"input":1,"output":1,"cached":5}}',
        b'{"$set":{"messages":"not a list"}}',
        b'{"$set":{"messages":[1,"two",{"type":"gemini","id":["z"],"tokens":{}}]}}',
        b'{"type":"gemini","tokens":{"input":1,"output":1}}',
        b'{"id":"w","type":"gemini","content":"' + b"y" * (9 << 20) + b'","tokens":{"input":5,"output":1}}',
    ]
    bench.write(b"\n".join([lines[0], *odd, *lines[1:]]) + b"\n")
    source = GeminiNativeSource(bench.ctx(), None)
    items = source.read()
    bench.file.write_bytes(data[:50])  # truncated
    items += source.read()
    copy = bench.file.with_suffix(".tmp")
    copy.write_bytes(data)
    os.replace(copy, bench.file)  # replaced
    items += source.read()
    assert usages(items) == EXPECTED
    # The odd lines' texts are no call's answer here (no content, or a line too long to keep); each answer once.
    assert texts(items) == ["first answer done", "second answer done"]


def test_files_of_other_projects_or_older_sessions_are_not_this_launchs(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    data = bench.recorded("gemini_tui.session.jsonl")
    other = bench.chats.parent.parent / "elsewhere" / "chats" / "session-2026-12-01T11-00-aaaaaaaa.jsonl"
    other.parent.mkdir(parents=True)
    head, rest = data.split(b"\n", 1)
    foreign = json.loads(head)
    foreign["projectHash"] = "0" * 64
    other.write_bytes(json.dumps(foreign).encode() + b"\n" + rest)
    old = bench.chats / "session-2026-11-01T11-00-bbbbbbbb.jsonl"
    bench.chats.mkdir(parents=True)
    stale = json.loads(head)
    stale["startTime"] = "2026-11-01T11:00:00.000Z"
    old.write_bytes(json.dumps(stale).encode() + b"\n" + rest)
    source = GeminiNativeSource(bench.ctx(), None)
    assert source.read() == []
    bench.write(data)
    assert usages(source.read()) == EXPECTED


def test_a_chosen_session_id_picks_its_own_file(tmp_path: Path) -> None:
    bench = Bench(tmp_path, session_id="11111111-2222-3333-4444-555555555555")
    bench.write(bench.recorded("gemini_tui.session.jsonl"))  # another session's file
    source = GeminiNativeSource(bench.ctx(), None)
    assert usages(source.read()) == []


def test_a_resume_reports_only_its_own_calls(tmp_path: Path) -> None:
    bench = Bench(tmp_path, session_id=SESSION, resumed=True)
    before = bench.recorded("gemini_tui.session.jsonl")
    after = bench.recorded("gemini_tui_resumed.0.session.jsonl")
    bench.write(before)
    source = GeminiNativeSource(bench.ctx(), None)
    # Gemini appends a header and a $set of the whole history, then the new turn.
    bench.file.write_bytes(after)
    items = source.read()
    assert usages(items) == RESUMED
    assert [i.session_id for i in items if isinstance(i, SessionStarted)] == [SESSION]
    assert states(items)[-1] == "waiting"
    assert told(items)[-3:] == ["thinking", "third answer done", "waiting"] and texts(items) == ["third answer done"]


def test_native_extras_adds_no_flags(tmp_path: Path) -> None:
    extras = native_extras(Bench(tmp_path).ctx())
    assert extras.argv == [] and extras.env == {}
    (source,) = extras.sources
    source.close()


def test_inotify_follows_folders_gemini_creates_later(tmp_path: Path) -> None:
    import select

    bench = Bench(tmp_path)
    (bench.home / ".gemini").mkdir(parents=True)  # a new per-agent home: no tmp/ yet
    source = GeminiNativeSource(bench.ctx(), open_watch())
    if source.watch is None:
        pytest.skip("inotify is not available here")
    (fd,) = source.filenos()
    items: list[Any] = []
    for folder in (bench.chats.parent.parent, bench.chats.parent, bench.chats):
        folder.mkdir()
        assert select.select([fd], [], [], 5)[0] == [fd], f"no wake-up for {folder}"
        items += source.read()
    bench.file.write_bytes(bench.recorded("gemini_tui.session.jsonl"))
    assert select.select([fd], [], [], 5)[0] == [fd]
    items += source.read()
    assert usages(items) == EXPECTED
    source.close()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)
keys = st.sampled_from(["id", "type", "tokens", "content", "toolCalls", "model", "$set", "messages", "sessionId", "projectHash"])
shapes = st.dictionaries(keys | st.text(max_size=8), json_values, max_size=6)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(shapes, max_size=8))
def test_any_session_line_shape_is_taken_without_an_exception(
    tmp_path_factory: pytest.TempPathFactory, lines: list[dict[str, Any]]
) -> None:
    source = GeminiNativeSource(Bench(tmp_path_factory.mktemp("shapes")).ctx(), None)
    for line in lines:
        for item in source._line(line):
            if isinstance(item, CallUsage):
                assert all(isinstance(v, int) and v >= 0 for v in item.usage.as_dict().values())


def test_an_inherited_ci_true_is_turned_off_for_the_interface(tmp_path: Path) -> None:
    # Gemini 0.61 takes CI=true (or GITHUB_ACTIONS=true) for headless even at a terminal: a resume then exits 42.
    base = Bench(tmp_path).ctx()
    for env, expected in (
        ({"CI": "true"}, {"CI": "false"}),
        ({"CI": "true", "GITHUB_ACTIONS": "true"}, {"CI": "false", "GITHUB_ACTIONS": "false"}),
        ({"CI": "1", "GITHUB_ACTIONS": "false"}, {}),  # only "true" makes Gemini headless: others are left alone
    ):
        extras = native_extras(records.replace(base, env={**base.env, **env}))
        assert extras.env == expected
        for source in extras.sources:
            source.close()


def test_each_answer_comes_once_before_the_waiting_of_its_turn(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    source = GeminiNativeSource(bench.ctx(), None)
    bench.write(bench.recorded("gemini_tui.session.jsonl"))
    items = source.read()
    # The tool call's record (written twice, no text) tells none; each answer is before its turn's waiting.
    assert told(items) == [
        "thinking",
        "tool",
        "thinking",
        "first answer done",
        "waiting",
        "thinking",
        "second answer done",
        "waiting",
    ]
    with bench.file.open("ab") as fh:  # a record written again (its tool results, its tokens): its answer was given
        fh.write(bench.recorded("gemini_tui.session.jsonl").splitlines(keepends=True)[-2])
    assert texts(source.read()) == []


def test_only_a_model_calls_text_is_an_answer_never_thoughts_notes_or_history(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    head = bench.recorded("gemini_tui.session.jsonl").splitlines(keepends=True)[0]
    tokens = {"input": 10, "output": 2, "cached": 0, "thoughts": 1, "total": 13}
    records = [
        {"$set": {"messages": [{"id": "h1", "type": "gemini", "content": "an old answer", "tokens": tokens}]}},  # history
        {"id": "n1", "type": "gemini", "content": [{"text": "Binary content received.", "thought": True}]},  # the CLI's note
        {"id": "n2", "type": "gemini", "content": [{"text": "Got it. Thanks for the context!"}]},  # no tokens: not a call
        {
            "id": "c1",
            "type": "gemini",
            "content": "",
            "thoughts": [{"subject": "Plan", "description": "secret"}],
            "tokens": tokens,
            "toolCalls": [{"name": "read_file", "status": "success"}],
        },
        {
            "id": "c2",
            "type": "gemini",
            "content": [
                {"text": "Thinking…", "thought": True},
                {"functionCall": {"name": "x"}},
                {"text": "parts "},
                {"text": "answer"},
            ],
            "tokens": tokens,
        },
        {"id": "c3", "type": "gemini", "content": "the answer", "tokens": tokens},
        {"id": "u1", "type": "user", "content": [{"text": "the person's prompt"}]},
        {"id": "i1", "type": "info", "content": "an info line"},
        {"id": "c3", "type": "gemini", "content": "the answer, rewritten", "tokens": tokens},  # the same message again
    ]
    bench.write(head + b"".join(json.dumps(r).encode() + b"\n" for r in records))
    assert texts(GeminiNativeSource(bench.ctx(), None).read()) == ["parts answer", "the answer"]


def test_answer_text_of_odd_shapes_never_raises() -> None:
    from agentlaunch.providers.native.gemini_records import answer_text

    assert answer_text(None) == "" and answer_text(5) == "" and answer_text({"text": "x"}) == ""
    assert answer_text([None, 1, "x", {"text": 5}, {"text": ["a"]}, {"thought": "yes", "text": "no"}, {"text": "ok"}]) == "ok"
    huge = "h" * (3 << 20)
    assert answer_text(huge) == huge
