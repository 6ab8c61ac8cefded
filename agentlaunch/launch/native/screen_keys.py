"""A question answered with keys (Gemini's permission prompt): typed only while the screen shows that question.

Gemini 0.61 takes no answer but its interface's keys. Its prompt (``Allow execution of [Shell]?``, ``● 1. Allow
once``, ``2. Allow for this session``, ``3. No, suggest changes (esc)``) acts on a digit at once (measured: ``3``
cancels the request, no further model call). A key typed into anything else (the input box, another prompt) would be
text or a command, so the launch reads the screen first: its own tmux pane's (``tmux capture-pane``; the launch runs
in the pane, ``TMUX_PANE`` names it), and types the option's key through the relay only when every text the question
names is on it. Outside tmux the launch cannot read the screen: such a question is answered in its window.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from agentlaunch.providers.native.source import QuestionAsked

CAPTURE_WAIT = 5.0  # seconds tmux has to print the pane


class KeyTarget(Protocol):
    def press(self, keys: bytes) -> None: ...


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


def answer(target: KeyTarget, item: QuestionAsked, decision: str, _text: str, screen: str | None = None) -> bool:
    """Type ``decision``'s key when the screen shows ``item``'s question; False (nothing typed) when it does not."""
    keys = item.keys.get(decision)
    shown = screen if screen is not None else pane_text()
    if keys is None or shown is None or not shows_all(shown, item.shows):
        return False
    target.press(keys.encode())
    return True
