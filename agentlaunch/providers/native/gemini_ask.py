"""Gemini's own question to the person (its ``ask_user`` tool), answered with keys only while its screen shows it.

Measured on Gemini CLI 0.61.0 in tmux against the fake Gemini API (``tests/e2e/test_answer_gemini_ask_e2e.py``): the
interactive CLI offers the model ``ask_user`` (``{"questions": [{"question", "header", "type": "choice" | "text" |
"yesno", "options", "placeholder"}]}``, at most 4). A call of it runs the ``BeforeTool`` hook with that input, then
the ``Notification`` hook ``ToolPermission`` whose ``details`` are only ``{"type": "ask_user", "title": "Ask User"}``
(the questions are not in it), and the screen shows a box: ``Answer Questions``, the question, an input line with
the placeholder, ``Enter to submit · Esc to cancel``. Typed text and Enter answer it: the model reads
``{"answers": {"0": TEXT}}``; Esc cancels the request ("Request cancelled.", the turn over, no further model call),
as it does a permission prompt.

So the launch keeps the ``BeforeTool`` input of ``ask_user`` and, on its ``ToolPermission``, offers the question to
``agentlaunch answer``: ``deny`` (Esc) always, ``reply`` only for one question of type ``text`` (a choice is picked
with arrow keys among options the launch cannot see the cursor of: answered in the window). A reply is typed
(:func:`~agentlaunch.launch.native.screen_keys.reply`) only while the pane shows the box and that question, on one
line (a new line would submit early and the rest would go to the input box), and its Enter is pressed only once the
pane shows the typed text in the box.
"""

from __future__ import annotations

from typing import Any

from agentlaunch.providers.asked import choices_line, one_line, questions_of
from agentlaunch.providers.native.source import QuestionAsked
from agentlaunch.providers.untrusted import string

TOOL = "ask_user"
BOX = ("Answer Questions", "Esc to cancel")
"""Gemini 0.61's ask_user box: its title and its last line (``Enter to submit · Esc to cancel``)."""
SHOWN_CHARS = 30  # of the question looked for on the screen (a box may wrap a longer one)
ESC = "\x1b"


def is_ask_user(payload: dict[str, Any]) -> bool:
    """A ``ToolPermission`` notification of the ``ask_user`` tool (its ``details.type``)."""
    details = payload.get("details")
    return isinstance(details, dict) and details.get("type") == TOOL


def asked_input(payload: dict[str, Any]) -> dict[str, Any] | None:
    """The input of a ``BeforeTool`` hook of ``ask_user`` (its questions), else None."""
    tool_input = payload.get("tool_input")
    if string(payload.get("tool_name")) != TOOL or not isinstance(tool_input, dict):
        return None
    return tool_input


def ask_user_question(tool_input: dict[str, Any] | None) -> QuestionAsked:
    """The question of ``ask_user`` with ``tool_input`` (None: its BeforeTool was not heard), answered with keys."""
    questions = questions_of(tool_input)
    said = choices_line(tool_input)
    first = " ".join(questions[0]["question"].split())[:SHOWN_CHARS] if questions else ""
    text = len(questions) == 1 and string(questions[0].get("type")) == "text"
    return QuestionAsked(
        TOOL,
        tool_input if tool_input is not None else {},
        ("reply", "deny") if text else ("deny",),
        None,
        {"deny": ESC},
        BOX + ((first,) if first else ()),
        one_line(f"{TOOL}: {said}") if said else TOOL,
    )
