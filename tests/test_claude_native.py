"""The source of a native Claude launch, replaying hook and status-line reports recorded on Claude Code 2.1.332."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentlaunch.events import CallUsage, ContextWindow, SessionStarted, TurnEnd, Warning
from agentlaunch.providers.native.claude import native_extras
from agentlaunch.providers.native.claude_settings import HOOK_EVENTS, transcript_path, user_status_line
from agentlaunch.providers.native.claude_source import ClaudeNativeSource
from agentlaunch.sinks import StateChanged
from agentlaunch.token_usage import Usage
from tests.support.claude_native_replay import SESSION, Clock, context, replay, root, send, states

__all__ = ["root"]  # the fixture, used by name


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
        ("Notification", {}),
        ("Notification", {"notification_type": 5}),
        ("PreToolUse", None),
        ("statusline", {"model": "x", "context_window": [], "session_id": {"a": 1}}),
        ("statusline", {"transcript_path": "relative.jsonl"}),
        ("statusline", {"transcript_path": 7}),
        ("SessionStart", {"source": []}),
        ("NoSuchEvent", {"a": 1}),
        ("PostCompact", {}),
    ]:
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

    ctx = context(root)
    (source,) = native_extras(ctx).sources
    for event, payload in (("UserPromptSubmit", {}), ("StopFailure", {"error": "rate_limit"})):
        send(ctx.runtime_dir / "claude.sock", event, payload)
    items = source.read()
    ends = [i for i in items if isinstance(i, TurnEnd)]
    assert ends == [TurnEnd(is_error=True, error="the API call failed (rate_limit)")]
    assert items.index(ends[0]) < max(i for i, item in enumerate(items) if isinstance(item, StateChanged))
    source.close()


def test_every_hooked_event_is_one_the_pinned_claude_code_takes() -> None:
    from tests.support.record_tui import ALL_HOOK_EVENTS

    assert len(set(ALL_HOOK_EVENTS)) == 34
    assert set(HOOK_EVENTS) <= set(ALL_HOOK_EVENTS)


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
        ("tool", None),
        ("asking", "Bash: rm -rf build && ls"),
        ("asking", None),  # the notification 6 s later says less than the hook before it: no reason of its own
        ("thinking", None),
        ("asking", "AskUserQuestion: Which branch?"),
        ("thinking", None),
        ("asking", "Claude needs your permission to use Write"),  # nothing said it before: its words
        ("asking", "db: Pick a table"),  # an MCP server's question: its server and message
    ]
    source.close()
