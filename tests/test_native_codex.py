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

from agentlaunch.events import CallUsage, Compaction, ContextWindow, SessionStarted, Text
from agentlaunch.providers.codex_rollout import rollout_calls, thread_days
from agentlaunch.providers.native import hook_report
from agentlaunch.providers.native.codex import CodexNativeSource, native_extras
from agentlaunch.providers.native.codex_hooks import EVENTS, hook_flags, trust_hash
from agentlaunch.providers.native.codex_rollout_scan import newest_rollout
from agentlaunch.providers.native.hook_socket import HookSocket
from agentlaunch.providers.native.source import NativeContext, PromptTyped
from agentlaunch.sinks import StateChanged
from agentlaunch.token_usage import Usage

DATA = Path(__file__).parent / "data" / "native"
THREAD = "01a23159-06b0-7eb3-8a1e-98642d967f31"
EXPECTED = [
    (Usage(input=1000, cache_read=8000, output=7, reasoning=3), "resp_fake_1"),
    (Usage(input=100, cache_read=9000, output=5), "resp_fake_2"),
    (Usage(input=100, cache_read=9100, output=4), "resp_fake_3"),
]
RESUMED = [(Usage(input=100, cache_read=9200, output=6, reasoning=1), "resp_fake_4")]


# Codex files a rollout under the day it started: the recordings' day folder (2026/12/01) becomes today's, where
# the source lists (the hooks' transcript_path names the folder too; replayed as recorded it failed on any other day).
TODAY = time.strftime("%Y/%m/%d")


def recorded(name: str, home: Path, work: Path) -> bytes:
    text = (DATA / name).read_text().replace("/sessions/2026/12/01/", f"/sessions/{TODAY}/")
    return text.replace("/HOME", str(home)).replace("/WORK", str(work)).encode()


class Bench:
    """A CODEX_HOME, a working dir, a runtime dir with the source's socket, and the rollout path Codex would use."""

    def __init__(self, root: Path, resumed: bool = False, started_at: float | None = None) -> None:
        self.home = root / "home"
        self.work = root / "work"
        self.work.mkdir(parents=True, exist_ok=True)
        self.rollout = self.home / ".codex" / "sessions" / TODAY / f"rollout-2026-12-01T11-24-07-{THREAD}.jsonl"
        self.rollout.parent.mkdir(parents=True, exist_ok=True)
        self.runtime = root / "rt"
        self.runtime.mkdir(exist_ok=True)
        self.resumed = resumed
        self.started_at = time.time() - 5 if started_at is None else started_at

    def ctx(self) -> NativeContext:
        env = {"HOME": str(self.home), "CODEX_HOME": str(self.home / ".codex")}
        return NativeContext(
            "coder", THREAD if self.resumed else None, self.resumed, self.work, env, self.runtime, self.started_at, "python3"
        )

    def source(self, with_socket: bool = True) -> CodexNativeSource:
        sock = HookSocket(self.runtime / "s.sock") if with_socket else None
        return CodexNativeSource(self.ctx(), sock)

    def send(self, event: str, payload: dict[str, Any]) -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendto(hook_report.report(event, json.dumps(payload)), str(self.runtime / "s.sock"))


def calls(items: list[Any]) -> list[tuple[Usage, str | None]]:
    return [(i.usage, i.call_id) for i in items if isinstance(i, CallUsage)]


def states(items: list[Any]) -> list[str]:
    return [i.state for i in items if isinstance(i, StateChanged)]


def texts(items: list[Any]) -> list[str]:
    return [i.text for i in items if isinstance(i, Text)]


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


def test_trust_hashes_are_the_ones_codex_0_171_stored() -> None:
    # Stored by Codex 0.171.0's TUI in config.toml after "Trust all and continue" for these hooks (timeout 600).
    assert trust_hash("stop", "/tmp/cgx/hook.sh Stop", 600) == (
        "sha256:965040716972c2ac9636d087facc6bafefb73ea71019fdb9d7da1b94e2fd72d0"
    )
    assert trust_hash("user_prompt_submit", "/tmp/cgx/hook.sh UserPromptSubmit", 600) == (
        "sha256:5caef6739ae6b157eddf21ddfe85dbe740ec8f4da266bc0e06e861e180ba8f5a"
    )


def test_hook_flags_install_and_trust_each_hook_and_leave_notify_alone() -> None:
    flags = hook_flags({"Stop": "python3 r.py 'a b' Stop"})
    assert flags[:2] == ["-c", 'hooks.Stop=[{hooks=[{type="command",command="python3 r.py \'a b\' Stop",timeout=10}]}]']
    assert flags[2] == "-c" and flags[3].startswith('hooks.state={"/<session-flags>/config.toml:stop:0:0"={trusted_hash="sha256:')
    assert len(flags) == 4


