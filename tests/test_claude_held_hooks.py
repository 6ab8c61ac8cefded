"""A native Claude launch's hooks reach it through its runtime folder only: the settings name the launch's sockets,
a report reaches the source, and the budget's gate is held until its call is read, or refused when it cannot be."""

from __future__ import annotations

import json
import select
import shlex
import subprocess
from pathlib import Path

import pytest

from agentlaunch import datarecord as records
from agentlaunch.providers.claude_hooks import tool_refusal
from agentlaunch.providers.native import claude_source
from agentlaunch.providers.native.claude import HELD_NAME, SOCKET_NAME, native_extras
from agentlaunch.providers.native.claude_question import QUESTION_TIMEOUT
from agentlaunch.providers.native.claude_settings import GATE_TIMEOUT, HOOK_EVENTS, transcript_path
from agentlaunch.providers.native.claude_source import UNDECIDED, ClaudeNativeSource
from agentlaunch.providers.native.hook_ask import ASK_WAIT
from agentlaunch.providers.native.source import NativeItem, PromptTyped, ToolAsked
from agentlaunch.sinks import StateChanged
from tests.support.claude_native_replay import SESSION, context, root  # noqa: F401 (root: the fixture)


def read_until(source: ClaudeNativeSource, found: type, rounds: int = 50) -> list[NativeItem]:
    items: list[NativeItem] = []
    for _ in range(rounds):
        select.select(source.filenos(), [], [], 0.1)
        items += source.read()
        if any(isinstance(i, found) for i in items):
            break
    return items


def run_hook(command: str, payload: object) -> subprocess.Popen[bytes]:
    """The hook's command as Claude Code runs it (``sh -c``), the payload on its stdin."""
    proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(payload).encode())
    proc.stdin.close()
    return proc


def python_of(command: str) -> str:
    return command.replace("/usr/bin/python3", shlex.quote(__import__("sys").executable), 1)


def test_every_hook_is_a_command_hook_to_a_socket_in_the_runtime_folder(root: Path) -> None:  # noqa: F811
    ctx = context(root)
    extras = native_extras(ctx)
    (source,) = extras.sources
    assert isinstance(source, ClaudeNativeSource) and source.server is not None  # the dialog's hook is held
    try:
        hooks = json.loads(extras.argv[1])["hooks"]
        assert set(hooks) == set(HOOK_EVENTS) and extras.env == {}
        for event, groups in hooks.items():
            (hook,) = groups[0]["hooks"]
            assert hook["type"] == "command"
            if event == "PermissionRequest":  # held until the person answers (agentlaunch answer) or the dialog closes
                assert "hook_ask.py" in hook["command"] and hook["timeout"] == QUESTION_TIMEOUT
                assert shlex.split(hook["command"])[-2:] == [str(ctx.runtime_dir / HELD_NAME), event]
                continue
            assert "hook_report.py" in hook["command"]  # no budget: PreToolUse only reports
            assert shlex.split(hook["command"])[-2:] == [str(ctx.runtime_dir / SOCKET_NAME), event]
        assert (ctx.runtime_dir / HELD_NAME).stat().st_mode & 0o777 == 0o600
    finally:
        source.close()


