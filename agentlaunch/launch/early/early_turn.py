"""A per-turn CLI's first turn started from the last plan, before agentlaunch's own imports.

Codex takes its prompt in argv, Gemini on stdin. The plan of a new session's
first turn (:func:`turn_record`) is that argv, with the prompt's place marked
(its element, or stdin) and what comes before the user's text there (the
startup message, its session id and its ten-minute time replaced by
stand-ins). The entry point puts this launch's prompt there
(:func:`with_prompt`) and starts the CLI with its stdin a pipe left open;
a prompt that goes on stdin is written into that pipe at once.

No model call can happen twice or be lost: the CLI sends nothing before that
pipe ends. Codex 0.171.0, given a prompt in argv and a pipe on stdin, reads
the pipe to its end first (it prints ``Reading additional input from
stdin...``). Gemini CLI 0.61.0 reads stdin as its prompt to the pipe's end
once a first chunk has come (``readStdin``: its 500 ms wait applies only
while nothing has; the prompt is in the pipe before Gemini starts). Both
verified against the fake API: no request while the pipe stays open. The
full launch compares the argv, environment, stdin and instructions it
computed with the ones the CLI was started with
(:func:`agentlaunch.launch.early.prespawn.adopt`) and closes the pipe only when
they are identical; otherwise the CLI is killed with its stdin still open. A
launch that dies before adopting it leaves its PTY's master closed: the CLI's
session leader gets SIGHUP (Codex's node launcher passes it on to the binary);
that no call follows, for Gemini's relaunched tree too, is what
``tests/e2e/test_early_turn.py`` checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

NOW = "{agentlaunch-now-stand-in-Q8vw}"  # the startup message's time, in a plan
STDIN = "stdin"  # a plan's prompt_at when the prompt goes on stdin
SESSION = "{session}"  # as in agentlaunch.launch.early.prespawn (not imported: this module is read before it is needed)


def now_text(now: datetime) -> str:
    """The startup message's time of ``now``: rounded down to ten minutes as
    :func:`agentlaunch.definitions.rendered.quantize_time` does, formatted as
    :func:`agentlaunch.definitions.render.render_startup` says it."""
    local = now.astimezone()
    when = local.replace(minute=local.minute - local.minute % 10, second=0, microsecond=0)
    return when.strftime("%A %Y-%m-%d %H:%M %Z").strip()


def turn_record(
    argv: Sequence[str], stdin: bytes, text: str, prompt: str, session_id: str, now: datetime
) -> dict[str, object] | None:
    """What a plan keeps of a first turn's ``argv`` and ``stdin``, one of which is the startup message and
    ``prompt`` (``text``): the prompt's place (``prompt_at``, an index in argv, or ``"stdin"``) and what comes
    before the user's text (``prompt_head``); None when neither holds exactly that text."""
    if not prompt or prompt == "-" or not text.endswith(prompt):
        return None
    if text in argv:
        at: int | str = len(argv) - 1 - list(reversed(argv)).index(text)
    elif stdin and stdin == text.encode("utf-8"):
        at = STDIN
    else:
        return None
    head = text[: len(text) - len(prompt)].replace(session_id, SESSION)
    stamp = now_text(now)
    if stamp:
        head = head.replace(stamp, NOW)
    return {"prompt_at": at, "prompt_head": head}


def with_prompt(
    argv: list[str], plan: Mapping[str, object], prompt: str | None, session_id: str, now: datetime
) -> tuple[list[str], bytes] | None:
    """``argv`` (the plan's, its session id filled in) with this launch's prompt where the plan's first turn had
    its own, and what goes on stdin (the prompt, or nothing); None when there is nothing to start early (no
    prompt given in the command line, or the plan is not one of a first turn)."""
    at, head = plan.get("prompt_at"), plan.get("prompt_head")
    if prompt is None or prompt in ("", "-") or not isinstance(head, str):
        return None
    text = head.replace(SESSION, session_id).replace(NOW, now_text(now)) + prompt
    if at == STDIN:
        return argv, text.encode("utf-8")
    if not isinstance(at, int) or isinstance(at, bool) or not 0 <= at < len(argv) or argv[at] != "":
        return None
    return [*argv[:at], text, *argv[at + 1 :]], b""
