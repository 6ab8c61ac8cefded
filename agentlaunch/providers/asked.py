"""What an asking CLI asks, in one line: the ``state_reason`` of an ``asking`` record.

Claude Code's ``PermissionRequest`` hook, Codex's app-server approval request and Gemini's ``ToolPermission``
notification name the tool and its input; :func:`tool_question` says them as a person reads them
(``Bash: rm -rf build``, ``Write: notes.md``, ``AskUserQuestion: Which branch?``). The text is the CLI's
data, kept as it came (a record is JSON): every view that prints it makes it inert first
(:func:`agentlaunch.visible.visible`, and no markup), and cuts it to its own width.
"""

from __future__ import annotations

import json
from typing import Any

QUESTION_CHARS = 300  # kept in the record at most: more than any one-line view shows
_TELLING = (
    "command",
    "cmd",
    "file_path",
    "filePath",
    "path",
    "notebook_path",
    "url",
    "urls",
    "pattern",
    "query",
    "prompt",
    "plan",
    "toolName",
    "description",
    "reason",
    "message",
)
"""The input fields that say what a tool would do, the most telling first (its command, the file it writes)."""


def one_line(text: str, limit: int = QUESTION_CHARS) -> str:
    """``text`` on one line (runs of white space, new lines among them, as one space), cut at ``limit`` with ``…``."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def tool_question(tool: str, tool_input: Any) -> str:
    """``TOOL: what it would do``: the first telling field of its input (a questions list: the first question),
    else the input as compact JSON; the tool alone when its input says nothing."""
    said = _telling(tool_input)
    return one_line(f"{tool}: {said}" if said else tool)


def _telling(tool_input: Any) -> str:
    if isinstance(tool_input, str):
        return tool_input
    if isinstance(tool_input, list):
        return " ".join(tool_input) if all(isinstance(part, str) for part in tool_input) else ""
    if not isinstance(tool_input, dict) or not tool_input:
        return ""
    questions = tool_input.get("questions")
    if isinstance(questions, list) and questions and isinstance(questions[0], dict):
        first = questions[0].get("question")
        if isinstance(first, str) and first.strip():
            return first
    for key in _TELLING:
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, list) and value and all(isinstance(part, str) for part in value):
            return " ".join(value)  # an argv
    try:
        return json.dumps(tool_input, ensure_ascii=False, separators=(",", ":"), default=str)[: QUESTION_CHARS * 2]
    except (TypeError, ValueError, RecursionError):
        return ""


def questions_of(tool_input: Any) -> list[dict[str, Any]]:
    """The questions a question tool's input asks, those with a text (Claude Code's ``AskUserQuestion`` and Codex's
    ``request_user_input`` both take ``{"questions": [{"question": …, "options": [{"label": …}, …]}, …]}``)."""
    asked = tool_input.get("questions") if isinstance(tool_input, dict) else None
    listed = asked if isinstance(asked, list) else []
    return [q for q in listed if isinstance(q, dict) and isinstance(q.get("question"), str) and q["question"]]


def choices_line(tool_input: Any) -> str:
    """Each question and the choices it offers, on one line (``Which color? (Red / Blue)``); "" when none."""
    said = []
    for asked in questions_of(tool_input):
        offered = asked.get("options")
        options: list[Any] = offered if isinstance(offered, list) else []
        labels = [o["label"] for o in options if isinstance(o, dict) and isinstance(o.get("label"), str) and o["label"]]
        said.append(f"{asked['question']} ({' / '.join(labels)})" if labels else asked["question"])
    return " ".join(said)
