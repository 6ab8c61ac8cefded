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
