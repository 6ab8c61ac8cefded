"""What ``agentlaunch send`` and a session say on the control socket: one request line, and the checks of it.

A chat or a native interface binds one Unix stream socket (mode 0600, in its
private runtime folder) and names it in its status record (``control``).
``agentlaunch send`` connects, writes one JSON line ``{"prompt": ..., "wait":
bool, "command": bool}`` (``command`` may be left out: false) and reads JSON
lines back:

1. at once, ``{"ok": true, "session_id": ...}`` when the session took the
   prompt, or ``{"ok": false, "error": ..., "state": ...}`` when it cannot
   (it is asking, in a turn, ending; ``"retry": true`` when it is still
   starting and will take one soon; ``"bad_input": true`` when the text itself
   cannot be typed as a message there, a leading ``!`` say: ``send`` exits 2);
   A line ``{"resume_budget": true}`` instead asks a session a budget paused to go on
   (``agentlaunch resume-budget``): ``{"ok": true, "resumed": ...}`` or ``{"ok": false, "error": ...}``.
   A line ``{"question": true}`` asks what the session's CLI asks the person, ``{"answer": {...}}`` answers it
   (``agentlaunch answer``; :mod:`agentlaunch.launch.questions` says both replies);
2. with ``wait``, once the turn is over, ``{"done": true, "exit_code": N,
   "answer": ..., "error": ..., "usage": {...}, "cost_usd": ...}``. A
   connection closed without it means the session ended first.

Taken or refused, never both: a client that gives up waiting for the first
reply shuts its writing end. The session looks at that end right before it
types a request (:meth:`~agentlaunch.launch.control.SendRequest.cancelled`), in the same callback that
then writes the ``ok``, so either the client reads ``ok`` (typed, once) or
the connection ends without one (never typed). The session's end is :mod:`agentlaunch.launch.control`, the
client's :mod:`agentlaunch.launch.control_client`.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

MAX_PROMPT = 1 << 20
"""The longest prompt, in UTF-8 bytes, a session takes from ``send``."""
REQUEST_WAIT = 2.0  # seconds a client has to write its request once connected (the whole request, however it trickles)
FIRST_REPLY_WAIT = REQUEST_WAIT * 2  # seconds send waits for the session to take or refuse its request before cancelling
CANCEL_WAIT = 10.0  # seconds send then waits for the session to confirm: typed already, or dropped
ANSWER_WAIT = 30.0  # seconds an answer may take: a reply typed into the CLI's screen, then its submission looked for
ALLOWED_CONTROLS = "\n\t"


def prompt_problem(prompt: str) -> str | None:
    """Why ``prompt`` cannot be typed into a session, or None: empty, too long, or holding control characters.

    A control character (ESC, say) would reach the CLI's interface as a key, not as text: ``\\x1b[201~``
    would end the paste it is sent in, and what follows would be keys.
    """
    if not prompt.strip():
        return "the prompt is empty"
    try:
        size = len(prompt.encode("utf-8"))
    except UnicodeEncodeError as exc:
        return f"the prompt is not valid UTF-8 (at character {exc.start})"
    if size > MAX_PROMPT:
        return f"the prompt is {size:,} bytes; a session takes at most {MAX_PROMPT:,}"
    for index, char in enumerate(prompt):
        if (char < " " and char not in ALLOWED_CONTROLS) or char == "\x7f" or "\x80" <= char <= "\x9f":
            return f"the prompt holds a control character ({char!r} at character {index}); the interface would take it as a key"
    return None


def command_problem(text: str) -> str | None:
    """Why ``text`` is not a slash command to send with ``--command``, or None."""
    if not text.startswith("/") or len(text) < 2 or text[1].isspace():
        return "a command starts with / and its name (--command sends a slash command, such as /cost)"
    if "\n" in text:
        return "a command is one line"
    return None


class Parsed(NamedTuple):
    """One request line, read: the text, whether the client waits for the turn, whether it is a slash command."""

    prompt: str
    wait: bool
    command: bool = False
    resume_budget: bool = False
    asked: dict[str, Any] | None = None
    """A ``question`` or ``answer`` request (:mod:`agentlaunch.launch.questions`), as it came."""


def parse_request(data: bytes) -> Parsed | str:
    """The prompt and the flags of one request line, or why it is not one (never raises)."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "the request is not a JSON line"
    if not isinstance(value, dict):
        return "the request is not a JSON object"
    if value.get("resume_budget") is True:
        return Parsed("", False, resume_budget=True)
    if value.get("question") is True or "answer" in value:
        return Parsed("", False, asked=value)
    prompt, wait, command = value.get("prompt"), value.get("wait", False), value.get("command", False)
    if not isinstance(prompt, str):
        return "the request has no prompt string"
    if not isinstance(wait, bool):
        return "the request's wait is not true or false"
    if not isinstance(command, bool):
        return "the request's command is not true or false"
    problem = prompt_problem(prompt) or (command_problem(prompt) if command else None)
    return problem if problem is not None else Parsed(prompt, wait, command)
