"""The source of a native Claude launch reading Claude Code's transcript: after /clear, a history file, answers
written before and after the stop hook, a resumed session, and the folder watch.
"""

from __future__ import annotations

import json
import select
from pathlib import Path

from agentlaunch.events import CallUsage, SessionStarted, Text, TurnEnd
from agentlaunch.providers.native.claude import (
    ClaudeNativeSource,
    native_extras,
    transcript_path,
)
from agentlaunch.providers.native.source import NativeContext
from agentlaunch.sinks import StateChanged
from tests.support.claude_native_replay import DATA, SESSION, Clock, context, replay, root, send, states

__all__ = ["root"]  # the fixture, used by name


def jsonl(*lines: object) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines)


OLD, NOW = "2026-01-01T00:00:00.000Z", "2026-12-01T12:00:00.000Z"
STARTED = 1796126000.0  # 2026-12-01T11:53:20Z: between OLD and NOW


def assistant_line(call_id: str, inp: int, out: int, at: str = NOW) -> dict[str, object]:
    return {
        "type": "assistant",
        "timestamp": at,
        "message": {"id": call_id, "model": "m", "stop_reason": "end_turn", "usage": {"input_tokens": inp, "output_tokens": out}},
    }


def started(ctx: NativeContext) -> NativeContext:
    return NativeContext(ctx.agent, ctx.session_id, ctx.resumed, ctx.working_dir, ctx.env, ctx.runtime_dir, STARTED, ctx.python)


def cost_line(inp: int, out: int) -> dict[str, object]:
    return {"type": "cost-state", "modelUsage": {"m": {"inputTokens": inp, "outputTokens": out}}}


def test_after_clear_the_old_file_is_finished_and_the_new_one_counts_from_zero(root: Path) -> None:
    ctx = started(context(root))
    (source,) = native_extras(ctx).sources
    sock = ctx.runtime_dir / "claude.sock"
    old = transcript_path(ctx.env, ctx.working_dir, SESSION)
    old.parent.mkdir(parents=True)
    old.write_text(jsonl(assistant_line("a1", 12, 7)))
    # /clear: the old session's totals (with a side call of 3/2) land in its file as the new session starts.
    with old.open("a") as f:
        f.write(jsonl(cost_line(15, 9)))
    new = old.with_name("22222222-2222-3333-4444-555555555555.jsonl")
    send(sock, "SessionStart", {"source": "clear", "session_id": new.stem, "transcript_path": str(new)})
    prompt = {"type": "user", "timestamp": NOW, "message": {"content": "next"}}
    new.write_text(jsonl(prompt, assistant_line("b1", 9, 3), cost_line(9, 3), cost_line(10, 4)))  # from zero here
    send(sock, "Stop", {"session_id": new.stem, "transcript_path": str(new)})
    items = source.read()
    got = [(c.call_id, c.usage.input, c.usage.output) for c in items if isinstance(c, CallUsage)]
    assert got == [("a1", 12, 7), ("side-calls-1", 3, 2), ("b1", 9, 3), ("side-calls-2", 1, 1)]
    source.close()


def test_a_history_file_named_by_the_cli_is_read_with_its_totals_as_base(root: Path) -> None:
    ctx = started(context(root))
    (source,) = native_extras(ctx).sources
    named = root / "elsewhere" / "session.jsonl"  # another path than agentlaunch's guess (a long cwd, say)
    named.parent.mkdir()
    history = [assistant_line("old1", 5, 5, OLD), cost_line(5, 5), assistant_line("old2", 6, 6, OLD), cost_line(20, 11)]
    named.write_text(jsonl(*history))
    send(
        ctx.runtime_dir / "claude.sock",
        "SessionStart",
        {"source": "resume", "session_id": SESSION, "transcript_path": str(named)},
    )
    assert not any(isinstance(i, CallUsage) for i in source.read())
    with named.open("a") as f:
        f.write(jsonl(assistant_line("new1", 7, 2), cost_line(27, 13)))
    send(ctx.runtime_dir / "claude.sock", "Stop", {"session_id": SESSION, "transcript_path": str(named)})
    got = [(c.call_id, c.usage.input) for c in source.read() if isinstance(c, CallUsage)]
    assert got == [("new1", 7)]  # history neither recounted nor taken for side calls
    source.close()


def answer_line(call_id: str, text: str, at: str = NOW) -> dict[str, object]:
    line = assistant_line(call_id, 3, 2, at)
    line["message"]["content"] = [{"type": "text", "text": text}]  # type: ignore[index]
    return line


def test_recorded_answers_come_once_and_before_the_waiting_that_ends_their_turn(root: Path) -> None:
    items, _ = replay(root, "tool_turn", Clock())
    assert [i.text for i in items if isinstance(i, Text)] == ["Writing.", "Done."]
    last_wait = len(items) - 1 - [i for i in reversed(items)].index(StateChanged("waiting"))
    assert items.index(Text("Done.")) < last_wait