def test_a_reports_command_reaches_the_source(root: Path) -> None:  # noqa: F811
    extras = native_extras(context(root))
    (source,) = extras.sources
    assert isinstance(source, ClaudeNativeSource)
    try:
        command = json.loads(extras.argv[1])["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
        done = run_hook(python_of(command), {"session_id": SESSION, "prompt": "hello"})
        assert done.wait(30) == 0 and done.stdout is not None and done.stdout.read() == b""
        items = read_until(source, PromptTyped)
        assert [i.text for i in items if isinstance(i, PromptTyped)] == ["hello"]
        assert [i.state for i in items if isinstance(i, StateChanged)] == ["thinking"]
    finally:
        source.close()


def _gated(root: Path) -> tuple[ClaudeNativeSource, str, Path]:  # noqa: F811
    ctx = records.replace(context(root), gated=True)
    extras = native_extras(ctx)
    (source,) = extras.sources
    assert isinstance(source, ClaudeNativeSource) and source.server is not None
    hook = json.loads(extras.argv[1])["hooks"]["PreToolUse"][0]["hooks"][0]
    assert hook["type"] == "command" and "hook_ask.py" in hook["command"] and hook["timeout"] == GATE_TIMEOUT > ASK_WAIT
    assert shlex.split(hook["command"])[-2:] == [str(ctx.runtime_dir / HELD_NAME), "PreToolUse"]
    assert (ctx.runtime_dir / HELD_NAME).stat().st_mode & 0o777 == 0o600 and ctx.runtime_dir.stat().st_mode & 0o077 == 0
    path = transcript_path(ctx.env, ctx.working_dir, SESSION)
    path.parent.mkdir(parents=True)
    path.write_text("")
    return source, python_of(hook["command"]), path


def _call_line(tool_id: str) -> str:
    usage = {"input_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 3}
    content = [{"type": "tool_use", "id": tool_id, "name": "Write", "input": {}}]
    message = {"id": "msg_1", "model": "claude-sonnet-4-5", "stop_reason": "tool_use", "usage": usage, "content": content}
    return json.dumps({"type": "assistant", "timestamp": "2099-01-01T00:00:00.000Z", "message": message}) + "\n"


def _asked(source: ClaudeNativeSource, rounds: int = 50) -> list[ToolAsked]:
    return [i for i in read_until(source, ToolAsked, rounds) if isinstance(i, ToolAsked)]


def test_a_gated_tool_is_held_until_its_call_is_read_and_refused_with_the_reason(root: Path) -> None:  # noqa: F811
    source, command, path = _gated(root)
    try:
        payload = {"session_id": SESSION, "tool_name": "Write", "tool_use_id": "toolu_1", "transcript_path": str(path)}
        hook = run_hook(command, payload)
        (early,) = _asked(source)  # asked at once, on the bound: its call is not read
        assert (early.undecided, early.unread, early.early) == (UNDECIDED, 1, True)
        assert not _asked(source, rounds=5)  # left unanswered (the bound did not allow it): asked once, then held
        assert hook.poll() is None  # held: the tool waits
        with path.open("a") as f:
            f.write(_call_line("toolu_1"))
        (asked,) = _asked(source)
        assert (asked.undecided, asked.unread, asked.early) == ("", 0, False)
        asked.answer(False, "budget spent")
        assert hook.wait(30) == 0 and hook.stdout is not None
        assert json.loads(hook.stdout.read()) == tool_refusal("budget spent")
        allowed = run_hook(command, {**payload, "tool_use_id": "toolu_1"})  # its call is read: answered at once
        (again,) = _asked(source)
        assert again.undecided == ""
        again.answer(True, "")
        assert allowed.wait(30) == 0 and allowed.stdout is not None and allowed.stdout.read() == b""
    finally:
        source.close()


def test_a_gate_whose_call_is_not_read_in_time_is_asked_again_and_refused_with_the_reason(
    root: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(claude_source, "GATE_READ_WAIT", 0.3)
    source, command, path = _gated(root)
    try:
        hook = run_hook(command, {"session_id": SESSION, "tool_use_id": "toolu_9", "transcript_path": str(path)})
        (early,) = _asked(source)
        assert early.early and hook.poll() is None
        (late,) = _asked(source)  # the wait is over: asked again, for good
        assert (late.undecided, late.unread, late.early) == (UNDECIDED, 1, False)
        late.answer(False, late.undecided)
        assert hook.wait(30) == 0 and hook.stdout is not None
        assert json.loads(hook.stdout.read()) == tool_refusal(UNDECIDED)
        assert not _asked(source, rounds=5)  # answered: never asked again
    finally:
        source.close()


def test_a_tool_the_bound_allows_runs_at_once_and_counts_as_a_call_not_read_until_its_line_is(
    root: Path,  # noqa: F811
) -> None:
    source, command, path = _gated(root)
    try:
        first = run_hook(command, {"session_id": SESSION, "tool_use_id": "toolu_1", "transcript_path": str(path)})
        (early,) = _asked(source)
        early.answer(True, "")  # the bound allows it: it runs without waiting for its call's line
        assert first.wait(30) == 0 and first.stdout is not None and first.stdout.read() == b""
        second = run_hook(command, {"session_id": SESSION, "tool_use_id": "toolu_2", "transcript_path": str(path)})
        (next_one,) = _asked(source)
        assert (next_one.unread, next_one.early) == (2, True)  # the first tool's call is not counted yet either
        with path.open("a") as f:
            f.write(_call_line("toolu_1"))
        (after,) = _asked(source, rounds=10) or [None]
        assert after is None  # toolu_2's own call is still unread: held, not asked again before its wait is over
        third = run_hook(command, {"session_id": SESSION, "tool_use_id": "toolu_3", "transcript_path": str(path)})
        (last,) = _asked(source)
        assert last.unread == 1  # toolu_1's call is read now: only the third's own is not counted
        for hook in (second, third):
            hook.kill()
            hook.wait(30)
    finally:
        source.close()


def test_the_gate_refuses_the_tool_when_the_launch_is_gone(root: Path) -> None:  # noqa: F811
    source, command, path = _gated(root)
    source.close()  # its socket goes with it
    gone = run_hook(command, {"session_id": SESSION, "tool_use_id": "toolu_2", "transcript_path": str(path)})
    assert gone.wait(30) == 0 and gone.stdout is not None
    refused = json.loads(gone.stdout.read())
    assert refused["continue"] is False and refused["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "cannot reach the launch" in refused["stopReason"]
