"""The ``--settings`` a native Claude Code launch passes (the status-line command, a hook on each event that tells a
state), and the user's own settings it goes over: their status-line command, their ``disableAllHooks``."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentlaunch.fsutil import read_regular
from agentlaunch.providers import untrusted
from agentlaunch.providers.native.claude_question import QUESTION_TIMEOUT
from agentlaunch.providers.native.claude_transcript import project_folder
from agentlaunch.providers.native.hook_ask import ASK_WAIT
from agentlaunch.providers.native.hook_socket import REPORTER, hook_command, script_argv
from agentlaunch.providers.native.source import NativeContext
from agentlaunch.providers.untrusted import string

STATUSLINE = Path(__file__).with_name("claude_statusline.py")
ASKER = REPORTER.with_name("hook_ask.py")
SETTINGS_LIMIT = 1 << 20

GATE_TIMEOUT = int(ASK_WAIT) + 10
"""Seconds Claude Code gives the gate's command hook (``hook_ask``), which stops waiting before (its ``ASK_WAIT``) and
refuses the tool: a hook Claude Code kills at its timeout lets the tool run (measured on 2.1.332)."""
HOOK_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolBatch",
    "PermissionRequest",
    "PermissionDenied",
    "Notification",
    "Stop",
    "StopFailure",
    "Elicitation",
    "ElicitationResult",
    "SessionEnd",
)
"""The hook events of Claude Code 2.1.332 that tell a state (all exist there: its settings schema lists them).

Each is a process per event (a command hook), so only these of its 34 (measured in
tests/e2e/test_claude_signals.py; the table in docs/claude-native.md). Not ``PreCompact``/``PostCompact``: Claude
Code prints "PreCompact [command] completed successfully" under the compaction's result for them (measured), so they
would show agentlaunch's plumbing on the person's screen; the transcript's ``compact_boundary`` tells the compaction
instead. Not ``InstructionsLoaded``: it runs after ``SessionStart`` and only with a CLAUDE.md. Not
``MessageDisplay``: a hook per message for the text the transcript has. Not ``TaskCreated``/``TaskCompleted``: agent
teams' task list, not the session's state."""


def config_dir(env: Mapping[str, str]) -> Path:
    """Claude Code's own folder for ``env``: ``$CLAUDE_CONFIG_DIR``, else ``$HOME/.claude``."""
    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"]).expanduser()
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".claude"


def transcript_path(env: Mapping[str, str], working_dir: Path, session_id: str) -> Path:
    """Where Claude Code writes the transcript of ``session_id`` started in ``working_dir``."""
    return config_dir(env) / "projects" / project_folder(str(working_dir)) / f"{session_id}.jsonl"


def user_settings(env: Mapping[str, str], working_dir: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The user's settings objects, the one that wins first (the project's local file, the project's, the user's),
    and notes on the files that could not be read."""
    files = [
        working_dir / ".claude" / "settings.local.json",
        working_dir / ".claude" / "settings.json",
        config_dir(env) / "settings.json",
    ]
    found: list[dict[str, Any]] = []
    notes: list[str] = []
    for path in files:
        try:
            data = untrusted.loads(read_regular(path, SETTINGS_LIMIT).decode("utf-8"))
        except FileNotFoundError:
            continue
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            notes.append(f"could not read {path} for your status line ({exc}); agentlaunch's is shown alone")
            continue
        found.append(untrusted.obj(data))
    return found, notes


def user_status_line(env: Mapping[str, str], working_dir: Path) -> tuple[str | None, list[str]]:
    """The user's own status-line command (local, then project, then user settings win), and notes on unreadable files.

    ``--settings`` outranks these files, so agentlaunch's status line replaces the
    user's; agentlaunch runs theirs itself and joins its output.
    """
    found, notes = user_settings(env, working_dir)
    for data in found:
        line = untrusted.obj(data.get("statusLine"))
        command = string(line.get("command")).strip()
        if line.get("type", "command") == "command" and command:
            return command, notes
    return None, notes


def hooks_notice(found: list[dict[str, Any]]) -> list[str]:
    """A notice when the user's settings turn hooks off: agentlaunch leaves that choice alone, and says what it costs."""
    for data in found:
        if isinstance(data.get("disableAllHooks"), bool):
            if data["disableAllHooks"]:
                return [
                    "your Claude Code settings disable hooks (disableAllHooks): agentlaunch cannot tell the session's "
                    "state, and reads its calls from the transcript only when the session ends"
                ]
            return []
    return []


def settings(ctx: NativeContext, socket_path: Path, config_path: Path, held_path: Path) -> dict[str, Any]:
    """The ``--settings`` object: the status-line command and a hook on each event that tells a state.

    Each hook is a command hook that reaches the launch through its 0700 runtime folder only: a report is one
    datagram to ``socket_path`` (``hook_report``). With a budget the ``PreToolUse`` hook is a gate (``hook_ask``):
    it waits on ``held_path`` for the launch's answer, given once the call that asked for the tool is counted, and
    refuses the tool when none comes.
    """
    statusline = shlex.join(script_argv(ctx.python, STATUSLINE, str(config_path)))
    hooks: dict[str, Any] = {}
    for event in HOOK_EVENTS:
        if event == "PermissionRequest":  # held until the person answers, here or in the dialog (claude_question)
            ask = shlex.join(script_argv(ctx.python, ASKER, str(held_path), event))
            hook: dict[str, Any] = {"type": "command", "command": ask, "timeout": QUESTION_TIMEOUT}
        elif ctx.gated and event == "PreToolUse":
            ask = shlex.join(script_argv(ctx.python, ASKER, str(held_path), event))
            hook = {"type": "command", "command": ask, "timeout": GATE_TIMEOUT}
        else:
            hook = {"type": "command", "command": hook_command(ctx.python, socket_path, event)}
        hooks[event] = [{"hooks": [hook]}]
    return {"statusLine": {"type": "command", "command": statusline, "padding": 0}, "hooks": hooks}
