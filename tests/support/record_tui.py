"""Record what the real Claude Code TUI writes for programs, for the native-mode unit tests.

Run ``python -m tests.support.record_tui [CLAUDE] [OUT]`` (CLAUDE: the
binary, default the pinned one in ``$AGENTLAUNCH_TEST_CLI_CACHE``; OUT:
default ``tests/data/claude_tui``). Each scenario starts the TUI on a PTY in a
fresh seeded HOME (see :mod:`tests.support.claude_tui`) against the fake API
on 127.0.0.1, with ``--settings`` adding a status-line command and a hook on
every event, all of them appending their stdin JSON to one log. It writes,
per scenario: ``transcript.jsonl`` (the session's transcript, as written),
``reports.jsonl`` (one ``{"event", "payload"}`` per hook or status-line run,
in order), ``requests.jsonl`` (one summary per Messages request the fake API
answered, in order: model, message count, how the last message starts) and
``screen.txt`` (the last screen).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from agentlaunch.fakeapi.anthropic import ApiUsage, FakeAnthropic, Planned, text_reply, tool_reply
from tests.support.claude_tui import seed_home, tui_env
from tests.support.pty_screen import Screen, spawn

HOOK_EVENTS = (
    "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest",
    "PermissionDenied", "Notification", "Stop", "StopFailure", "SubagentStop", "PreCompact", "PostCompact", "SessionEnd",
    "PostToolBatch",
)  # fmt: skip
ALL_HOOK_EVENTS = (
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "Notification", "UserPromptSubmit",
    "UserPromptExpansion", "SessionStart", "SessionEnd", "Stop", "StopFailure", "SubagentStart", "SubagentStop",
    "PreCompact", "PostCompact", "PreModelSwitch", "PostModelSwitch", "PermissionRequest", "PermissionDenied", "Setup",
    "TeammateIdle", "TaskCreated", "TaskCompleted", "Elicitation", "ElicitationResult", "ConfigChange", "WorktreeCreate",
    "WorktreeRemove", "InstructionsLoaded", "CwdChanged", "FileChanged", "DirectoryAdded", "MessageDisplay",
    "PreSkillShellCommand",
)  # fmt: skip
"""The 34 hook events Claude Code 2.1.332's settings take, in its own order (the event list in its shipped code)."""
LOGGER = """import json, sys
raw = sys.stdin.read()
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({"event": sys.argv[2], "raw": raw}) + "\\n")
if sys.argv[2] == "statusline":
    print("recorder status line")
"""
REPO = Path(__file__).resolve().parents[2]


def default_claude() -> str:
    cache = Path(os.environ.get("AGENTLAUNCH_TEST_CLI_CACHE", REPO / ".cache" / "provider-clis"))
    return str(cache / "claude-2.1.332" / "node_modules" / "@anthropic-ai" / "claude-code-linux-x64" / "claude")


def settings(log: Path, logger: Path, events: tuple[str, ...] = HOOK_EVENTS) -> dict[str, object]:
    """``--settings`` with a logging status line and a logging hook on each of ``events``."""

    def cmd(event: str) -> str:
        return shlex.join([sys.executable, str(logger), str(log), event])

    return {
        "statusLine": {"type": "command", "command": cmd("statusline")},
        "hooks": {e: [{"hooks": [{"type": "command", "command": cmd(e)}]}] for e in events},
    }


def prepared(root: Path, files: dict[str, str]) -> tuple[Path, Path, Path, Path]:
    """Under ``root``: a seeded home, a working folder holding ``files``, the log and its logger script."""
    home, work = root / "home", root / "work"
    home.mkdir()
    work.mkdir()
    for name, text in files.items():
        (work / name).write_text(text)
    seed_home(home, [work])
    log, logger = root / "log.jsonl", root / "logger.py"
    logger.write_text(LOGGER)
    return home, work, log, logger


def exit_tui(s: Screen) -> None:
    s.child.send("\x03")
    time.sleep(0.5)
    s.child.send("\x03")
    s.until(lambda: not s.child.isalive(), 30, "the TUI to exit")


def tool_turn(s: Screen) -> None:
    """A Write that asks permission (answered yes after the 6 s notification), then a text answer."""
    s.wait_for(lambda t: "Do you want to create" in t, 60, "the permission prompt")
    shown = time.monotonic()
    s.until(lambda: time.monotonic() >= shown + 8, 30)  # Claude Code notifies permission_prompt after 6 s
    s.child.send("1")
    s.wait_for(lambda t: "Done." in t, 60, "the answer")
    answered = time.monotonic()
    s.until(lambda: time.monotonic() >= answered + 3, 30)
    exit_tui(s)


