"""Gemini's native source told by Gemini CLI's hooks: the states they say, a session no launch follows, a resumed
Gemini without hooks, settings that turn them off.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from agentlaunch import datarecord as records
from agentlaunch.providers.native.gemini import GeminiNativeSource, native_extras, project_hash
from tests.support.gemini_recorded import SESSION, Bench, states


def _hook(socket_path: Path, event: str, payload: dict[str, Any], named: Path | None = None) -> None:
    """What Gemini's hook command does: the reporter, run as Gemini runs it, with the hook's JSON on stdin."""
    import subprocess
    import sys

    from agentlaunch.providers.native.hook_socket import REPORTER

    where = "@" + str(named) if named is not None else str(socket_path)
    subprocess.run(
        [sys.executable, "-I", "-S", str(REPORTER), where, event], input=json.dumps(payload).encode(), check=True, timeout=30
    )


def test_gemini_hooks_tell_up_prompt_tool_asking_and_the_tool_run(tmp_path: Path) -> None:
    # The order measured on Gemini 0.61.0: SessionStart, BeforeAgent, BeforeTool, Notification(ToolPermission),
    # (the person allows) AfterTool. The model call's record (it asked for the tool) is read after the prompt's report.
    import tempfile

    bench = Bench(tmp_path, session_id=SESSION)
    runtime = Path(tempfile.mkdtemp(prefix="alg-", dir="/tmp"))  # a socket path is at most 107 bytes
    extras = native_extras(records.replace(bench.ctx(), runtime_dir=runtime))
    source = extras.sources[0]
    assert extras.notices == []
    assert isinstance(source, GeminiNativeSource) and source.sock is not None and source.named is not None
    named = source.named
    assert named == bench.home / "agentlaunch-hooks" / SESSION and named.read_text().strip() == str(source.sock.path)
    base = {"session_id": SESSION}
    try:
        _hook(source.sock.path, "SessionStart", {**base, "source": "startup"}, named)
        assert states(source.read()) == ["waiting"]
        _hook(source.sock.path, "BeforeAgent", {**base, "prompt": "write the file"}, named)
        items = source.read()
        assert states(items) == ["thinking"] and [i.text for i in items if hasattr(i, "text")] == ["write the file"]
        _hook(source.sock.path, "BeforeTool", {**base, "tool_name": "run_shell_command"}, named)
        _hook(source.sock.path, "Notification", {**base, "notification_type": "ToolPermission"}, named)
        assert states(source.read()) == ["tool", "asking"]
        # The record of the call that asked comes in late: the prompt still waits, asking stays.
        bench.chats.mkdir(parents=True, exist_ok=True)
        header = {"sessionId": SESSION, "projectHash": project_hash(bench.work), "kind": "main"}
        call = {"id": "m1", "type": "gemini", "content": "", "tokens": {"input": 10, "output": 1}}
        bench.file.write_text(json.dumps(header) + "\n" + json.dumps(call) + "\n")
        assert states(source.read()) == []
        _hook(source.sock.path, "AfterTool", {**base, "tool_name": "run_shell_command"}, named)
        assert states(source.read()) == ["thinking"]
        # A denied tool fires no hook: Gemini's "Request cancelled." record ends the turn.
        _hook(source.sock.path, "Notification", {**base, "notification_type": "ToolPermission"}, named)
        assert states(source.read()) == ["asking"]
        with bench.file.open("a") as fh:
            fh.write(json.dumps({"id": "i1", "type": "info", "content": "Request cancelled."}) + "\n")
            fh.write(json.dumps({"id": "u9", "type": "user", "content": [{"text": "history again"}]}) + "\n")
        assert states(source.read()) == ["waiting"], "the history Gemini writes again is no new prompt"
        # Another kind of notification tells nothing.
        _hook(source.sock.path, "Notification", {**base, "notification_type": "Other"}, named)
        assert states(source.read()) == []
    finally:
        source.close()
    assert not named.exists(), "the launch's end removes the file naming its socket"
    os.rmdir(runtime) if runtime.exists() and not any(runtime.iterdir()) else None


def test_a_hook_of_a_session_no_launch_follows_sends_nothing(tmp_path: Path) -> None:
    from agentlaunch.providers.native.hook_report import main

    assert main(["hook_report.py", "@" + str(tmp_path / "agentlaunch-hooks" / "no-such-session"), "BeforeTool"]) == 0


def test_a_resumed_gemini_without_hooks_is_up_once_its_session_file_is_found(tmp_path: Path) -> None:
    bench = Bench(tmp_path, session_id=SESSION, resumed=True)
    bench.write(bench.recorded("gemini_tui.session.jsonl"))
    source = GeminiNativeSource(bench.ctx(), None)  # no hook socket (the user's settings turn hooks off)
    assert states(source.read()) == ["waiting"]
    assert states(source.read()) == []


def test_settings_that_turn_hooks_off_are_said_and_no_socket_is_bound(tmp_path: Path) -> None:
    bench = Bench(tmp_path, session_id=SESSION)
    (bench.home / ".gemini").mkdir(parents=True)
    (bench.home / ".gemini" / "settings.json").write_text('{"hooksConfig": {"enabled": false}}')
    extras = native_extras(bench.ctx())
    source = extras.sources[0]
    assert isinstance(source, GeminiNativeSource) and source.sock is None
    assert any("hooksConfig.enabled: false" in n and "tool, not asking" in n for n in extras.notices)
    source.close()
