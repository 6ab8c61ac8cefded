"""Claude Code's permission dialog, answered from outside the pane: its ``PermissionRequest`` hook, held.

The launch's ``PermissionRequest`` hook is a held one (``hook_ask`` on the launch's held-hook socket,
:mod:`.hook_held`): Claude Code waits for its answer, and meanwhile shows its dialog as usual (measured on 2.1.332:
the dialog is on the screen while the hook is pending, and the person can answer it there; an answer in the dialog
closes it, the held hook is then ignored, whatever it says). The launch answers the hook when the person answers
with ``agentlaunch answer``:

* allow once: ``{"behavior": "allow"}``: the dialog closes, "Allowed by PermissionRequest hook" under the tool;
* allow always: the same, with the ``permission_suggestions`` the hook's input carries as ``updatedPermissions``
  (the dialog's "Yes, and always allow …");
* deny: ``{"behavior": "deny", "message": …}``: the tool does not run, the model reads the message.

A hook that tells Claude Code moved past the dialog (:data:`QUESTION_OVER`) closes the question: its held hook is
let go with an empty answer (no decision).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agentlaunch.providers.native.hook_ask import QUESTION_WAIT
from agentlaunch.providers.native.source import NativeItem, QuestionAsked
from agentlaunch.providers.untrusted import string

if TYPE_CHECKING:
    from agentlaunch.providers.native.hook_held import HeldHooks

QUESTION_TIMEOUT = QUESTION_WAIT + 60
"""Claude Code's timeout for the ``PermissionRequest`` hook (its dialog is up meanwhile: the hook's own wait,
:data:`~.hook_ask.QUESTION_WAIT`, bounds how long the launch can still answer it)."""
QUESTION_OVER = frozenset(
    {"UserPromptSubmit", "PreToolUse", "PostToolBatch", "PermissionDenied", "Stop", "StopFailure", "SessionEnd"}
)
"""Hooks that come only once the dialog is closed: the question was answered (or the turn ended)."""
DENIED = "The person denied this tool (agentlaunch answer)."


def decision(choice: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The hook's answer for ``choice`` (once, always, deny)."""
    if choice == "deny":
        said: dict[str, Any] = {"behavior": "deny", "message": DENIED}
    else:
        said = {"behavior": "allow"}
        suggestions = payload.get("permission_suggestions")
        if choice == "always" and isinstance(suggestions, list) and suggestions:
            said["updatedPermissions"] = suggestions
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": said}}


def question_items(server: HeldHooks | None, reply: str, payload: dict[str, Any]) -> list[NativeItem]:
    """The question of a held ``PermissionRequest`` hook, answered through ``server``."""
    if server is None:
        return []
    suggestions = payload.get("permission_suggestions")
    options = ("once", "always", "deny") if isinstance(suggestions, list) and suggestions else ("once", "deny")

    def answer(choice: str, _text: str) -> bool:
        return server.answer(reply, json.dumps(decision(choice, payload)))

    tool = string(payload.get("tool_name")) or "a tool"
    return [QuestionAsked(tool, payload.get("tool_input"), options, answer)]
