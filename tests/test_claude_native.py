"""The source of a native Claude launch, replaying hook and status-line reports recorded on Claude Code 2.1.332."""

from __future__ import annotations

import json
import os
import select
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch.events import CallUsage, ContextWindow, SessionStarted, Text, TurnEnd, Warning
from agentlaunch.providers.native.claude import native_extras
from agentlaunch.providers.native.claude_settings import HOOK_EVENTS, transcript_path, user_status_line
from agentlaunch.providers.native.claude_source import ClaudeNativeSource
from agentlaunch.providers.native.hook_report import report
from agentlaunch.providers.native.source import NativeContext, NativeItem
from agentlaunch.sinks import StateChanged
from agentlaunch.token_usage import Usage

DATA = Path(__file__).parent / "data" / "claude_tui"
SESSION = "11111111-2222-3333-4444-555555555555"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="alnt-") as name:  # short: it holds a socket
        yield Path(name)


def context(root: Path, env: dict[str, str] | None = None, status: Path | None = None) -> NativeContext:
    work, runtime = root / "work", root / "rt"
    work.mkdir(parents=True, exist_ok=True)
    runtime.mkdir(exist_ok=True, mode=0o700)
    env = env or {"HOME": str(root / "home")}
    return NativeContext("reviewer", SESSION, False, work, env, runtime, 0.0, "/usr/bin/python3", status)


def send(sock_path: Path, event: str, payload: object) -> None:
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.sendto(report(event, json.dumps(payload)), str(sock_path))


def replay(root: Path, name: str, clock: Clock) -> tuple[list[NativeItem], Path]:
    """Each recorded report sent as the CLI sent it; the transcript appended in pieces between them."""
    ctx = context(root)
    extras = native_extras(ctx)
    (source,) = extras.sources
    assert isinstance(source, ClaudeNativeSource)
    source.clock = clock
    reports = [json.loads(line) for line in (DATA / name / "reports.jsonl").read_text().splitlines()]
    data = (DATA / name / "transcript.jsonl").read_bytes()
    path = transcript_path(ctx.env, ctx.working_dir, SESSION)
    path.parent.mkdir(parents=True)
    items: list[NativeItem] = []
    step = len(data) // max(len(reports), 1) + 1
    for n, entry in enumerate(reports):
        payload = dict(entry["payload"] or {})
        payload["transcript_path"] = str(path)  # the recording's own path, moved here
        with path.open("ab") as f:
            f.write(data[n * step : (n + 1) * step])
        send(ctx.runtime_dir / "claude.sock", entry["event"], payload)
        items += source.read()
        clock.now += 0.1
    with path.open("ab") as f:
        f.write(data[len(reports) * step :])
    clock.now += 10
    items += source.read()  # the read after the CLI exits
    source.close()
    assert not (ctx.runtime_dir / "claude.sock").exists()
    return items, path


def states(items: list[NativeItem]) -> list[str]:
    return [i.state for i in items if isinstance(i, StateChanged)]


def test_recorded_tool_turn_states_and_each_call_once(root: Path) -> None:
    items, _ = replay(root, "tool_turn", Clock())
    assert [(c.call_id, c.usage) for c in items if isinstance(c, CallUsage)] == [
        ("msg_fake_0001", Usage(15, 2000, 11000, 40)),
        ("msg_fake_0002", Usage(6, 120, 13000, 4)),
    ]
    # SessionStart, UserPromptSubmit, PreToolUse, PermissionRequest, the 6 s Notification, PostToolBatch, Stop,
    # SessionEnd
    assert states(items) == ["waiting", "thinking", "tool", "asking", "asking", "thinking", "waiting", "exited"]
    (session,) = [i for i in items if isinstance(i, SessionStarted)]
    assert session.session_id.count("-") == 4 and session.cli_version == "2.1.332" and session.model == "claude-sonnet-4-5"
    assert items.index(session) < next(n for n, i in enumerate(items) if isinstance(i, CallUsage))
    assert [i for i in items if isinstance(i, ContextWindow)] == [ContextWindow(200_000, "claude-sonnet-4-5")]


def test_recorded_refusal_and_compaction(root: Path) -> None:
    items, _ = replay(root, "denied_turn", Clock())
    assert states(items)[-3:] == ["asking", "waiting", "exited"]  # Esc at the prompt: the transcript says the turn ended
    items, _ = replay(root / "second", "slow_compact", Clock())
    got = [i.kind for i in items if not isinstance(i, StateChanged)]
    assert got.count("compaction") == 1
    # Two calls with assistant lines, then the compaction's summary calls as one sum (cost-state at the end).
    assert [(c.call_id, c.usage.input, c.usage.output) for c in items if isinstance(c, CallUsage)] == [
        ("msg_fake_0001", 11, 33),
        ("msg_fake_0002", 9, 12),
        ("side-calls-1", 510, 85),
    ]
    # The turn (a Read, then the answer), then /compact from the prompt: its hooks are not used, it stays waiting.
    assert states(items) == ["waiting", "thinking", "tool", "thinking", "waiting", "exited"]


