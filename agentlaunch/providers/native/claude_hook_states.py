"""What Claude Code's hooks tell of its state, and what it asks the person.

States come from hooks and the transcript, never from the screen:

==========  ==========================================================================
starting    the launch began; Claude Code has not reported yet
waiting     ``SessionStart`` (startup, resume, clear), ``Stop`` (its ``last_assistant_message`` ends a sent
            prompt's answer: a ``TurnEnd`` with it as ``result``), ``StopFailure``,
            ``Notification`` ``idle_prompt``, and a transcript line
            ``[Request interrupted by user…]`` (Esc: no Stop hook runs then)
thinking    ``UserPromptSubmit``, ``PostToolBatch`` (every tool of the message ended, the model is called
            next: one hook per message, where ``PostToolUse`` ran one per tool and said ``thinking``
            while a tool run beside it still ran), ``PermissionDenied`` (the model goes on),
            ``ElicitationResult``
tool        ``PreToolUse`` (any tool but the ones below)
asking      ``PermissionRequest`` (at once, as the dialog opens), ``Notification``
            ``permission_prompt`` / ``elicitation_dialog`` (6 s later),
            ``Elicitation``, and ``PreToolUse`` of ``AskUserQuestion`` or
            ``ExitPlanMode`` (a question or a plan waits for the person)
retrying    the transcript gets the same ``api-request`` line again with no answer between (Claude Code
            retries a failed call; the cause is on its screen only); its answer makes it ``thinking``
exited      ``SessionEnd``
==========  ==========================================================================
"""

from __future__ import annotations

from typing import Any

from agentlaunch.providers.asked import one_line, tool_question
from agentlaunch.providers.untrusted import string

ASKING_TOOLS = frozenset({"AskUserQuestion", "ExitPlanMode"})
STATES: dict[str, str] = {
    "UserPromptSubmit": "thinking",
    "PostToolBatch": "thinking",
    "PermissionDenied": "thinking",
    "ElicitationResult": "thinking",
    "PermissionRequest": "asking",
    "Elicitation": "asking",
    "Stop": "waiting",
    "StopFailure": "waiting",
    "SessionEnd": "exited",
}
NOTIFICATIONS = {"permission_prompt": "asking", "elicitation_dialog": "asking", "idle_prompt": "waiting"}
CALL_OVER = frozenset(
    {"UserPromptSubmit", "PreToolUse", "PermissionRequest", "Stop", "StopFailure", "Notification", "SessionEnd"}
)
"""Hooks that run only between model calls: every call read so far is over."""


def state_of(event: str, payload: dict[str, Any]) -> str | None:
    """The state a hook ``event`` tells (the table above), or None when it tells none."""
    if event == "SessionStart":
        return None if payload.get("source") == "compact" else "waiting"
    if event == "PreToolUse":
        return "asking" if string(payload.get("tool_name")) in ASKING_TOOLS else "tool"
    if event == "Notification":
        return NOTIFICATIONS.get(string(payload.get("notification_type")))
    return STATES.get(event)


def question_of(event: str, payload: dict[str, Any], state: str | None) -> str | None:
    """What the person is asked: the tool and its input (``PermissionRequest``, ``PreToolUse`` of a question or a
    plan), an MCP server's message (``Elicitation``); the notification's words only when nothing said it before
    (``state`` already ``asking``: it comes 6 s after ``PermissionRequest``, whose tool and input say more than
    "Claude needs your permission")."""
    if event in ("PermissionRequest", "PreToolUse"):
        return tool_question(string(payload.get("tool_name")) or "a tool", payload.get("tool_input"))
    if event == "Notification" and state == "asking":
        return None
    said = string(payload.get("message"))
    server = string(payload.get("mcp_server_name"))
    return one_line(f"{server}: {said}" if server and said else said) or None