def denied_turn(s: Screen) -> None:
    """A Bash call the person refuses (Esc at the prompt)."""
    s.wait_for(lambda t: "Do you want to proceed" in t, 60, "the permission prompt")
    s.child.send("\x1b")
    s.wait_for(lambda t: "Interrupted" in t or "instead" in t, 60, "the refusal")
    time.sleep(1)
    exit_tui(s)


def slow_then_compact(s: Screen) -> None:
    """A slowly streamed two-block answer (so lines are written before the call's final usage), then /compact."""
    s.wait_for(lambda t: "Slow answer end" in t, 90, "the slow answer")
    time.sleep(1)
    s.child.send("/compact")
    time.sleep(0.5)
    s.child.send("\r")
    s.wait_for(lambda t: "ompacted" in t, 90, "the compaction")
    time.sleep(2)
    exit_tui(s)


SCENARIOS: dict[str, tuple[list[Planned], str, Callable[[Screen], None]]] = {
    "tool_turn": (
        [
            tool_reply("Write", {"file_path": "out.txt", "content": "hello\n"}, ApiUsage(15, 2000, 11000, 40), text="Writing."),
            text_reply("Done.", ApiUsage(6, 120, 13000, 4)),
        ],
        "write out.txt",
        tool_turn,
    ),
    "denied_turn": (
        [tool_reply("Bash", {"command": "rm -rf build", "description": "Remove build"}, ApiUsage(21, 1000, 9000, 25))],
        "clean the build",
        denied_turn,
    ),
    "slow_compact": (
        [
            tool_reply(
                "Read", {"file_path": "README.md"}, ApiUsage(11, 4000, 9000, 33), text="Looking first, slowly.", delay=0.15
            ),
            text_reply("Slow answer end", ApiUsage(9, 300, 13000, 12), delay=0.15),
            text_reply("Summary of the talk so far.", ApiUsage(500, 0, 0, 80)),
        ],
        "look around",
        slow_then_compact,
    ),
}


def request_summary(n: int, body: dict[str, object]) -> dict[str, object]:
    """What a test needs of one Messages request: its order, model, size and how its last user message starts."""
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    last = messages[-1] if messages else {}  # type: ignore[index]
    content = last.get("content") if isinstance(last, dict) else ""
    text = content if isinstance(content, str) else json.dumps(content)
    system = body.get("system")
    system_text = system if isinstance(system, str) else json.dumps(system)
    return {"n": n, "model": body.get("model"), "messages": len(messages), "tools": len(body.get("tools") or []),  # type: ignore[arg-type]
            "max_tokens": body.get("max_tokens"), "last_user": text[:200], "last_user_end": text[-300:],
            "system_end": system_text[-200:]}  # fmt: skip


def record(name: str, claude: str, out: Path) -> None:
    plans, prompt, drive = SCENARIOS[name]
    root = Path(tempfile.mkdtemp(prefix="alrec-"))
    home, work, log, logger = prepared(root, {"README.md": "# demo\n"})
    session = str(uuid.uuid4())
    api = FakeAnthropic(plans)
    with api.serve() as server:
        argv = [claude, "--session-id", session, "--model", "claude-sonnet-4-5"]
        argv += ["--settings", json.dumps(settings(log, logger)), prompt]
        s = spawn(argv, tui_env(server.url, home), work)
        try:
            drive(s)
        finally:
            if s.child.isalive():
                s.child.terminate(force=True)
    dest = out / name
    dest.mkdir(parents=True, exist_ok=True)
    transcript = next((home / ".claude" / "projects").glob(f"*/{session}.jsonl"))
    (dest / "transcript.jsonl").write_bytes(transcript.read_bytes())
    with (dest / "reports.jsonl").open("w") as f:
        for line in log.read_text().splitlines():
            entry = json.loads(line)
            try:
                payload = json.loads(entry["raw"])
            except ValueError:
                payload = None
            f.write(json.dumps({"event": entry["event"], "payload": payload}) + "\n")
    with (dest / "requests.jsonl").open("w") as f:
        for n, request in enumerate(api.message_requests(), 1):
            f.write(json.dumps(request_summary(n, request.body)) + "\n")
    (dest / "screen.txt").write_text(s.text() + "\n")
    print(f"{name}: {dest} ({root})")


def main(argv: list[str]) -> int:
    claude = argv[1] if len(argv) > 1 and argv[1] else default_claude()
    out = Path(argv[2]) if len(argv) > 2 else REPO / "tests" / "data" / "claude_tui"
    names = argv[3:] or list(SCENARIOS)
    for name in names:
        record(name, claude, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