def test_each_submitted_prompt_is_reported_for_the_sessions_title(root: Path) -> None:
    from agentlaunch.providers.native.source import PromptTyped

    items, _ = replay(root, "slow_compact", Clock())
    assert [i.text for i in items if isinstance(i, PromptTyped)] == ["look around"]


def test_settings_name_every_hook_event_and_the_status_line(root: Path) -> None:
    ctx = context(root)
    extras = native_extras(ctx)
    flag, value = extras.argv
    assert flag == "--settings"
    settings = json.loads(value)
    assert set(settings["hooks"]) == set(HOOK_EVENTS)
    command = settings["statusLine"]["command"]
    assert command.startswith("/usr/bin/python3 -I -S ") and "claude_statusline.py" in command
    config = json.loads((ctx.runtime_dir / "statusline.json").read_text())
    assert config["socket"] == str(ctx.runtime_dir / "claude.sock") and config["user_command"] is None
    assert oct((ctx.runtime_dir / "statusline.json").stat().st_mode & 0o777) == "0o600"
    for source in extras.sources:
        source.close()


def test_the_users_status_line_is_found_local_first_and_bad_files_are_noted(root: Path) -> None:
    home, work = root / "home", root / "work"
    (home / ".claude").mkdir(parents=True)
    (work / ".claude").mkdir(parents=True)
    env = {"HOME": str(home)}
    assert user_status_line(env, work) == (None, [])
    (home / ".claude" / "settings.json").write_text(json.dumps({"statusLine": {"type": "command", "command": "user-cmd"}}))
    assert user_status_line(env, work) == ("user-cmd", [])
    (work / ".claude" / "settings.json").write_text(json.dumps({"statusLine": {"command": "project-cmd"}}))
    assert user_status_line(env, work)[0] == "project-cmd"
    (work / ".claude" / "settings.local.json").write_text("{not json")
    command, notes = user_status_line(env, work)
    assert command == "project-cmd" and len(notes) == 1 and "settings.local.json" in notes[0]
    moved = root / "cfg"
    moved.mkdir()
    (moved / "settings.json").write_text(json.dumps({"statusLine": {"type": "command", "command": "moved-cmd"}}))
    (work / ".claude" / "settings.json").unlink()
    assert user_status_line({"HOME": str(home), "CLAUDE_CONFIG_DIR": str(moved)}, work)[0] == "moved-cmd"


def test_claude_config_dir_moves_the_transcript(root: Path) -> None:
    env = {"HOME": "/h", "CLAUDE_CONFIG_DIR": "/c"}
    assert transcript_path(env, Path("/w/my.app"), "s1") == Path("/c/projects/-w-my-app/s1.jsonl")
    assert transcript_path({"HOME": "/h"}, Path("/w"), "s1") == Path("/h/.claude/projects/-w/s1.jsonl")


def test_hook_reports_with_missing_or_wrong_fields_never_break_the_source(root: Path) -> None:
    ctx = context(root)
    (source,) = native_extras(ctx).sources
    sock = ctx.runtime_dir / "claude.sock"
    for event, payload in [
        ("Notification", {}), ("Notification", {"notification_type": 5}), ("PreToolUse", None),
        ("statusline", {"model": "x", "context_window": [], "session_id": {"a": 1}}),
        ("statusline", {"transcript_path": "relative.jsonl"}), ("statusline", {"transcript_path": 7}),
        ("SessionStart", {"source": []}), ("NoSuchEvent", {"a": 1}), ("PostCompact", {}),
    ]:  # fmt: skip
        send(sock, event, payload)
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.sendto(b"\xff not json", str(sock))
    items = source.read()
    assert states(items) == ["tool", "waiting"]  # PreToolUse without a tool name; SessionStart of unknown source
    assert not any(isinstance(i, CallUsage | SessionStarted | ContextWindow) for i in items)
    source.close()


def test_a_transcript_that_never_appears_is_said_once_and_never_breaks_the_source(root: Path) -> None:
    clock = Clock()
    ctx = context(root)
    extras = native_extras(ctx)
    (source,) = extras.sources
    assert isinstance(source, ClaudeNativeSource)
    source.clock = clock
    assert extras.notices == []
    send(ctx.runtime_dir / "claude.sock", "Stop", {"session_id": SESSION})
    items = source.read()
    assert states(items) == []  # the turn's call may still come: waiting is held until the retries give up
    clock.now += 10
    items += source.read()
    assert states(items) == ["waiting"]
    (warning,) = [i for i in items if isinstance(i, Warning)]
    assert "wrote no transcript" in warning.message and "not be metered" in warning.message
    send(ctx.runtime_dir / "claude.sock", "Stop", {"session_id": SESSION})
    assert not any(isinstance(i, Warning) for i in source.read())  # said once
    source.close()


