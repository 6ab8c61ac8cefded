"""A question answered with keys (Gemini's permission prompt): typed only while the screen shows that question.

Gemini 0.61 takes no answer but its interface's keys. Its prompt (``Allow execution of [Shell]?``, ``● 1. Allow
once``, ``2. Allow for this session``, ``3. No, suggest changes (esc)``) acts on a digit at once (measured: ``3``
cancels the request, no further model call). A key typed into anything else (the input box, another prompt) would be
text or a command, so the launch reads the screen first: its own tmux pane's (``tmux capture-pane``; the launch runs
in the pane, ``TMUX_PANE`` names it), and types the option's key through the relay only when every text the question
names is on it. Outside tmux the launch cannot read the screen: such a question is answered in its window.

A reply in words (Gemini's ``ask_user`` text question, :mod:`agentlaunch.providers.native.gemini_ask`) is typed the
same way, on one line, and its Enter pressed only once the pane shows the typed text with the question still up
(:data:`REPLY_WAIT` at most). It is answered once the pane no longer shows the question's box (submitted), within
:data:`SUBMIT_WAIT` of the Enter. Otherwise nothing was answered: where the pane still shows
the question's box, the typed characters are taken out again with Backspace (never typed anywhere else), and the
answer says so (``agentlaunch answer`` exits 9; the question stays open).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from agentlaunch.providers.native.source import Pending

if TYPE_CHECKING:
    from agentlaunch.launch.loop import Loop
    from agentlaunch.providers.native.source import QuestionAsked

CAPTURE_WAIT = 5.0  # seconds tmux has to print the pane
REPLY_LOOK = 0.2  # seconds between two looks at the pane for a typed reply
REPLY_WAIT = 5.0  # seconds a typed reply's Enter waits for the pane to show it
SUBMIT_WAIT = 5.0  # seconds after its Enter within which the pane must show the reply submitted (the question gone)
BACKSPACE = b"\x7f"
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


def answer(target: KeyTarget, item: QuestionAsked, decision: str, text: str, screen: str | None = None) -> bool | Pending[bool]:
    """Type ``decision``'s key when the screen shows ``item``'s question; False (nothing typed) when it does not. A
    reply: ``text`` typed, then Enter, and a :class:`Pending` that says whether the screen showed it submitted."""
    keys = " ".join(text.split()) if decision == "reply" else item.keys.get(decision)
    shown = screen if screen is not None else pane_text()
    if not keys or shown is None or not shows_all(shown, item.shows):
        return False
    if decision != "reply":
        target.press(keys.encode())
        return True
    data = keys.encode("utf-8")
    target.press(b"\x1b[200~" + data + b"\x1b[201~" if target.takes_paste else data)
    reply = TypedReply(target, item.shows, keys)
    target.loop.call_later(REPLY_LOOK, reply.look_typed)
    return reply.taken


class TypedReply:
    """A reply typed into the question's box: its Enter once the pane shows it there, then a look for its submission
    (:attr:`taken`), and its characters taken out again with Backspace where it was not submitted."""

    def __init__(self, target: KeyTarget, shows: tuple[str, ...], keys: str) -> None:
        self.target, self.shows, self.chars = target, shows, len(keys)
        self.typed = (*shows, keys[:SHOWN_CHARS])  # the question's box with the reply in it
        self.taken: Pending[bool] = Pending()
        self.since = target.loop.clock.monotonic()

    def _again(self, look: Callable[[], None], wait: float) -> bool:
        """Look again in a moment while ``wait`` seconds have not passed since :attr:`since`; False once they have."""
        loop = self.target.loop
        if loop.clock.monotonic() - self.since >= wait:
            return False
        loop.call_later(REPLY_LOOK, look)
        return True

    def look_typed(self) -> None:
        """Enter once the pane shows the question and the reply typed into it; none after :data:`REPLY_WAIT`."""
        shown = pane_text()
        if shown is not None and shows_all(shown, self.typed):
            self.target.press(b"\r")
            self.since = self.target.loop.clock.monotonic()
            self.target.loop.call_later(REPLY_LOOK, self.look_submitted)
        elif not self._again(self.look_typed, REPLY_WAIT):
            self.not_taken()

    def look_submitted(self) -> None:
        """Taken once the pane no longer shows the question's box (submitted); not after :data:`SUBMIT_WAIT`."""
        shown = pane_text()
        if shown is not None and not shows_all(shown, self.shows):
            self.taken.settle(True)
        elif not self._again(self.look_submitted, SUBMIT_WAIT):
            self.not_taken()

    def not_taken(self) -> None:
        """Nothing answered: the typed characters out again, only while the pane still shows the question's box."""
        shown = pane_text()
        if shown is not None and shows_all(shown, self.shows):
            self.target.press(BACKSPACE * self.chars)
        self.taken.settle(False)