def test_the_stop_hooks_last_message_comes_before_the_waiting_that_ends_its_turn(root: Path) -> None:
    items, _ = replay(root, "tool_turn", Clock())
    ends = [i for i in items if isinstance(i, TurnEnd)]
    assert ends == [TurnEnd(result="Done.")]  # the last message alone (2.1.332), not "Writing." before it
    last_wait = len(items) - 1 - [i for i in reversed(items)].index(StateChanged("waiting"))
    assert items.index(ends[0]) < last_wait


def test_an_answer_written_after_the_stop_hook_comes_before_the_held_waiting(root: Path) -> None:
    clock = Clock()
    ctx = started(context(root))
    (source,) = native_extras(ctx).sources
    assert isinstance(source, ClaudeNativeSource)
    source.clock = clock
    sock = ctx.runtime_dir / "claude.sock"
    path = transcript_path(ctx.env, ctx.working_dir, SESSION)
    path.parent.mkdir(parents=True)
    send(sock, "UserPromptSubmit", {"session_id": SESSION, "transcript_path": str(path)})
    # The Stop payload carries the answer too (last_assistant_message, 2.1.332): the transcript alone tells it.
    send(sock, "Stop", {"session_id": SESSION, "transcript_path": str(path), "last_assistant_message": "The answer."})
    first = source.read()
    assert states(first) == ["thinking"] and not any(isinstance(i, Text) for i in first)  # waiting held for the call
    assert [i for i in first if isinstance(i, TurnEnd)] == [TurnEnd(result="The answer.")]  # the Stop's own word
    path.write_text(jsonl(answer_line("m1", "The answer.")))
    late = [i for i in source.read() if isinstance(i, Text | CallUsage | StateChanged)]
    assert [(type(i).__name__, getattr(i, "text", getattr(i, "state", None))) for i in late] == [
        ("Text", "The answer."),
        ("CallUsage", None),
        ("StateChanged", "waiting"),
    ]
    clock.now += 100
    assert not any(isinstance(i, Text) for i in source.read())
    source.close()


def test_a_resumed_sessions_history_gives_no_answer_text(root: Path) -> None:
    ctx = started(context(root))
    (source,) = native_extras(ctx).sources
    named = root / "elsewhere" / "session.jsonl"
    named.parent.mkdir()
    named.write_text(jsonl(answer_line("old1", "an old answer", OLD), cost_line(3, 2)))
    sock = ctx.runtime_dir / "claude.sock"
    send(sock, "SessionStart", {"source": "resume", "session_id": SESSION, "transcript_path": str(named)})
    assert not any(isinstance(i, Text) for i in source.read())
    with named.open("a") as f:
        f.write(jsonl({"type": "user", "timestamp": NOW, "message": {"content": "again"}}, answer_line("new1", "new answer")))
    send(sock, "Stop", {"session_id": SESSION, "transcript_path": str(named)})
    assert [i.text for i in source.read() if isinstance(i, Text)] == ["new answer"]
    source.close()


