"""A question answered with keys (Gemini's permission prompt): typed only while the screen shows that question.

Gemini 0.61 takes no answer but its interface's keys. Its prompt (``Allow execution of [Shell]?``, ``● 1. Allow
once``, ``2. Allow for this session``, ``3. No, suggest changes (esc)``) acts on a digit at once (measured: ``3``
cancels the request, no further model call). A key typed into anything else (the input box, another prompt) would be
text or a command, so the launch reads the screen first: its own tmux pane's (``tmux capture-pane``; the launch runs
in the pane, ``TMUX_PANE`` names it), and types the option's key through the relay only when every text the question
names is on it. Outside tmux the launch cannot read the screen: such a question is answered in its window.

A reply in words (Gemini's ``ask_user`` text question, :mod:`agentlaunch.providers.native.gemini_ask`) is typed the
same way, on one line, and its Enter pressed only once the pane shows the typed text with the question still up
(:data:`REPLY_WAIT` at most; else no Enter: the text is left where it is, not sent).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import partial
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from agentlaunch.launch.loop import Loop
    from agentlaunch.providers.native.source import QuestionAsked

CAPTURE_WAIT = 5.0  # seconds tmux has to print the pane
REPLY_LOOK = 0.2  # seconds between two looks at the pane for a typed reply
REPLY_WAIT = 5.0  # seconds a typed reply's Enter waits for the pane to show it
SHOWN_CHARS = 30  # of a reply looked for on the pane (its input line may cut a longer one)


class KeyTarget(Protocol):
    def press(self, keys: bytes) -> None: ...
    @property
    def loop(self) -> Loop: ...
    @property
    def takes_paste(self) -> bool: ...


def pane_text(pane: str | None = None) -> str | None:
    """What the launch's tmux pane shows (its lines joined where tmux wrapped them), or None outside tmux."""
    pane = pane or os.environ.get("TMUX_PANE")
    tmux = shutil.which("tmux")
    if not pane or tmux is None or not os.environ.get("TMUX"):
        return None
    try:
        done = subprocess.run(
            [tmux, "capture-pane", "-p", "-J", "-t", pane], capture_output=True, timeout=CAPTURE_WAIT, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None


def shows_all(screen: str, texts: tuple[str, ...]) -> bool:
    """Every one of ``texts`` is on ``screen`` (runs of white space as one: a box pads and wraps)."""
    flat = " ".join(screen.split())
    return bool(texts) and all(" ".join(text.split()) in flat for text in texts)


def answer(target: KeyTarget, item: QuestionAsked, decision: str, text: str, screen: str | None = None) -> bool:
    """Type ``decision``'s key (a reply: ``text``, then Enter) when the screen shows ``item``'s question; False
    (nothing typed) when it does not."""
    keys = " ".join(text.split()) if decision == "reply" else item.keys.get(decision)
    shown = screen if screen is not None else pane_text()
    if not keys or shown is None or not shows_all(shown, item.shows):
        return False
    if decision != "reply":
        target.press(keys.encode())
        return True
    data = keys.encode("utf-8")
    target.press(b"\x1b[200~" + data + b"\x1b[201~" if target.takes_paste else data)
    typed = (*item.shows, keys[:SHOWN_CHARS])
    target.loop.call_later(REPLY_LOOK, partial(_enter_once_shown, target, typed, target.loop.clock.monotonic()))
    return True


def _enter_once_shown(target: KeyTarget, typed: tuple[str, ...], since: float) -> None:
    """Enter once the pane shows the question and the reply typed into it; none after :data:`REPLY_WAIT`."""
    shown = pane_text()
    if shown is not None and shows_all(shown, typed):
        target.press(b"\r")
    elif target.loop.clock.monotonic() - since < REPLY_WAIT:
        target.loop.call_later(REPLY_LOOK, partial(_enter_once_shown, target, typed, since))
