"""What a Gemini session file says: where the files are (:func:`gemini_root`, :func:`project_hash`), a file's header,
the state a model call's record tells and its answer's text, and what a permission prompt's notification asks.

The model's answer is the ``content`` of a model call's record: one ``Text``
per message id, the first time its record is read with text, before the state
that record tells (``waiting`` for the turn's answer). Gemini 0.61 writes a
call's record once its stream has ended, ``content`` the whole response text
(a string; thoughts are kept apart, in ``thoughts``), and rewrites the record
only to add its tool calls' results or ``tokens``, never its text (read in its
bundle: ``recordMessage`` after the stream, ``recordToolCalls``,
``recordMessageTokens``), so the first version is the final text. A record is
a model call's when its ``content`` is that string or it has ``tokens``; the
notes the CLI adds to the history itself (after ``/compress``, a binary file's
"received") are parts lists without ``tokens``, and ``thought`` parts are
never text. Messages only seen in a ``$set`` of the whole history (a resume,
a rewritten history) are history: no ``Text``; the ids a resumed session
already holds are known as its calls are.
"""

from __future__ import annotations

from datetime import datetime
from hashlib import sha256
from pathlib import Path
from typing import Any

from agentlaunch.providers import untrusted
from agentlaunch.providers.asked import one_line, tool_question
from agentlaunch.providers.native.source import QuestionAsked
from agentlaunch.providers.untrusted import items, string

HEADER_LIMIT = 1 << 20


def gemini_root(env: Any) -> Path:
    """``~/.gemini/tmp`` where ``~`` is ``$GEMINI_CLI_HOME`` when set (Gemini's own rule), else ``$HOME``."""
    return Path(env.get("GEMINI_CLI_HOME") or env.get("HOME", "~")).expanduser() / ".gemini" / "tmp"


def project_hash(working_dir: Path) -> str:
    """Gemini's ``projectHash``: the SHA-256 of the project folder's path."""
    return sha256(str(working_dir).encode("utf-8")).hexdigest()


def call_state(message: dict[str, Any]) -> str | None:
    """The state a model call's record tells: its tools running, or the turn's answer given."""
    calls = [c for c in items(message.get("toolCalls")) if isinstance(c, dict)]
    if calls:
        done = all(string(c.get("status")) in ("success", "error", "cancelled") for c in calls)
        return "thinking" if done else "tool"
    if string(message.get("content")).strip() or _has_text(message.get("content")):
        return "waiting"
    return "tool"


def answer_text(content: Any) -> str:
    """A record's ``content`` as text: the string, or its text parts joined (not thoughts, calls or their results)."""
    if isinstance(content, str):
        return content
    return "".join(string(p.get("text")) for p in items(content) if isinstance(p, dict) and not p.get("thought"))


def _has_text(content: Any) -> bool:
    return any(isinstance(p, dict) and string(p.get("text")).strip() for p in items(content))


def session_header(path: Path) -> dict[str, Any] | None:
    """A session file's header line (``sessionId``, ``projectHash``, ``startTime``); None when it has none (yet)."""
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            line = fh.readline(HEADER_LIMIT)
        head = untrusted.loads(line) if line.endswith("\n") else None
    except (OSError, ValueError):
        return None
    return head if isinstance(head, dict) and "sessionId" in head else None


def header_started(head: dict[str, Any]) -> float:
    """The header's ``startTime`` as a timestamp (0 when it is not an ISO time)."""
    text = string(head.get("startTime"))
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def gemini_question(payload: dict[str, Any]) -> str | None:
    """What Gemini's permission prompt asks: the tool call its notification details (its command, file or URL, the
    fields of Gemini's confirmation details), else the notification's message."""
    details = untrusted.obj(payload.get("details"))
    kind = string(details.get("type"))  # exec (a shell command: "echo hi > out.txt"), edit, mcp, info
    tool = "shell" if kind == "exec" else string(details.get("serverName")) if kind == "mcp" else kind
    said = tool_question(tool or "tool", details) if details else ""
    return said or one_line(string(payload.get("message"))) or None


PROMPT_KEYS = {"once": "1", "always": "2", "deny": "3"}
"""Gemini 0.61's permission prompt: ``1. Allow once``, ``2. Allow for this session``, ``3. No, suggest changes
(esc)``; a digit acts at once (measured: ``3`` cancels the request)."""
PROMPT_TEXTS = ("Allow once", "Allow for this session", "No, suggest changes")
SHOWN_CHARS = 30  # of the tool's own text looked for on the screen (a box may cut a longer one)


def gemini_asked(payload: dict[str, Any]) -> QuestionAsked:
    """The question of a ``ToolPermission`` notification, answered with the prompt's keys while the screen shows it."""
    details = untrusted.obj(payload.get("details"))
    kind = string(details.get("type"))
    tool = "shell" if kind == "exec" else string(details.get("serverName")) if kind == "mcp" else kind or "tool"
    own = string(details.get("command")) or string(details.get("fileName")) or string(details.get("toolName"))
    first = own.strip().splitlines()[0][:SHOWN_CHARS] if own.strip() else ""
    shows = PROMPT_TEXTS + ((first,) if first else ())
    said = gemini_question(payload) or ""
    return QuestionAsked(tool, details or string(payload.get("message")), tuple(PROMPT_KEYS), None, PROMPT_KEYS, shows, said)
