"""Codex and Gemini output, parsed from transcripts recorded from the real CLIs (tests/data/codex, tests/data/gemini)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch.events import CallUsage, Event, SessionStarted, Text, TextDelta, ToolResult, ToolUse, TurnEnd, Unknown, Warning
from agentlaunch.providers.base import split_turn
from agentlaunch.providers.codex import CodexAdapter, CodexParser, looks_like_thread_id
from agentlaunch.providers.codex_rollout import rollout_context_window, rollout_files, thread_days
from agentlaunch.providers.gemini import GeminiAdapter, GeminiParser
from agentlaunch.providers.gemini_session import session_files
from agentlaunch.token_usage import Usage

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


THREAD = "01a239c1-0dd6-79a1-9899-f73972992b81"  # a UUIDv7 Codex 0.171 gave: 2026-12-03 02:34 UTC


def rollout_in(home: Path, day: str, thread: str = THREAD) -> Path:
    folder = home / ".codex" / "sessions" / day
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-{day.replace('/', '-')}T02-34-43-{thread}.jsonl"
    path.write_text('{"type":"event_msg","payload":{"type":"token_count","info":{"model_context_window":258400}}}\n')
    return path


def test_a_threads_rollout_is_looked_for_in_the_days_of_its_ids_time_not_in_every_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert thread_days(THREAD) == ["2026/12/02", "2026/12/03", "2026/12/04"]  # the folder's day is Codex's local one
    assert thread_days("abc") == [] and thread_days("01a239c1-0dd6-49a1-9899-f73972992b81") == []  # not a UUIDv7
    listed: list[str] = []

    def walked(self: Path, pattern: str) -> Iterator[Path]:
        listed.append(f"walk {self}")
        return iter(())

    def globbed(self: Path, pattern: str) -> Iterator[Path]:
        listed.append(f"list {self}")
        return iter(())

    for i, day in enumerate(["2026/12/03", "2026/12/04"]):  # the UTC day, and a day later (east of UTC)
        home = tmp_path / str(i)
        expected = rollout_in(home, day)
        rollout_in(home, "2026/01/01", thread="01a239c1-0dd6-79a1-9899-000000000000")  # another thread, another day
        with monkeypatch.context() as patch:
            patch.setattr(Path, "rglob", walked)
            assert rollout_files(THREAD, {"HOME": str(home)}) == [expected]
            assert listed == []
            patch.setattr(Path, "glob", globbed)
            assert rollout_context_window(THREAD, {"HOME": str(home)}) == 258400  # known: no folder listed again
            assert listed == []


def test_only_an_id_that_is_no_uuidv7_has_every_days_folder_walked(tmp_path: Path) -> None:
    day = tmp_path / ".codex" / "sessions" / "2026" / "11" / "30"
    day.mkdir(parents=True)
    (day / "rollout-2026-11-30T10-00-00-my-thread.jsonl").write_text("{}\n")  # an id that is no UUIDv7: walked
    found = rollout_files("my-thread", {"HOME": str(tmp_path)})
    assert [p.name for p in found] == ["rollout-2026-11-30T10-00-00-my-thread.jsonl"]
    moved = rollout_in(tmp_path, "2025/06/01")  # a UUIDv7's file moved out of its day's folder: not looked for there
    assert rollout_files(THREAD, {"HOME": str(tmp_path)}) == []
    at_home = rollout_in(tmp_path, "2026/12/03")
    assert rollout_files(THREAD, {"HOME": str(tmp_path)}) == [at_home] and moved.exists()
    at_home.unlink()  # a file found once and gone since is looked for again
    assert rollout_files(THREAD, {"HOME": str(tmp_path)}) == []
    assert rollout_files("*", {"HOME": str(tmp_path)}) == [] and rollout_files("../x", {"HOME": str(tmp_path)}) == []


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


# -- a turn's sum split into its calls, from the files the CLIs keep ------------------------------


def call(input: int = 0, cache_read: int = 0, output: int = 0, reasoning: int = 0, model: str | None = None) -> CallUsage:
    return CallUsage(Usage(input=input, cache_read=cache_read, output=output, reasoning=reasoning), model)


def test_split_turn_takes_the_fewest_last_calls_that_add_up_exactly() -> None:
    a, b, c = call(10, 0, 1), call(5, 20, 2), call(1, 30, 3)
    turn = CallUsage(Usage(input=6, cache_read=50, output=5), "m")
    assert [x.usage for x in split_turn(turn, [a, b, c])] == [b.usage, c.usage]
    assert {x.model for x in split_turn(turn, [a, b, c])} == {"m"}  # a call without a model takes the turn's
    assert split_turn(turn, [a, b]) == [turn]  # the last call is missing (not written yet): the sum, as printed
    assert split_turn(turn, []) == [turn]
    small = CallUsage(Usage(input=5))
    assert split_turn(small, [call(1), call(10)]) == [small]  # the last call alone is more than the turn


def place_rollout(home: Path, lines: list[str], thread: str | None = None) -> None:
    """Write ``lines`` as the thread's rollout file under ``home``'s Codex home (default: the tool-turn thread)."""
    day = home / ".codex" / "sessions" / "2026" / "11" / "30"
    day.mkdir(parents=True, exist_ok=True)
    (day / f"rollout-2026-11-30T17-47-18-{thread or CODEX_THREAD}.jsonl").write_text("".join(lines))


CODEX_THREAD = "01a22d91-7b46-7d30-b516-4ce85caa4227"


def test_codex_tool_turn_is_recorded_as_its_three_calls_from_the_rollout(tmp_path: Path) -> None:
    rollout = (DATA / "codex/tool_turn_then_resume.rollout.jsonl").read_text().splitlines(keepends=True)
    second_turn_starts = [i for i, line in enumerate(rollout) if '"task_started"' in line][1]
    env = {"HOME": str(tmp_path)}
    adapter, parser = CodexAdapter(), CodexParser()
    # Turn 1, as the rollout stood when its turn.completed was printed.
    place_rollout(tmp_path, rollout[:second_turn_starts])
    (turn,) = [e for e in feed(parser, "codex/tool_turn_then_resume.turn1.jsonl") if isinstance(e, CallUsage)]
    assert turn.usage == Usage(input=1400, cache_read=1900, output=34, reasoning=7)
    calls = adapter.calls_in_turn(turn, parser, env)
    assert [c.usage for c in calls] == [
        Usage(input=1000, output=20, reasoning=5),
        Usage(input=200, cache_read=900, output=10, reasoning=2),
        Usage(input=200, cache_read=1000, output=4),
    ]
    assert [c.call_id for c in calls] == ["resp_fake_1", "resp_fake_2", "resp_fake_3"]
    # Turn 2, a new process resuming the thread: one call, though the rollout holds all four.
    place_rollout(tmp_path, rollout)
    resumed = CodexParser(parser.total)
    (turn2,) = [e for e in feed(resumed, "codex/tool_turn_then_resume.turn2.jsonl") if isinstance(e, CallUsage)]
    assert [c.usage for c in adapter.calls_in_turn(turn2, resumed, env)] == [
        Usage(input=100, cache_read=1200, output=6, reasoning=1)
    ]
    # Turn 1 read against the later file no longer adds up: kept as the printed sum, never half split.
    assert adapter.calls_in_turn(turn, parser, env) == [turn]
    assert adapter.calls_in_turn(turn, parser, {"HOME": str(tmp_path / "elsewhere")}) == [turn]


GEMINI_SESSION = "1a36ad99-1e9c-4e2c-8c79-4fda5d0186a5"


def place_session_file(home: Path, lines: list[str], session: str | None = None, minute: str = "17-47") -> Path:
    """Write ``lines`` as a Gemini session file under ``home`` (default: the tool-turn session), named for ``minute``."""
    chats = home / ".gemini" / "tmp" / "work" / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    path = chats / f"session-2026-11-30T{minute}-{(session or GEMINI_SESSION)[:8]}.jsonl"
    path.write_text("".join(lines))
    return path


def test_gemini_tool_turn_is_recorded_as_its_two_calls_from_the_session_file(tmp_path: Path) -> None:
    log = (DATA / "gemini/tool_turn_then_resume.session.jsonl").read_text().splitlines(keepends=True)
    second_prompt = next(i for i, line in enumerate(log) if "and again" in line)
    env = {"HOME": str(tmp_path)}
    adapter, parser = GeminiAdapter(), GeminiParser()
    place_session_file(tmp_path, log[:second_prompt])
    (turn,) = [e for e in feed(parser, "gemini/tool_turn_then_resume.turn1.jsonl") if isinstance(e, CallUsage)]
    assert turn.usage == Usage(input=1200, cache_read=1000, output=29, reasoning=5)
    calls = adapter.calls_in_turn(turn, parser, env)
    # The first call's record was written twice (its tool result added): counted once.
    assert [c.usage for c in calls] == [Usage(input=1000, output=25, reasoning=5), Usage(input=200, cache_read=1000, output=4)]
    assert [c.model for c in calls] == ["gemini-2.5-pro"] * 2
    place_session_file(tmp_path, log)
    resumed = GeminiParser(GEMINI_SESSION, resumed=True)
    (turn2,) = [e for e in feed(resumed, "gemini/tool_turn_then_resume.turn2.jsonl") if isinstance(e, CallUsage)]
    assert [c.usage for c in adapter.calls_in_turn(turn2, resumed, env)] == [
        Usage(input=100, cache_read=1200, output=7, reasoning=1)
    ]
    assert adapter.calls_in_turn(turn, parser, env) == [turn]  # the later file does not add up to turn 1


def test_gemini_session_files_must_name_the_session(tmp_path: Path) -> None:
    log = (DATA / "gemini/tool_turn_then_resume.session.jsonl").read_text().splitlines(keepends=True)
    path = place_session_file(tmp_path, log)
    assert session_files(GEMINI_SESSION, {"HOME": str(tmp_path)}) == [path]
    path.write_text("".join([log[0].replace(GEMINI_SESSION, GEMINI_SESSION[:8] + "-0000-4000-8000-000000000000"), *log[1:]]))
    assert session_files(GEMINI_SESSION, {"HOME": str(tmp_path)}) == []  # same first 8 characters, another session
    assert session_files("", {"HOME": str(tmp_path)}) == []
    # GEMINI_CLI_HOME moves Gemini's home (seen on the real CLI: sessions under $GEMINI_CLI_HOME/.gemini/tmp).
    moved = place_session_file(tmp_path / "gemini-home", log)
    moved_env = {"HOME": str(tmp_path / "nowhere"), "GEMINI_CLI_HOME": str(tmp_path / "gemini-home")}
    assert session_files(GEMINI_SESSION, moved_env) == [moved]


# -- the finished calls of a turn that ended without its sum (interrupted) -------------------------


def test_codex_interrupted_turn_gives_its_finished_calls_and_the_next_turn_leaves_them_out(tmp_path: Path) -> None:
    """Turn 2 ran a tool call (2000 in, 1000 cached) and was interrupted in its second call (SIGINT)."""
    env = {"HOME": str(tmp_path)}
    thread = "01a22db2-37d5-7bb3-b6ad-5c5db1baaf51"
    rollout = (DATA / "codex/interrupted_tool_turn.rollout.jsonl").read_text().splitlines(keepends=True)
    second_turn_starts = [i for i, line in enumerate(rollout) if '"task_started"' in line][1]
    place_rollout(tmp_path, rollout[:second_turn_starts], thread)  # as it stood when turn 1 ended
    adapter, parser = CodexAdapter(), CodexParser()
    assert usages(feed(parser, "codex/interrupted_tool_turn.turn1.jsonl")) == [Usage(input=1000, output=10)]
    assert adapter.calls_not_counted(parser, env) == []  # a finished turn leaves nothing behind
    place_rollout(tmp_path, rollout, thread)  # as it stood when the interrupted turn 2 ended
    assert not any(isinstance(e, TurnEnd) for e in feed(parser, "codex/interrupted_tool_turn.turn2.jsonl"))
    (call,) = adapter.calls_not_counted(parser, env)
    assert call.usage == Usage(input=1000, cache_read=1000, output=20, reasoning=5)
    assert parser.total == Usage(input=2000, cache_read=1000, output=30, reasoning=5)  # the thread's total after it
    assert adapter.calls_not_counted(parser, env) == []  # counted once
    # A total the rollout never reached: nowhere to start from, nothing is taken.
    assert adapter.calls_not_counted(CodexParser(Usage(input=5)), env) == []


def test_gemini_interrupted_turn_gives_its_finished_calls_from_the_session_file(tmp_path: Path) -> None:
    """Turn 2 (--resume) ran a read_file call (2000 in, 1000 cached, 5 thoughts), then was interrupted mid-answer.

    The interrupted resume left a second file for the session (a header, no calls)."""
    sid = "30b34a34-a914-44b1-89b1-bbc97007717e"
    log = (DATA / "gemini/interrupted_tool_turn.session.jsonl").read_text().splitlines(keepends=True)
    turn2_prompt = next(i for i, line in enumerate(log) if '"text":"second"' in line)
    place_session_file(tmp_path, log[:turn2_prompt], sid, "18-23")  # as it stood when turn 1 ended
    env = {"HOME": str(tmp_path)}
    adapter = GeminiAdapter()
    parser = adapter.parser(adapter.new_state(sid))
    (turn1,) = [e for e in feed(parser, "gemini/interrupted_tool_turn.turn1.jsonl") if isinstance(e, CallUsage)]
    assert [c.usage for c in adapter.calls_in_turn(turn1, parser, env)] == [Usage(input=1000, output=10)]
    assert adapter.calls_not_counted(parser, env) == []  # a finished turn leaves nothing behind
    state, _ = adapter.state_after_turn(parser, env)
    place_session_file(tmp_path, log, sid, "18-23")  # as they stood when the interrupted turn 2 ended
    second = (DATA / "gemini/interrupted_tool_turn.session-second-file.jsonl").read_text().splitlines(keepends=True)
    place_session_file(tmp_path, second, sid, "18-24")
    resumed = adapter.parser(state)  # the next agentlaunch process
    assert not any(isinstance(e, CallUsage) for e in feed(resumed, "gemini/interrupted_tool_turn.turn2.jsonl"))
    assert [c.usage for c in adapter.calls_not_counted(resumed, env)] == [
        Usage(input=1000, cache_read=1000, output=25, reasoning=5)
    ]
    assert adapter.calls_not_counted(resumed, env) == []  # counted once
    # Where the count stands is unknown (a session resumed by id, or a turn kept as its sum): nothing is taken.
    unknown = adapter.parser(adapter.resume_state(sid, None))
    assert unknown.counted_through is None and adapter.calls_not_counted(unknown, env) == []
    # A new session's first turn interrupted: every call in the file is its own.
    first = adapter.parser(adapter.new_state(sid))
    assert len(adapter.calls_not_counted(first, env)) == 2
