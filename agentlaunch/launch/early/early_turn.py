"""A per-turn CLI's first turn started from the last plan, before agentlaunch's own imports.

Codex takes its prompt in argv. The plan of a new session's first turn
(:func:`turn_record`) is that argv, with the prompt's element marked and
what comes before the user's text there (the startup message, its session
id and its ten-minute time replaced by stand-ins). The entry point puts this
launch's prompt there (:func:`with_prompt`) and starts the CLI with its
stdin a pipe left open.

No model call can happen twice or be lost: the CLI sends nothing before that
pipe ends. Codex 0.171.0, given a prompt in argv and a pipe on stdin, reads
the pipe to its end first (it prints ``Reading additional input from
stdin...``), verified against the fake API: no request while the pipe stays
open. The full launch compares the argv, environment, stdin and instructions
it computed with the ones the CLI was started with
(:func:`agentlaunch.launch.early.prespawn.adopt`) and closes the pipe only when
they are identical; otherwise the CLI is killed with its stdin still open. A
launch that dies before adopting it leaves its PTY's master closed: the CLI's
session leader gets SIGHUP (Codex's node launcher passes it on to the binary);
that no call follows is what ``tests/e2e/test_early_turn.py`` checks. Gemini
takes its prompt on stdin and starts no turn early (its early start was within
the noise: ``GeminiAdapter.early_turn``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

NOW = "{agentlaunch-now-stand-in-Q8vw}"  # the startup message's time, in a plan
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
    """What a plan keeps of a first turn's ``argv``, one element of which is the startup message and ``prompt``
    (``text``): the prompt's place (``prompt_at``, its index in argv) and what comes before the user's text
    (``prompt_head``); None when no element holds exactly that text, or something goes on ``stdin``."""
    if not prompt or prompt == "-" or not text.endswith(prompt) or stdin or text not in argv:
        return None
    at = len(argv) - 1 - list(reversed(argv)).index(text)
    head = text[: len(text) - len(prompt)].replace(session_id, SESSION)
    stamp = now_text(now)
    if stamp:
        head = head.replace(stamp, NOW)
    return {"prompt_at": at, "prompt_head": head}


def with_prompt(
    argv: list[str], plan: Mapping[str, object], prompt: str | None, session_id: str, now: datetime
) -> list[str] | None:
    """``argv`` (the plan's, its session id filled in) with this launch's prompt where the plan's first turn had
    its own; None when there is nothing to start early (no prompt given in the command line, or the plan is not
    one of a first turn)."""
    at, head = plan.get("prompt_at"), plan.get("prompt_head")
    if prompt is None or prompt in ("", "-") or not isinstance(head, str):
        return None
    text = head.replace(SESSION, session_id).replace(NOW, now_text(now)) + prompt
    if not isinstance(at, int) or isinstance(at, bool) or not 0 <= at < len(argv) or argv[at] != "":
        return None
    return [*argv[:at], text, *argv[at + 1 :]]