def test_native_extras_binds_the_socket_and_passes_every_hook(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    extras = native_extras(bench.ctx())
    assert extras.notices == []
    assert sum(1 for a in extras.argv if a.startswith("hooks.")) == len(EVENTS) + 1
    assert not any("notify" in a for a in extras.argv)
    (source,) = extras.sources
    assert source.fileno() is not None
    source.close()


def test_a_socket_path_too_long_is_a_notice_and_the_rollout_alone(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 100)
    deep.mkdir()
    bench = Bench(tmp_path)
    ctx = bench.ctx()
    ctx = NativeContext(ctx.agent, ctx.session_id, ctx.resumed, ctx.working_dir, ctx.env, deep, ctx.started_at, ctx.python)
    extras = native_extras(ctx)
    assert extras.argv == [] and len(extras.notices) == 1 and "hooks" in extras.notices[0]
    (source,) = extras.sources
    assert source.fileno() is None and source.deadline() is not None
    bench.rollout.write_bytes(recorded("codex_tui.rollout.jsonl", bench.home, bench.work))
    items = source.read()
    assert calls(items) == EXPECTED
    assert states(items)[-1] == "waiting"  # from the rollout's task_complete when no hook is heard


def test_a_session_started_headless_resumes_its_thread_from_the_store(tmp_path: Path) -> None:
    # agentlaunch's own session id; the thread is named only in the provider state the store keeps.
    bench = Bench(tmp_path, resumed=True)
    before = recorded("codex_tui.rollout.jsonl", bench.home, bench.work)
    after = recorded("codex_tui_resumed.rollout.jsonl", bench.home, bench.work)
    bench.rollout.write_bytes(before)
    base = bench.ctx()
    ctx = NativeContext(
        base.agent, "3f0c9a2e-0000-4000-8000-000000000001", True, base.working_dir, base.env, base.runtime_dir,
        base.started_at, base.python, provider_state={"thread_id": THREAD, "total": {}},
    )  # fmt: skip
    source = CodexNativeSource(ctx, HookSocket(bench.runtime / "s.sock"))
    bench.send("UserPromptSubmit", {"session_id": THREAD, "transcript_path": str(bench.rollout)})
    with bench.rollout.open("ab") as fh:
        fh.write(after[len(before) :])
    bench.send("Stop", {"session_id": THREAD, "transcript_path": str(bench.rollout)})
    items = source.read()
    assert calls(items) == RESUMED
    assert states(items) == ["thinking", "waiting"]
    source.close()


def test_a_resumed_thread_whose_file_is_missing_is_never_guessed(tmp_path: Path) -> None:
    bench = Bench(tmp_path, resumed=True)
    other = bench.rollout.with_name("rollout-2026-12-01T11-24-07-99999999-0000-0000-0000-000000000000.jsonl")
    other.write_bytes(recorded("codex_tui.rollout.jsonl", bench.home, bench.work))  # same folder and cwd, not ours
    source = bench.source()
    assert calls(source.read()) == []
    source.close()


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


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)
fields = st.sampled_from(["session_id", "transcript_path", "trigger", "type", "payload", "usage", "response_id", "info"])
shapes = st.dictionaries(fields | st.text(max_size=8), json_values, max_size=5)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    events=st.lists(st.tuples(st.sampled_from([*EVENTS, "Other"]), shapes), max_size=6),
    lines=st.lists(
        st.tuples(st.sampled_from(["session_meta", "turn_context", "token_usage_record", "compacted", "event_msg",
                                   "response_item", "x"]), shapes),
        max_size=6,
    ),
)  # fmt: skip
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


def event_msg(payload: dict[str, Any]) -> bytes:
    return json.dumps({"type": "event_msg", "payload": payload}).encode() + b"\n"


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
        agent_message("a2", "a string"), agent_message("a3", {"type": "Text", "text": "a dict"}),
        agent_message({"id": 1}, [{"type": "Text", "text": "odd id"}]),
        agent_message("a4", [{"type": "Text", "text": "from a sub-agent"}], thread="another-thread"),
        event_msg({"type": "item_completed", "item": "not an object"}), event_msg({"type": "item_completed", "item": [1]}),
        event_msg({"type": "item_completed", "item": {"type": "Reasoning", "content": [{"type": "Text", "text": "hmm"}]}}),
        event_msg({"type": "item_completed", "item": {"type": "CommandExecution", "aggregated_output": "hi"}}),
        event_msg({"type": "task_complete", "last_agent_message": ["not", "text"]}),
        response_item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "summary"}]}),
        response_item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking"}]}),
        agent_message("a5", [{"type": "Text", "text": "two "}, {"type": "text", "text": "parts"}]),
        agent_message("a6", [{"type": "Text", "text": huge}]),
    ]  # fmt: skip
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
    error = {"message": "We’re currently experiencing high demand, which may cause temporary errors.",
             "codex_error_info": "internal_server_error"}  # fmt: skip
    complete = {"type": "task_complete", "turn_id": "t1", "last_agent_message": None, "error": error}
    bench.rollout.write_bytes(head + event_msg({"type": "task_started", "turn_id": "t1"}) + event_msg(complete))
    source = bench.source()
    bench.send("UserPromptSubmit", {"session_id": THREAD, "transcript_path": str(bench.rollout)})
    items = source.read()
    ends = [i for i in items if isinstance(i, TurnEnd)]
    assert [(e.is_error, e.error) for e in ends] == [(True, f"Codex reported: {error['message']}")]
    assert items.index(ends[0]) < max(n for n, i in enumerate(items) if isinstance(i, StateChanged) and i.state == "waiting")
    source.close()
