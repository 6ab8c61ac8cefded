"""What a "needs you" announcement of a question carries so the person can answer it where they read it: the
commands that answer it (``agentlaunch answer AGENT --allow --question ID``, the same path as the command and the
deck), for the notify command's JSON, and the desktop notification's Allow / Deny actions (``notify-send
--action``, libnotify 0.7.9 and later), which run those commands when the person clicks one.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from agentlaunch.datarecord import datarecord
from agentlaunch.sinks import LaunchEvent

FLAGS = {"once": "--allow", "always": "--always", "deny": "--deny"}
ACTIONS = {"once": "Allow", "deny": "Deny"}
"""The desktop notification's buttons (an always, or a reply in words, is given in the deck or with the command)."""
HELP_WAIT = 2.0  # seconds notify-send has to print its help (asked once a launch: does it take --action?)


@datarecord(frozen=True, slots=True)
class QuestionOpen(LaunchEvent):
    """The CLI asks a question agentlaunch answer can answer (:meth:`agentlaunch.launch.questions.Question.shown`)."""

    question: dict[str, Any]


def answer_argv(agent: str, question: dict[str, Any], decision: str) -> list[str]:
    """The command that answers ``question`` of ``agent`` with ``decision`` (this Python's agentlaunch)."""
    return [sys.executable, "-m", "agentlaunch", "answer", agent, FLAGS[decision], "--question", str(question.get("id"))]


def answer_commands(agent: str, question: dict[str, Any]) -> dict[str, list[str]]:
    """Each option the question offers that a command answers without words, and its command."""
    offered = [o for o in question.get("options") or [] if o in FLAGS]
    return {option: answer_argv(agent, question, option) for option in offered}


def takes_actions(notify_send: str) -> bool:
    """``notify-send`` takes ``--action`` (it prints the chosen action's name once clicked)."""
    try:
        done = subprocess.run(
            [notify_send, "--help"], capture_output=True, stdin=subprocess.DEVNULL, timeout=HELP_WAIT, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return b"--action" in done.stdout + done.stderr


def action_args(question: dict[str, Any] | None) -> list[str]:
    """``--action=NAME=Label`` for each button the question takes, and ``--wait`` (none without a question)."""
    if question is None:
        return []
    offered = question.get("options") or []
    buttons = [f"--action={name}={label}" for name, label in ACTIONS.items() if name in offered]
    return [*buttons, "--wait"] if buttons else []