def recorded(name: str, event: str) -> dict[str, object]:
    """The payload of the first ``event`` report in a recording."""
    for line in (DATA / name / "reports.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if entry["event"] == event:
            return dict(entry["payload"] or {})
    raise AssertionError(f"no {event} in {name}")


def test_a_prompt_submitted_before_the_status_line_ran_leaves_the_session_waiting_for_its_version(root: Path) -> None:
    # A prompt given in argv: its UserPromptSubmit hook can come before the status line's first run (CI run 79, a
    # loaded machine). Before: the typed prompt sent the session at once, without Claude Code's version.
    from agentlaunch.providers.native.source import PromptTyped

    ctx = context(root)
    (source,) = native_extras(ctx).sources
    sock = ctx.runtime_dir / "claude.sock"
    send(sock, "SessionStart", recorded("tool_turn", "SessionStart"))
    send(sock, "UserPromptSubmit", recorded("tool_turn", "UserPromptSubmit"))
    first = source.read()
    assert [i.text for i in first if isinstance(i, PromptTyped)] == ["write out.txt"]
    assert not any(isinstance(i, SessionStarted) for i in first)
    send(sock, "statusline", recorded("tool_turn", "statusline"))
    (session,) = [i for i in source.read() if isinstance(i, SessionStarted)]
    assert session.cli_version == "2.1.332"
    source.close()


def test_a_call_read_before_the_status_line_ran_gives_the_session_the_transcripts_version(root: Path) -> None:
    ctx = context(root)
    (source,) = native_extras(ctx).sources
    sock = ctx.runtime_dir / "claude.sock"
    path = transcript_path(ctx.env, ctx.working_dir, SESSION)
    path.parent.mkdir(parents=True)
    send(sock, "SessionStart", {"session_id": SESSION, "model": "claude-sonnet-4-5", "transcript_path": str(path)})
    assert not any(isinstance(i, SessionStarted) for i in source.read())
    prompt = {"type": "user", "timestamp": NOW, "version": "2.1.332", "message": {"role": "user", "content": "hi"}}
    path.write_text(jsonl(prompt, {**assistant_line("msg_1", 10, 5), "version": "2.1.332"}, cost_line(10, 5)))
    send(sock, "Stop", {"session_id": SESSION, "transcript_path": str(path)})
    items = source.read()
    (session,) = [i for i in items if isinstance(i, SessionStarted)]
    assert session.cli_version == "2.1.332" and session.model == "claude-sonnet-4-5"
    assert items.index(session) < next(n for n, i in enumerate(items) if isinstance(i, CallUsage))
    source.close()


def test_the_watch_wakes_the_launch_for_its_own_transcript_only(root: Path) -> None:
    """A team shares one home and often one working directory: the other CLIs' files never make it read."""
    ctx = started(context(root))
    config = Path(ctx.env["HOME"]) / ".claude"
    config.mkdir(parents=True)
    (source,) = native_extras(ctx).sources
    assert isinstance(source, ClaudeNativeSource) and source._watch is not None and source.tail is not None
    tail = source.tail
    reads: list[int] = []
    plain_read = tail.read
    tail.read = lambda: (reads.append(1), plain_read())[1]  # type: ignore[method-assign]
    path = transcript_path(ctx.env, ctx.working_dir, SESSION)
    assert set(source._watch.watched) == {config}

    def noise(*files: Path) -> None:
        """Other files written: no wake-up, or one that reads nothing."""
        for file in files:
            with file.open("a") as f:
                f.write("{}\n")
        if select.select(source.filenos(), [], [], 0.05)[0]:
            before = len(reads)
            assert source.read() == []
            assert len(reads) == before, "read the transcript for another file's event"

    noise(config / ".claude.json.tmp", config / "history.jsonl")
    (config / "projects").mkdir()
    source.read()
    assert set(source._watch.watched) == {config / "projects"}  # the next folder down, and nothing above it
    noise()  # the kernel's last word on the watch removed
    with (config / "history.jsonl").open("a") as f:
        f.write("{}\n")
    assert select.select(source.filenos(), [], [], 0.05)[0] == []  # no longer watched: not even a wake-up
    (config / "other.tmp").write_text("")
    assert select.select(source.filenos(), [], [], 0.05)[0] == []
    path.parent.mkdir()
    source.read()
    assert set(source._watch.watched) == {path.parent}
    other = path.with_name("22222222-2222-3333-4444-555555555555.jsonl")
    noise(other, other)  # another agent's session in the same working directory
    path.write_text(jsonl(assistant_line("c1", 4, 1)))
    assert [c.call_id for c in source.read() if isinstance(c, CallUsage)] == ["c1"]
    assert set(source._watch.watched) == {path, path.parent}
    with path.open("a") as f:
        f.write(jsonl(assistant_line("c2", 5, 1)))
    assert [c.call_id for c in source.read() if isinstance(c, CallUsage)] == ["c2"]
    noise(other)
    # The file made again (a new inode, moved in): followed, and what was counted is not counted again.
    fresh = path.with_suffix(".tmp")
    fresh.write_text(jsonl(assistant_line("c1", 4, 1), assistant_line("c2", 5, 1), assistant_line("c3", 6, 1)))
    fresh.rename(path)
    assert [c.call_id for c in source.read() if isinstance(c, CallUsage)] == ["c3"]
    with path.open("a") as f:
        f.write(jsonl(assistant_line("c4", 7, 1)))
    assert [c.call_id for c in source.read() if isinstance(c, CallUsage)] == ["c4"]
    noise(other)
    source.close()


def test_events_the_watch_lost_read_the_transcript_and_watch_again(root: Path) -> None:
    from agentlaunch.dir_watch import IN_Q_OVERFLOW

    ctx = started(context(root))
    (source,) = native_extras(ctx).sources
    assert isinstance(source, ClaudeNativeSource) and source._watch is not None
    path = transcript_path(ctx.env, ctx.working_dir, SESSION)
    path.parent.mkdir(parents=True)
    path.write_text(jsonl(assistant_line("c1", 4, 1)))
    source._watch.events = lambda: (True, [(None, "", IN_Q_OVERFLOW)])  # type: ignore[method-assign]
    assert source._woken() == (True, True, True)
    assert [c.call_id for c in source.read() if isinstance(c, CallUsage)] == ["c1"]
    assert path in source._watch.watched
    source.close()
