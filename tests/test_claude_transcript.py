"""Claude Code's transcript read as it grows: each call once, whatever the file does (recorded on 2.1.332)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agentlaunch.events import CallUsage, Compaction, Text, Warning
from agentlaunch.providers.native.claude_transcript import CallsFromTranscript, last_cost_state, project_folder, salvage_line
from agentlaunch.providers.native.jsonl_tail import JsonlTail
from agentlaunch.sinks import StateChanged
from agentlaunch.token_usage import Usage

DATA = Path(__file__).parent / "data" / "claude_tui"


def recorded(name: str) -> bytes:
    return (DATA / name / "transcript.jsonl").read_bytes()


def assistant(call_id: str, usage: dict[str, int], stop: str | None = "end_turn", **extra: object) -> dict[str, object]:
    return {
        "type": "assistant",
        "message": {"id": call_id, "model": "claude-sonnet-4-5", "usage": usage, "stop_reason": stop, "content": []},
        **extra,
    }


U = {"input_tokens": 3, "cache_creation_input_tokens": 4, "cache_read_input_tokens": 5, "output_tokens": 6}


def counted(items: list[object]) -> list[tuple[str | None, Usage]]:
    return [(i.call_id, i.usage) for i in items if isinstance(i, CallUsage)]


def texts(items: list[object]) -> list[str]:
    return [i.text for i in items if isinstance(i, Text)]


def block(call_id: str, index: int, content: object, **extra: object) -> dict[str, object]:
    """One assistant line as 2.1.332 writes it: one content block of message ``call_id``, its ``apiBlockIndex``."""
    line = assistant(call_id, U, stop=None, apiBlockIndex=index, uuid=f"{call_id}-{index}", **extra)
    line["message"]["content"] = content  # type: ignore[index]
    return line


def test_project_folder_is_the_cwd_with_every_other_character_as_a_dash() -> None:
    assert project_folder("/tmp/alrec-3szdowl9/work") == "-tmp-alrec-3szdowl9-work"
    assert project_folder("/home/me/my_app.v2") == "-home-me-my-app-v2"


def test_recorded_tool_turn_counts_each_message_once_with_its_final_usage() -> None:
    lines = [json.loads(line) for line in recorded("tool_turn").splitlines()]
    calls = CallsFromTranscript()
    items = calls.lines(lines) + calls.close_calls()
    # The fake API's figures: two lines for msg_fake_0001 (text, tool_use), counted once.
    assert counted(items) == [
        ("msg_fake_0001", Usage(15, 2000, 11000, 40)),
        ("msg_fake_0002", Usage(6, 120, 13000, 4)),
    ]
    assert all(i.model == "claude-sonnet-4-5" for i in items if isinstance(i, CallUsage))


def test_recorded_refusal_says_waiting_and_compact_boundary_is_one_compaction() -> None:
    refused = CallsFromTranscript().lines([json.loads(line) for line in recorded("denied_turn").splitlines()])
    assert refused[-1] == StateChanged("waiting", source="transcript")
    assert counted(refused) == [("msg_fake_0001", Usage(21, 1000, 9000, 25))]
    calls = CallsFromTranscript()
    lines = [json.loads(line) for line in recorded("slow_compact").splitlines()]
    items = calls.lines(lines) + calls.lines(lines)  # read twice (a replaced file read again): nothing twice
    assert [i for i in items if isinstance(i, Compaction)] == [Compaction("manual", 13321, 2995)]
    # The compaction's two summary calls (500/80 and the fake's default 10/5) have no assistant line:
    # the cost-state totals beyond the counted calls are their sum, once.
    assert counted(items) == [
        ("msg_fake_0001", Usage(11, 4000, 9000, 33)),
        ("msg_fake_0002", Usage(9, 300, 13000, 12)),
        ("side-calls-1", Usage(510, 0, 0, 85)),
    ]


def test_a_call_without_a_stop_reason_counts_when_a_later_line_or_the_launch_closes_it() -> None:
    calls = CallsFromTranscript()
    start = {**U, "output_tokens": 1}
    assert calls.lines([assistant("m1", start, stop=None)]) == []
    assert calls.lines([assistant("m1", U, stop=None)]) == []  # a later block of the same call: its usage grows
    assert calls.open_calls == 1
    assert counted(calls.lines([{"type": "user", "message": {"content": "next"}}])) == [("m1", Usage(3, 4, 5, 6))]
    assert calls.lines([assistant("m2", U, stop=None)]) == []
    assert counted(calls.close_calls()) == [("m2", Usage(3, 4, 5, 6))]
    assert calls.close_calls() == []


def cost_state(**models: tuple[int, int, int, int]) -> dict[str, object]:
    keys = ("inputTokens", "cacheCreationInputTokens", "cacheReadInputTokens", "outputTokens")
    return {"type": "cost-state", "modelUsage": {m: dict(zip(keys, v, strict=True)) for m, v in models.items()}}


def test_cost_state_beyond_the_counted_calls_is_one_side_call_per_model_and_never_counted_twice(tmp_path: Path) -> None:
    calls = CallsFromTranscript()
    items = calls.lines([assistant("m1", U), cost_state(**{"claude-sonnet-4-5": (3, 4, 5, 6)})])
    assert counted(items) == [("m1", Usage(3, 4, 5, 6))]  # the totals are the counted call: nothing more
    items = calls.lines(
        [
            assistant("m2", U),
            cost_state(**{"claude-sonnet-4-5": (106, 8, 10, 62), "claude-haiku-4-5": (50, 0, 0, 9)}),
            cost_state(**{"claude-sonnet-4-5": (106, 8, 10, 62), "claude-haiku-4-5": (50, 0, 0, 9)}),  # written twice
        ]
    )
    assert counted(items) == [
        ("m2", Usage(3, 4, 5, 6)),
        ("side-calls-1", Usage(100, 0, 0, 50)),
        ("side-calls-2", Usage(50, 0, 0, 9)),
    ]
    assert [i.model for i in items if isinstance(i, CallUsage)][1:] == ["claude-sonnet-4-5", "claude-haiku-4-5"]
    # Totals that went down (a new process) or are not counts: a new base, nothing counted.
    assert counted(calls.lines([cost_state(**{"claude-sonnet-4-5": (1, 0, 0, 1)})])) == []
    assert counted(calls.lines([{"type": "cost-state", "modelUsage": {"m": {"inputTokens": -5}}}])) == []
    assert counted(calls.lines([cost_state(**{"claude-sonnet-4-5": (2, 0, 0, 1)})])) == [("side-calls-3", Usage(1, 0, 0, 0))]
    # A resumed session starts from the last cost-state already in its file.
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [cost_state(a=(1, 1, 1, 1)), assistant("m", U), cost_state(a=(9, 9, 9, 9))]))
    assert last_cost_state(path) == {"a": Usage(9, 9, 9, 9)}
    assert last_cost_state(tmp_path / "missing.jsonl") == {}
    resumed = CallsFromTranscript(base=last_cost_state(path))
    assert counted(resumed.lines([cost_state(a=(9, 9, 9, 9))])) == []


def test_lines_of_unknown_shape_bad_usage_synthetic_and_old_lines_never_count() -> None:
    calls = CallsFromTranscript(started_at=2_000_000_000.0)
    weird: list[object] = [
        [],
        "x",
        3,
        None,
        {},
        {"type": 7},
        {"type": "assistant"},
        {"type": "assistant", "message": []},
        {"type": "assistant", "message": {"id": {"x": 1}, "usage": U}},
        assistant("m-syn", U) | {"isApiErrorMessage": True},
        {"type": "assistant", "message": {"id": "m-s2", "model": "<synthetic>", "usage": U, "stop_reason": "x"}},
        assistant("m-old", U, timestamp="2026-01-01T00:00:00Z"),
        {"type": "system", "subtype": "compact_boundary", "compactMetadata": "no"},
        {"type": "user", "message": {"content": [{"type": "text", "text": 5}]}},
    ]
    items = calls.lines(weird)
    assert counted(items) == []
    assert items == [Compaction(None, None, None)]  # a boundary of unknown shape is still a compaction
    bad = calls.lines([assistant("m-bad", {**U, "output_tokens": -1})])
    assert len(bad) == 1 and isinstance(bad[0], Warning) and "m-bad" in bad[0].message
    assert calls.lines([assistant("m-bad", U)]) == []  # refused once, never counted later


def test_tail_follows_appends_partial_lines_truncation_and_replacement(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    tail = JsonlTail(path)
    assert tail.read() == []  # not there yet
    path.write_bytes(b'{"a": 1}\n{"b"')
    assert tail.read() == [{"a": 1}]
    with path.open("ab") as f:
        f.write(b': 2}\nnot json\n\n{"c": 3}\n')
    assert tail.read() == [{"b": 2}, {"c": 3}]
    assert tail.bad_lines == 1
    path.write_bytes(b'{"d": 4}\n')  # truncated and rewritten
    assert tail.read() == [{"d": 4}]
    other = tmp_path / "new.jsonl"
    other.write_bytes(b'{"e": 5}\n{"f": 6}\n')
    os.replace(other, path)  # a new file at the same path (a new inode), longer than the offset
    assert tail.read() == [{"e": 5}, {"f": 6}]
    assert tail.restarts == 2


def test_tail_refuses_a_fifo_and_a_folder_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    assert JsonlTail(fifo).read() == []
    assert JsonlTail(tmp_path).read() == []


def test_tail_keeps_only_the_head_and_tail_of_a_huge_line_and_salvages_its_call(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    # 2.1.332's key order: id and model first, then the content, then stop_reason and usage.
    content = [{"type": "tool_use", "input": {"content": "x" * 3_000_000}}]
    message = {"model": "claude-sonnet-4-5", "id": "msg_big", "content": content, "stop_reason": "tool_use", "usage": U}
    huge = {"type": "assistant", "message": message, "timestamp": "2026-12-01T11:15:22.035Z"}
    path.write_bytes(json.dumps(huge).encode() + b"\n" + json.dumps(assistant("msg_after", U)).encode() + b"\n")
    tail = JsonlTail(path, salvage=salvage_line, max_line=1 << 20, keep=1 << 16)
    lines = tail.read()
    assert tail.huge_lines == 1
    assert len(tail._partial) == 0 and len(tail._huge_tail) == 0
    assert counted(CallsFromTranscript().lines(lines)) == [("msg_big", Usage(3, 4, 5, 6)), ("msg_after", Usage(3, 4, 5, 6))]
    assert salvage_line(b'{"type":"user","x":"' + b"y" * 100, b'"usage":{"input_tokens":1}}') is None


def test_tail_started_at_the_end_skips_what_the_file_held(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"old": 1}\n')
    tail = JsonlTail(path, start_at_end=True)
    with path.open("ab") as f:
        f.write(b'{"new": 2}\n')
    assert tail.read() == [{"new": 2}]


@settings(max_examples=60, deadline=None)
@given(
    cuts=st.lists(st.integers(min_value=0, max_value=400_000), max_size=12),
    junk=st.lists(st.binary(max_size=300), max_size=4),
    truncate_at=st.none() | st.integers(min_value=0, max_value=400_000),
)
def test_any_split_junk_or_restart_counts_each_recorded_call_exactly_once(
    tmp_path_factory: object, cuts: list[int], junk: list[bytes], truncate_at: int | None
) -> None:
    folder = tmp_path_factory.mktemp("tail")  # type: ignore[attr-defined]
    path = folder / "t.jsonl"
    data = recorded("tool_turn")
    for j in junk:  # lines of no known shape (or not JSON) between the real ones
        cut = data.find(b"\n", len(data) // 2) + 1
        data = data[:cut] + j.replace(b"\n", b" ") + b"\n" + data[cut:]
    tail, calls = JsonlTail(path, salvage=salvage_line, max_line=1 << 17, keep=1 << 14), CallsFromTranscript()
    items: list[object] = []
    written = 0
    path.write_bytes(b"")
    for cut in sorted(c % (len(data) + 1) for c in cuts) + [len(data)]:
        with path.open("ab") as f:
            f.write(data[written:cut])
        written = max(written, cut)
        items += calls.lines(tail.read())
        if truncate_at is not None and written >= truncate_at % (len(data) + 1):
            written //= 2
            path.write_bytes(data[:written])  # truncated (rewritten shorter): read again from its start
            items += calls.lines(tail.read())
            truncate_at = None
    items += calls.close_calls()
    assert counted(items) == [("msg_fake_0001", Usage(15, 2000, 11000, 40)), ("msg_fake_0002", Usage(6, 120, 13000, 4))]
    assert texts(items) == ["Writing.", "Done."]  # each answer block once, whatever the file did


line_strategy = st.one_of(
    st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.integers(0, 50), st.booleans()).map(
        lambda t: assistant(t[0], {**U, "output_tokens": t[1]}, stop="end_turn" if t[2] else None)
    ),
    st.sampled_from(
        [
            {"type": "user", "message": {"content": "x"}},
            {"type": "system", "subtype": "turn_duration"},
            {"type": "mode"},
            {"type": "assistant", "message": "?"},
            {"type": "cost-state", "modelUsage": 5},
        ]
    ),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(line_strategy, st.booleans()), max_size=40))
def test_any_sequence_of_lines_and_closes_counts_each_call_id_at_most_once_and_all_in_the_end(
    steps: list[tuple[dict[str, object], bool]],
) -> None:
    calls = CallsFromTranscript()
    items: list[object] = []
    for line, close in steps:
        items += calls.line(line)
        if close:
            items += calls.close_calls()
    items += calls.close_calls()
    ids = [c.call_id for c in items if isinstance(c, CallUsage)]
    assert len(ids) == len(set(ids))
    seen = {line["message"]["id"] for line, _ in steps if line.get("type") == "assistant" and isinstance(line["message"], dict)}  # type: ignore[index]
    assert set(ids) == seen


def test_recorded_answer_text_is_each_text_block_once_in_order_with_its_call() -> None:
    lines = [json.loads(line) for line in recorded("tool_turn").splitlines()]
    calls = CallsFromTranscript()
    items = calls.lines(lines) + calls.lines(lines) + calls.close_calls()  # read twice: nothing twice
    # "Writing." is the text block before the tool use (same message as the tool_use line), "Done." the answer.
    assert [(type(i).__name__, getattr(i, "text", None)) for i in items if isinstance(i, Text | CallUsage)] == [
        ("Text", "Writing."),
        ("CallUsage", None),
        ("Text", "Done."),
        ("CallUsage", None),
    ]
    # The user's prompt, the tool's result and the CLI's request copies (api-request-blob) are no answer.
    slow = [json.loads(line) for line in recorded("slow_compact").splitlines()]
    assert texts(CallsFromTranscript().lines(slow)) == ["Looking first, slowly.", "Slow answer end"]
    assert texts(CallsFromTranscript().lines([json.loads(line) for line in recorded("denied_turn").splitlines()])) == []


def test_a_message_split_over_lines_gives_its_text_blocks_once_and_nothing_but_text() -> None:
    calls = CallsFromTranscript()
    lines = [
        block("m1", 0, [{"type": "thinking", "thinking": "secret plan", "signature": "sig"}]),
        block("m1", 1, [{"type": "text", "text": "First part. "}]),
        block("m1", 2, [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]),
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "a.txt"}]}],
            },
        },
        block("m2", 0, [{"type": "redacted_thinking", "data": "x"}]),
        block("m2", 1, [{"type": "text", "text": "Second part."}]),
        block("m2", 2, [{"type": "text", "text": "Third part."}]),
    ]
    items = calls.lines(lines)
    assert texts(items) == ["First part. ", "Second part.", "Third part."]
    # The same blocks again, read from a replaced file or written again under new line uuids: nothing twice.
    again = [dict(line, uuid="other-" + str(n)) for n, line in enumerate(lines)]
    later = calls.lines(lines) + calls.lines(again) + calls.close_calls()
    assert texts(later) == []
    assert counted(items + later) == [("m1", Usage(3, 4, 5, 6)), ("m2", Usage(3, 4, 5, 6))]  # calls as before
    # Without apiBlockIndex the line's uuid tells the block; without either, its text.
    bare = assistant("m3", U, uuid="u-1")
    bare["message"]["content"] = [{"type": "text", "text": "bare"}]  # type: ignore[index]
    anonymous = assistant("m4", U)
    anonymous["message"]["content"] = [{"type": "text", "text": "anonymous"}]  # type: ignore[index]
    assert texts(calls.lines([bare, bare, anonymous, anonymous])) == ["bare", "anonymous"]


def test_history_sidechains_and_the_clis_stand_ins_give_no_text() -> None:
    calls = CallsFromTranscript(started_at=STARTED)
    answer = [{"type": "text", "text": "an answer"}]
    lines = [
        block("old", 0, answer, timestamp="2026-01-01T00:00:00Z"),  # a resumed session's earlier turn
        block("side", 0, answer, timestamp=NOW, isSidechain=True),  # a sub-agent's reply
        block("err", 0, [{"type": "text", "text": "API Error: 500"}], timestamp=NOW, isApiErrorMessage=True),
        {"type": "assistant", "timestamp": NOW, "message": {"id": "syn", "model": "<synthetic>", "content": answer}},
        {"type": "assistant", "timestamp": NOW, "message": {"content": answer}},  # no message id: not a call's line
        block("new", 0, [{"type": "text", "text": "this launch's answer"}], timestamp=NOW),
    ]
    assert texts(calls.lines(lines)) == ["this launch's answer"]


def test_text_of_odd_shapes_never_raises_and_a_huge_text_is_given_whole() -> None:
    calls = CallsFromTranscript()
    odd: list[object] = [
        block("o1", 0, [{"type": "text", "text": 5}, {"type": "text", "text": None}, {"type": "text"}]),
        block("o2", 0, "a string content"),
        block("o3", 0, {"type": "text", "text": "a dict content"}),
        block("o4", 0, [None, 3, "text", ["text"], {"type": ["text"], "text": "x"}, {"type": "text", "text": {"a": 1}}]),
        block("o5", 0, [{"type": "text", "text": "   \n"}]),  # nothing to say
        block("o6", "not an index", [{"type": "text", "text": "odd index"}]),
        block("o7", True, [{"type": "text", "text": "bool index"}]),
    ]
    assert texts(calls.lines(odd)) == ["odd index", "bool index"]
    huge = "y" * (3 << 20)
    assert texts(calls.lines([block("o8", 0, [{"type": "text", "text": huge}])])) == [huge]


NOW = "2026-12-01T12:00:00.000Z"
STARTED = 1796126000.0  # 2026-12-01T11:53:20Z: after 2026-01-01, before NOW