def test_a_transcript_folder_claude_cannot_write_is_a_notice(root: Path) -> None:
    home = root / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "projects").write_text("a file where the folder should be")
    extras = native_extras(context(root, {"HOME": str(home)}))
    assert len(extras.notices) == 1 and "not a folder" in extras.notices[0] and "not be metered" in extras.notices[0]
    for source in extras.sources:
        source.close()
    (home / ".claude" / "projects").unlink()
    (home / ".claude" / "projects").mkdir(mode=0o500)
    extras = native_extras(context(root / "again", {"HOME": str(home)}))
    if os.geteuid() == 0:  # root writes anywhere, and so would Claude Code run as root: nothing to say
        assert extras.notices == []
    else:
        assert len(extras.notices) == 1 and "not writable" in extras.notices[0]
    for source in extras.sources:
        source.close()


def test_a_call_the_transcript_writes_after_the_stop_hook_is_read_at_the_retry_deadline(root: Path) -> None:
    clock = Clock()
    ctx = context(root)
    (source,) = native_extras(ctx).sources
    assert isinstance(source, ClaudeNativeSource)
    source.clock = clock
    path = transcript_path(ctx.env, ctx.working_dir, SESSION)
    path.parent.mkdir(parents=True)
    send(ctx.runtime_dir / "claude.sock", "UserPromptSubmit", {"session_id": SESSION, "transcript_path": str(path)})
    send(ctx.runtime_dir / "claude.sock", "Stop", {"session_id": SESSION, "transcript_path": str(path)})
    assert states(source.read()) == ["thinking"]  # waiting is held: the turn's call is not in the transcript yet
    due = source.deadline()
    assert due is not None and due > clock.now
    line = {"type": "assistant", "message": {"id": "m1", "usage": {"input_tokens": 1, "output_tokens": 2}}}  # no stop_reason
    path.write_text(json.dumps(line) + "\n")
    clock.now = due
    late = source.read()
    assert [i.call_id for i in late if isinstance(i, CallUsage)] == ["m1"]
    assert isinstance(late[-1], StateChanged) and late[-1].state == "waiting"  # the turn ends after its call
    clock.now += 100
    assert not any(isinstance(i, CallUsage) for i in source.read())
    source.close()


def test_settings_that_disable_hooks_are_left_alone_and_said(root: Path) -> None:
    home = root / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps({"disableAllHooks": True}))
    extras = native_extras(context(root, {"HOME": str(home)}))
    assert len(extras.notices) == 1 and "disableAllHooks" in extras.notices[0]
    assert "disableAllHooks" not in json.loads(extras.argv[1])  # the person's choice stands
    for source in extras.sources:
        source.close()
    work = root / "work"
    (work / ".claude").mkdir(parents=True, exist_ok=True)
    (work / ".claude" / "settings.local.json").write_text(json.dumps({"disableAllHooks": False}))  # the local file wins
    extras = native_extras(context(root, {"HOME": str(home)}))
    assert extras.notices == []
    for source in extras.sources:
        source.close()


@pytest.mark.parametrize(
    ("reports", "expected"),
    [
        ([("PreToolUse", {"tool_name": "AskUserQuestion"}), ("PostToolBatch", {})], ["asking", "thinking"]),
        # One tool of several run together ended (not hooked any more: it said thinking while the others ran).
        ([("PreToolUse", {"tool_name": "Read"}), ("PostToolUse", {}), ("PostToolUseFailure", {})], ["tool"]),
        ([("PreToolUse", {"tool_name": "ExitPlanMode"})], ["asking"]),
        (
            [("PreToolUse", {"tool_name": "Bash"}), ("PermissionRequest", {}), ("PermissionDenied", {})],
            ["tool", "asking", "thinking"],
        ),
        ([("Notification", {"notification_type": "elicitation_dialog"}), ("ElicitationResult", {})], ["asking", "thinking"]),
        ([("Elicitation", {})], ["asking"]),
        ([("Notification", {"notification_type": "idle_prompt"})], ["waiting"]),
        ([("Notification", {"notification_type": "auth_success"})], []),
        ([("UserPromptSubmit", {}), ("StopFailure", {"error": "rate_limit"})], ["thinking", "waiting"]),
        # Not hooked (Claude Code would print their results on screen): if they came, they would change nothing.
        ([("UserPromptSubmit", {}), ("PreCompact", {"trigger": "auto"}), ("PostCompact", {})], ["thinking"]),
        # A Stop before the turn's call is read holds waiting (see the retry test); the next prompt releases it first.
        ([("UserPromptSubmit", {}), ("Stop", {})], ["thinking"]),
        ([("UserPromptSubmit", {}), ("Stop", {}), ("UserPromptSubmit", {})], ["thinking", "waiting", "thinking"]),
        ([("SessionStart", {"source": "compact"})], []),
        ([("SessionStart", {"source": "clear"}), ("SessionEnd", {"reason": "clear"})], ["waiting", "exited"]),
    ],
)
def test_each_hook_tells_its_state(root: Path, reports: list[tuple[str, dict[str, object]]], expected: list[str]) -> None:
    ctx = context(root)
    (source,) = native_extras(ctx).sources
    for event, payload in reports:
        send(ctx.runtime_dir / "claude.sock", event, payload)
    assert states(source.read()) == expected
    source.close()


