"""Codex's native source on recorded rollout files and hook reports (Codex CLI 0.171.0's TUI, tests/data/native).

The recordings are replayed into a temporary CODEX_HOME the way Codex writes
them (whole, in pieces, late, truncated, replaced, with lines of unknown
shapes), and the hook reports are sent to the source's real socket by the
real reporter's datagram format. What must hold: each model call is reported
once, with the figures the headless split reads from the same file.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlaunch.events import CallUsage, ContextWindow, SessionStarted, Text
from agentlaunch.providers.codex_rollout import rollout_calls, thread_days
from agentlaunch.providers.native.codex import CodexNativeSource
from agentlaunch.providers.native.codex_hooks import EVENTS
from agentlaunch.providers.native.codex_rollout_scan import newest_rollout
from agentlaunch.providers.native.hook_socket import HookSocket
from agentlaunch.providers.native.source import PromptTyped
from agentlaunch.sinks import StateChanged
from tests.support.codex_recorded import (
    EXPECTED,
    THREAD,
    TODAY,
    Bench,
    calls,
    event_msg,
    json_values,
    recorded,
    states,
)


def hooks(home: Path, work: Path) -> list[dict[str, Any]]:
    lines = recorded("codex_tui.hooks.jsonl", home, work).decode().splitlines()
    return [json.loads(line) for line in lines]


def test_the_recorded_session_is_every_call_once_with_the_headless_figures(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    bench.rollout.write_bytes(recorded("codex_tui.rollout.jsonl", bench.home, bench.work))
    source = bench.source()
    items = source.read()
    assert calls(items) == EXPECTED
    assert all(i.model == "gpt-5.5" for i in items if isinstance(i, CallUsage))
    # The same figures a headless turn is split into (rollout_calls reads the same records). It looks in the days of
    # the thread id's time (the recording's, 2026-12-01); the bench's file is in today's folder, where the source looks.
    if TODAY not in thread_days(THREAD):
        recorded_day = bench.home / ".codex" / "sessions" / "2026" / "12" / "01"
        recorded_day.mkdir(parents=True)
        (recorded_day / bench.rollout.name).write_bytes(bench.rollout.read_bytes())
    assert [(c.usage, c.call_id) for c, _ in rollout_calls(THREAD, bench.ctx().env)] == EXPECTED
    assert [i for i in items if isinstance(i, ContextWindow)] == [ContextWindow(258400, "gpt-5.5")]
    assert [i.session_id for i in items if isinstance(i, SessionStarted)] == [THREAD]
    assert source.read() == []  # nothing new: nothing again
    source.close()


def turns_of(data: bytes) -> list[bytes]:
    """The rollout cut after each turn's ``task_complete`` line (the session's head goes with the first turn)."""
    parts, current = [], b""
    for line in data.splitlines(keepends=True):
        current += line
        if b'"task_complete"' in line:
            parts.append(current)
            current = b""
    return parts + ([current] if current else [])


def test_hooks_tell_the_states_and_the_file(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    data = recorded("codex_tui.rollout.jsonl", bench.home, bench.work)
    source = bench.source()
    items: list[Any] = []
    first_run = hooks(bench.home, bench.work)[:7]  # the new session's hooks (the rest are the resume's)
    turn_ids = [r["payload"].get("turn_id") for r in first_run if r["event"] == "UserPromptSubmit"]
    bench.send(first_run[0]["event"], first_run[0]["payload"])  # SessionStart
    items += source.read()
    # As Codex does it: a turn's hooks, its rollout lines, then its Stop hook.
    for turn_id, lines in zip(turn_ids, turns_of(data), strict=True):
        for report in first_run:
            if report["payload"].get("turn_id") == turn_id and report["event"] != "Stop":
                bench.send(report["event"], report["payload"])
        items += source.read()
        with bench.rollout.open("ab") as fh:
            fh.write(lines)
        items += source.read()
        bench.send("Stop", {"session_id": THREAD, "turn_id": turn_id})
        items += source.read()
    # SessionStart, Codex's first report, says it is up: waiting until its first prompt.
    assert states(items) == ["waiting", "thinking", "tool", "thinking", "waiting", "thinking", "waiting"]
    assert calls(items) == EXPECTED
    # Each prompt the interface submitted, for the session's title.
    assert [i.text for i in items if isinstance(i, PromptTyped)] == ["run echo hi please", "and again"]
    # Every call comes before its turn's "waiting": none is counted as a turn of its own.
    kinds = [type(i).__name__ if not isinstance(i, StateChanged) else i.state for i in items]
    turn_end = kinds.index("waiting", kinds.index("thinking"))  # the first turn's end (not SessionStart's "up")
    assert turn_end > kinds.index("CallUsage") and kinds[-1] == "waiting"
    # Each turn's answer once, before the "waiting" that ends it.
    answers = [(i.text if isinstance(i, Text) else i.state) for i in items if isinstance(i, Text | StateChanged)]
    assert answers == [
        "waiting",
        "thinking",
        "tool",
        "thinking",
        "first answer done",
        "waiting",
        "thinking",
        "second answer done",
        "waiting",
    ]
    assert source.tail is not None and source.tail.path == bench.rollout
    assert source.deadline() is not None  # two more reads are planned after the turn's end
    source.close()
    assert not (bench.runtime / "s.sock").exists()


def test_waiting_waits_for_the_turns_end_in_the_rollout_after_the_stop_hook(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    now = [100.0]
    data = turns_of(recorded("codex_tui.rollout.jsonl", bench.home, bench.work))[0]
    cut = data.index(b'"task_complete"')
    source = CodexNativeSource(bench.ctx(), HookSocket(bench.runtime / "s.sock"), clock=lambda: now[0])
    bench.send("UserPromptSubmit", {"session_id": THREAD, "transcript_path": str(bench.rollout)})
    bench.rollout.write_bytes(data[: data.rindex(b"\n", 0, cut) + 1])  # everything but task_complete
    bench.send("Stop", {"session_id": THREAD})
    items = source.read()
    assert states(items) == ["thinking"] and len(calls(items)) == 2
    with bench.rollout.open("ab") as fh:
        fh.write(data[data.rindex(b"\n", 0, cut) + 1 :])
    now[0] += 0.3
    assert states(source.read()) == ["waiting"]


def test_a_stop_hook_whose_turn_end_never_shows_is_waiting_after_a_grace(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    now = [100.0]
    source = CodexNativeSource(bench.ctx(), HookSocket(bench.runtime / "s.sock"), clock=lambda: now[0])
    bench.send("UserPromptSubmit", {"session_id": THREAD})
    bench.send("Stop", {"session_id": THREAD})
    assert states(source.read()) == ["thinking"]
    deadline = source.deadline()
    assert deadline is not None and deadline <= now[0] + 2.0
    now[0] += 2.0
    assert states(source.read()) == ["waiting"]


def test_an_interrupted_turn_is_over_when_the_rollout_says_so(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    source = bench.source()
    bench.send("UserPromptSubmit", {"session_id": THREAD, "transcript_path": str(bench.rollout)})
    bench.rollout.write_text(
        json.dumps({"type": "event_msg", "payload": {"type": "turn_aborted", "reason": "interrupted"}}) + "\n"
    )
    assert states(source.read()) == ["thinking", "waiting"]
    source.close()


def test_a_denied_tool_after_a_prompt_is_thinking_again_from_its_output(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    source = bench.source()
    for event in ("UserPromptSubmit", "PreToolUse", "PermissionRequest"):
        bench.send(event, {"session_id": THREAD, "transcript_path": str(bench.rollout)})
    assert states(source.read()) == ["thinking", "tool", "asking"]
    output = {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1", "output": "rejected"}}
    bench.rollout.write_text(json.dumps(output) + "\n")
    assert states(source.read()) == ["thinking"]
    source.close()


def test_a_turn_running_is_read_on_a_backing_off_timer_and_idle_on_none(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    now = [100.0]
    source = CodexNativeSource(bench.ctx(), HookSocket(bench.runtime / "s.sock"), clock=lambda: now[0])
    bench.send("UserPromptSubmit", {"session_id": THREAD})
    assert states(source.read()) == ["thinking"]
    waits = []
    for _ in range(5):
        deadline = source.deadline()
        assert deadline is not None
        waits.append(round(deadline - now[0], 2))
        now[0] = deadline
        source.read()
    assert waits == [0.5, 1.0, 2.0, 2.0, 2.0]
    bench.send("Stop", {"session_id": THREAD})
    assert states(source.read()) == []  # the turn's end is awaited in the rollout (here: never written)
    now[0] += 2.0
    assert states(source.read()) == ["waiting"]
    now[0] += 10
    source.read()
    assert source.deadline() is None  # idle at the prompt: only a hook wakes the launch
    source.close()


@pytest.mark.parametrize(
    "payload",
    [{}, {"session_id": 7}, {"transcript_path": ["x"]}, {"transcript_path": "/nowhere/not-a-rollout.txt"}, {"session_id": None}],
)
def test_hook_reports_with_missing_or_odd_fields_still_tell_the_state(tmp_path: Path, payload: dict[str, Any]) -> None:
    bench = Bench(tmp_path)
    now = [100.0]
    source = CodexNativeSource(bench.ctx(), HookSocket(bench.runtime / "s.sock"), clock=lambda: now[0])
    for event in ("UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse", "Stop", "SomethingNew"):
        bench.send(event, payload)
    seen = states(source.read())
    now[0] += 2.0
    assert seen + states(source.read()) == ["thinking", "tool", "asking", "thinking", "waiting"]
    source.close()


def test_another_threads_hooks_are_not_this_sessions_state(tmp_path: Path) -> None:
    bench = Bench(tmp_path, resumed=True)
    source = bench.source()
    bench.send("UserPromptSubmit", {"session_id": "some-sub-agent-thread"})
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"\xff not a report", str(bench.runtime / "s.sock"))
    assert states(source.read()) == []
    source.close()


def test_a_new_session_finds_the_rollout_of_its_working_dir_started_after_the_launch(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    day = bench.rollout.parent
    other = day / "rollout-2026-12-01T11-00-00-00000000-0000-0000-0000-000000000000.jsonl"
    other.write_text(json.dumps({"type": "session_meta", "payload": {"id": "other", "cwd": "/elsewhere"}}) + "\n")
    bench.rollout.write_bytes(recorded("codex_tui.rollout.jsonl", bench.home, bench.work))
    assert newest_rollout(bench.home / ".codex", bench.work, time.time() - 5) == bench.rollout
    old_day = bench.home / ".codex" / "sessions" / "2001" / "01" / "01"
    old_day.mkdir(parents=True)
    (old_day / bench.rollout.name).write_bytes(bench.rollout.read_bytes())  # a folder of another day is not listed
    assert newest_rollout(bench.home / ".codex", bench.work, time.time() - 5) == bench.rollout
    assert newest_rollout(bench.home / ".codex", bench.work, time.time() + 3600) is None  # older than the launch


def test_a_fork_never_takes_its_parents_rollout_for_its_own(tmp_path: Path) -> None:
    # The parent runs on beside its fork and may write its file just as the fork starts: the newest file of the
    # working dir is then the parent's (a fork's own file appears later), and the fork took the parent's thread id.
    bench = Bench(tmp_path)
    bench.rollout.write_bytes(recorded("codex_tui.rollout.jsonl", bench.home, bench.work))
    assert newest_rollout(bench.home / ".codex", bench.work, time.time() - 5) == bench.rollout
    assert newest_rollout(bench.home / ".codex", bench.work, time.time() - 5, not_of=["agentlaunch-id", THREAD]) is None
    assert newest_rollout(bench.home / ".codex", bench.work, time.time() - 5, not_of=["*", "../x"]) == bench.rollout


def test_until_a_hook_is_heard_the_rollout_is_read_every_few_seconds(tmp_path: Path) -> None:
    # Hooks configured but never heard (the user turned Codex's hooks off): the rollout alone tells.
    bench = Bench(tmp_path)
    now = [100.0]
    source = CodexNativeSource(bench.ctx(), HookSocket(bench.runtime / "s.sock"), clock=lambda: now[0])
    for _ in range(8):
        deadline = source.deadline()
        assert deadline is not None
        now[0] = deadline
        source.read()
    bench.send("Stop", {"session_id": THREAD})
    now[0] += 1
    source.read()
    now[0] += 10
    source.read()
    assert source.deadline() is None
    source.close()


fields = st.sampled_from(["session_id", "transcript_path", "trigger", "type", "payload", "usage", "response_id", "info"])
shapes = st.dictionaries(fields | st.text(max_size=8), json_values, max_size=5)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    events=st.lists(st.tuples(st.sampled_from([*EVENTS, "Other"]), shapes), max_size=6),
    lines=st.lists(
        st.tuples(
            st.sampled_from(
                ["session_meta", "turn_context", "token_usage_record", "compacted", "event_msg", "response_item", "x"]
            ),
            shapes,
        ),
        max_size=6,
    ),
)
def test_any_hook_payload_or_rollout_line_shape_is_taken_without_an_exception(
    tmp_path_factory: pytest.TempPathFactory, events: list[tuple[str, dict[str, Any]]], lines: list[tuple[str, dict[str, Any]]]
) -> None:
    from agentlaunch.providers.native.hook_socket import HookReport

    bench = Bench(tmp_path_factory.mktemp("shapes"))
    source = bench.source(with_socket=False)
    for event, payload in events:
        assert isinstance(source._report(HookReport(event, payload)), list)
    for kind, payload in lines:
        obj: dict[str, Any] = {"type": kind, "payload": payload.get("payload", payload)}
        for item in source._line(obj):
            if isinstance(item, CallUsage):
                assert all(isinstance(v, int) and v >= 0 for v in item.usage.as_dict().values())


def test_a_resumed_codex_is_up_once_its_threads_file_is_found(tmp_path: Path) -> None:
    # Codex 0.171 resumed runs no hook until its first prompt (measured with tmux up --resume): without this it
    # would read as waiting on its own screen (asking) after ready_timeout.
    bench = Bench(tmp_path, resumed=True)
    bench.rollout.write_bytes(recorded("codex_tui.rollout.jsonl", bench.home, bench.work))
    source = bench.source()
    assert states(source.read()) == ["waiting"]
    assert states(source.read()) == []
    source.close()


def test_a_new_codex_says_nothing_until_it_reports(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    source = bench.source()
    assert states(source.read()) == []  # starting: no file, no hook yet
    source.close()


def test_a_turn_that_ends_on_an_error_says_so_before_its_waiting(tmp_path: Path) -> None:
    """Measured on 0.171.0 against a fake API answering 500: the screen said "Reconnecting... 5/5", the rollout nothing
    until ``task_complete`` with ``error`` (no retry is told in any file: Codex's ``retrying`` is not shown)."""
    from agentlaunch.events import TurnEnd

    bench = Bench(tmp_path)
    head = recorded("codex_tui.rollout.jsonl", bench.home, bench.work).splitlines(keepends=True)[0]
    error = {
        "message": "We’re currently experiencing high demand, which may cause temporary errors.",
        "codex_error_info": "internal_server_error",
    }
    complete = {"type": "task_complete", "turn_id": "t1", "last_agent_message": None, "error": error}
    bench.rollout.write_bytes(head + event_msg({"type": "task_started", "turn_id": "t1"}) + event_msg(complete))
    source = bench.source()
    bench.send("UserPromptSubmit", {"session_id": THREAD, "transcript_path": str(bench.rollout)})
    items = source.read()
    ends = [i for i in items if isinstance(i, TurnEnd)]
    assert [(e.is_error, e.error) for e in ends] == [(True, f"Codex reported: {error['message']}")]
    assert items.index(ends[0]) < max(n for n, i in enumerate(items) if isinstance(i, StateChanged) and i.state == "waiting")
    source.close()
