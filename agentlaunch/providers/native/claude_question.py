"""Claude Code's permission dialogs and questions, answered from outside the pane: its held ``PermissionRequest`` hook.

The launch's ``PermissionRequest`` hook is a held one (``hook_ask`` on the launch's held-hook socket,
:mod:`.hook_held`): Claude Code waits for its answer, and meanwhile shows its dialog as usual (measured on 2.1.332:
the dialog is on the screen while the hook is pending, and the person can answer it there; an answer in the dialog
closes it, the held hook is then ignored, whatever it says; measured again with the command hook: the tool runs
0.1 s after Enter while ``hook_ask`` still waits. Claude Code drops a key that arrives within about 0.1 s of the
dialog's first frame, its "input grace": a person answering that fast presses again). The launch answers the
hook when the person answers with ``agentlaunch answer``:

* allow once: ``{"behavior": "allow"}``: the dialog closes, "Allowed by PermissionRequest hook" under the tool;
* allow always: the same, with the ``permission_suggestions`` the hook's input carries as ``updatedPermissions``
  (the dialog's "Yes, and always allow …");
* deny: ``{"behavior": "deny", "message": …}``: the tool does not run, the model reads the message;
* reply (``AskUserQuestion`` only, its one answer besides deny): ``{"behavior": "allow", "updatedInput": …}``, the
  tool's input with ``answers`` (each question's text to the person's reply; a choice is replied by its label, as the
  dialog answers it). Measured on 2.1.332: the question's ``PreToolUse`` then ``PermissionRequest`` hooks run, the
  dialog closes ("Answered Claude's questions: · Which color? → …", "Allowed by PermissionRequest hook"), and the
  model's next request carries the tool result ``The user answered: "Which color?"="…"``. A bare allow answers
  nothing (measured: the question's dialog stays up, no request follows), so it is not offered.

A hook that tells Claude Code moved past the dialog (:data:`QUESTION_OVER`) closes the question: its held hook is
let go with an empty answer (no decision).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agentlaunch.providers.asked import choices_line, one_line, questions_of
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
ASKS = "AskUserQuestion"
"""Claude Code's question to the person: answered with a reply (its ``answers``), not allowed."""


def decision(choice: str, payload: dict[str, Any], text: str = "") -> dict[str, Any]:
    """The hook's answer for ``choice`` (once, always, deny; reply with ``text``)."""
    tool_input = payload.get("tool_input")
    if choice == "deny":
        said: dict[str, Any] = {"behavior": "deny", "message": DENIED}
    elif choice == "reply" and isinstance(tool_input, dict):
        answers = {q["question"]: text for q in questions_of(tool_input)}
        said = {"behavior": "allow", "updatedInput": {**tool_input, "answers": answers}}
    else:
        said = {"behavior": "allow"}
        suggestions = payload.get("permission_suggestions")
        if choice == "always" and isinstance(suggestions, list) and suggestions:
            said["updatedPermissions"] = suggestions
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": said}}


def asks_of(tool_input: Any) -> str:
    """An ``AskUserQuestion`` in one line: each question, and the choices it offers (``Which color? (Red / Blue)``)."""
    said = choices_line(tool_input)
    return one_line(f"{ASKS}: {said}") if said else ""


def question_items(server: HeldHooks | None, reply: str, payload: dict[str, Any]) -> list[NativeItem]:
    """The question of a held ``PermissionRequest`` hook, answered through ``server``."""
    if server is None:
        return []
    tool = string(payload.get("tool_name")) or "a tool"
    tool_input = payload.get("tool_input")
    suggestions = payload.get("permission_suggestions")
    if tool == ASKS and (asks := asks_of(tool_input)):
        options: tuple[str, ...] = ("reply", "deny")
    else:
        asks = ""
        options = ("once", "always", "deny") if isinstance(suggestions, list) and suggestions else ("once", "deny")

    def answer(choice: str, text: str) -> bool:
        return server.answer(reply, json.dumps(decision(choice, payload, text)))

    return [QuestionAsked(tool, tool_input, options, answer, asks=asks)]