def test_a_turn_that_ends_on_an_api_error_says_so_before_its_waiting(root: Path) -> None:
    from agentlaunch.events import TurnEnd

    ctx = context(root)
    (source,) = native_extras(ctx).sources
    for event, payload in (("UserPromptSubmit", {}), ("StopFailure", {"error": "rate_limit"})):
        send(ctx.runtime_dir / "claude.sock", event, payload)
    items = source.read()
    ends = [i for i in items if isinstance(i, TurnEnd)]
    assert ends == [TurnEnd(is_error=True, error="the API call failed (rate_limit)")]
    assert items.index(ends[0]) < max(i for i, item in enumerate(items) if isinstance(item, StateChanged))
    source.close()


def jsonl(*lines: object) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines)


OLD, NOW = "2026-01-01T00:00:00.000Z", "2026-12-01T12:00:00.000Z"
STARTED = 1796126000.0  # 2026-12-01T11:53:20Z: between OLD and NOW


def assistant_line(call_id: str, inp: int, out: int, at: str = NOW) -> dict[str, object]:
    return {"type": "assistant", "timestamp": at, "message": {"id": call_id, "model": "m", "stop_reason": "end_turn",
                                                              "usage": {"input_tokens": inp, "output_tokens": out}}}  # fmt: skip


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
        ("Text", "The answer."), ("CallUsage", None), ("StateChanged", "waiting"),
    ]  # fmt: skip
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


def test_every_hooked_event_is_one_the_pinned_claude_code_takes() -> None:
    from tests.support.record_claude_tui import ALL_HOOK_EVENTS

    assert len(set(ALL_HOOK_EVENTS)) == 34
    assert set(HOOK_EVENTS) <= set(ALL_HOOK_EVENTS)


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
        if select.select([source.fileno()], [], [], 0.05)[0]:
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
    assert select.select([source.fileno()], [], [], 0.05)[0] == []  # no longer watched: not even a wake-up
    (config / "other.tmp").write_text("")
    assert select.select([source.fileno()], [], [], 0.05)[0] == []
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


def test_what_an_asking_claude_code_asks_is_the_reason_of_its_asking(root: Path) -> None:
    ctx = context(root)
    (source,) = native_extras(ctx).sources
    bash = {"tool_name": "Bash", "tool_input": {"command": "rm -rf build\n&& ls", "description": "clean"}}
    reports = [
        ("PreToolUse", {"tool_name": "Bash", "tool_input": bash["tool_input"]}),
        ("PermissionRequest", bash),
        ("Notification", {"notification_type": "permission_prompt", "message": "Claude needs your permission to use Bash"}),
        ("PostToolBatch", {}),
        ("PreToolUse", {"tool_name": "AskUserQuestion", "tool_input": {"questions": [{"question": "Which branch?"}]}}),
        ("PostToolBatch", {}),
        ("Notification", {"notification_type": "permission_prompt", "message": "Claude needs your permission to use Write"}),
        ("Elicitation", {"mcp_server_name": "db", "message": "Pick a table"}),
    ]
    for event, payload in reports:
        send(ctx.runtime_dir / "claude.sock", event, payload)
    got = [(i.state, i.reason) for i in source.read() if isinstance(i, StateChanged)]
    assert got == [
        ("tool", None), ("asking", "Bash: rm -rf build && ls"),
        ("asking", None),  # the notification 6 s later says less than the hook before it: no reason of its own
        ("thinking", None), ("asking", "AskUserQuestion: Which branch?"), ("thinking", None),
        ("asking", "Claude needs your permission to use Write"),  # nothing said it before: its words
        ("asking", "db: Pick a table"),  # an MCP server's question: its server and message
    ]  # fmt: skip
    source.close()
