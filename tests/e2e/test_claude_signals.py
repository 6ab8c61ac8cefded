"""Claude Code 2.1.332's hook events, measured on the real TUI, and the ones agentlaunch builds on.

Claude Code 2.1.332 accepts 34 hook events in its settings (the list in its settings schema). The first test
runs the TUI against the fake API with a logging hook on every one of them and pins which fire in a plain
session (a CLAUDE.md, a tool that asks permission, a second prompt), in what order and with what payload; what
agentlaunch hooks, and why, is in ``providers/native/claude.py`` and docs/claude-native.md. The second pins what
agentlaunch takes from ``Stop``: its ``last_assistant_message`` gives ``send --wait`` its answer even when Claude
Code writes no transcript (before, that answer was empty).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch.fakeapi.anthropic import ApiUsage, FakeAnthropic, text_reply, tool_reply
from testbed.agent_files import write_agent
from testbed.claude_tui import quit_with_ctrl_c, seed_home, tui_env
from testbed.pty_screen import spawn
from tests.support.cli_runs import run_cli_inprocess
from tests.support.record_tui import ALL_HOOK_EVENTS, prepared, settings

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


@pytest.fixture
def short_root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="alsg-") as folder:  # the launch's sockets live under it: short paths
        yield Path(folder)


def logged(log: Path) -> list[tuple[str, dict[str, object]]]:
    """The hook reports in the order Claude Code ran them (the status line's runs left out)."""
    found = []
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        if entry["event"] != "statusline":
            found.append((entry["event"], json.loads(entry["raw"])))
    return found


def test_which_of_the_34_hook_events_fire_in_a_plain_session_and_what_they_carry(claude_bin: Path, short_root: Path) -> None:
    home, work, log, logger = prepared(short_root, {"CLAUDE.md": "# Project rules\nBe brief.\n"})
    api = FakeAnthropic(
        [
            tool_reply("Write", {"file_path": "out.txt", "content": "hello\n"}, ApiUsage(15, 2000, 11000, 40), text="Writing."),
            text_reply("Done.", ApiUsage(6, 120, 13000, 4)),
            text_reply("Second answer.", ApiUsage(6, 120, 13000, 4)),
        ]
    )
    with api.serve() as server:
        argv = [
            str(claude_bin),
            "--session-id",
            str(uuid.uuid4()),
            "--model",
            "claude-sonnet-4-5",
            "--settings",
            json.dumps(settings(log, logger, ALL_HOOK_EVENTS)),
            "write out.txt",
        ]
        s = spawn(argv, tui_env(server.url, home), work)
        try:
            s.wait_for(lambda t: "Do you want to create" in t, 60, "the permission prompt")
            s.until(lambda: any(e == "Notification" for e, _ in logged(log)), 30, "the 6 s permission notification")
            s.child.send("1")
            s.wait_for(lambda t: "Done." in t, 60, "the first answer")
            s.until(lambda: [e for e, _ in logged(log)].count("Stop") == 1, 30, "the first Stop hook")
            s.child.send("again")
            s.pump(0.5)
            s.child.send("\r")
            s.wait_for(lambda t: "Second answer." in t, 60, "the second answer")
            s.until(lambda: [e for e, _ in logged(log)].count("Stop") == 2, 30, "the second Stop hook")
            quit_with_ctrl_c(s)
        finally:
            if s.child.isalive():
                s.child.terminate(force=True)
    reports = logged(log)
    events = [e for e, _ in reports]
    # What a plain session runs of the 34 (MessageDisplay once per displayed message; the rest once each here).
    assert set(events) == {
        "SessionStart",
        "InstructionsLoaded",
        "UserPromptSubmit",
        "MessageDisplay",
        "PreToolUse",
        "PermissionRequest",
        "Notification",
        "PostToolUse",
        "PostToolBatch",
        "Stop",
        "SessionEnd",
    }
    # InstructionsLoaded names the project's CLAUDE.md, and only after SessionStart (under load even after the first
    # prompt's UserPromptSubmit): it cannot tell "up" sooner.
    [(_, loaded)] = [r for r in reports if r[0] == "InstructionsLoaded"]
    assert loaded["file_path"] == str(work / "CLAUDE.md") and loaded["memory_type"] == "Project"
    assert loaded["load_reason"] == "session_start"
    assert events[0] == "SessionStart"
    # Stop carries the turn's last message, that message's text alone ("Writing." came before it in the same turn).
    assert [p.get("last_assistant_message") for e, p in reports if e == "Stop"] == ["Done.", "Second answer."]
    # The only Notification is the permission prompt's, after PermissionRequest: no agent_needs_input or
    # agent_completed (they are for background agents and a few dialogs), no idle_prompt within a minute.
    assert [p.get("notification_type") for e, p in reports if e == "Notification"] == ["permission_prompt"]
    assert events.index("PermissionRequest") < events.index("Notification")
    # MessageDisplay would cost a process per displayed message, and its text is the transcript's.
    assert [p.get("delta") for e, p in reports if e == "MessageDisplay"] == ["Writing.", "Done.", "Second answer."]


def test_send_wait_answers_with_the_stop_hooks_message_when_claude_writes_no_transcript(
    claude_bin: Path, short_root: Path, agents_dir: Path
) -> None:
    home, work = short_root / "home", short_root / "work"
    for folder in (home, work):
        folder.mkdir(mode=0o700)
    seed_home(home, [work])
    (home / ".claude").mkdir()
    (home / ".claude" / "projects").write_text("a file where Claude Code's transcript folder should be")
    write_agent(
        agents_dir,
        "native",
        {"provider": "claude", "model": "claude-sonnet-4-5", "command": str(claude_bin), "working_dir": str(work)},
    )
    # Every call gets it: Claude Code's side calls (a title for the session) come and go in any order.
    api = FakeAnthropic(default=text_reply("The answer, from the Stop hook.", ApiUsage(12, 5000, 9000, 7)))
    with api.serve() as server:
        keep = {k: os.environ[k] for k in os.environ if k.startswith(("AGENTLAUNCH_", "XDG_"))}
        env = tui_env(server.url, home, {**keep, "AGENTLAUNCH_TITLE": "0", "CLAUDE_CODE_MAX_RETRIES": "0"})
        argv = [sys.executable, "-m", "agentlaunch", "run", "native", "--agents-dir", str(agents_dir)]
        screen = spawn(argv, env, work)
        try:
            screen.until(lambda: state(env, work) == "waiting", 90, "the interface up (SessionStart)")
            proc = subprocess.Popen(
                [sys.executable, "-m", "agentlaunch", "send", "native", "hello", "--wait", "--json"],
                env=env,
                cwd=work,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            screen.until(lambda: proc.poll() is not None, 120, "send --wait")
            out, err = proc.communicate()
            quit_with_ctrl_c(screen)
        finally:
            if screen.child.isalive():
                screen.child.terminate(force=True)
    assert proc.returncode == 0, err.decode()
    reply = json.loads(out)
    assert reply["answer"] == "The answer, from the Stop hook."
    assert (home / ".claude" / "projects").is_file()  # no transcript was written: the answer came from the hook alone


def state(env: dict[str, str], work: Path) -> str | None:
    done = run_cli_inprocess("status", "--json", env=env, cwd=work)
    try:
        records = json.loads(done.stdout)
    except ValueError:
        return None
    return next((str(r.get("state")) for r in records if r.get("agent") == "native"), None)
