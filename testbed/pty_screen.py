"""A program on a pseudo-terminal (pexpect), read as a person sees its screen (pyte): the one screen of the tests
and the benches that drive a CLI's interface."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pexpect
import pyte


class TolerantScreen(pyte.Screen):
    """pyte's screen, ignoring the private SGR forms (``CSI > 4 ; 2 m``: xterm's modifyOtherKeys) Gemini's and
    Codex's interfaces send and pyte cannot take."""

    def select_graphic_rendition(self, *attrs: int, private: bool = False, **_: Any) -> None:
        if not private:
            super().select_graphic_rendition(*attrs)


class Screen:
    """A pexpect child whose output feeds a pyte screen: tests read the screen as a person would see it."""

    def __init__(self, child: pexpect.spawn, columns: int = 120, lines: int = 40) -> None:
        self.child = child
        self.screen = TolerantScreen(columns, lines)
        self.stream = pyte.ByteStream(self.screen)

    def pump(self, timeout: float = 0.1) -> bool:
        """Feed what the child printed within ``timeout`` seconds to the screen; False once its output ended."""
        try:
            data = self.child.read_nonblocking(1 << 16, timeout=timeout)
        except pexpect.TIMEOUT:
            return True
        except pexpect.EOF:
            return False
        self.stream.feed(data)
        return True

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def wait_for(self, found: Callable[[str], bool], timeout: float = 60.0, what: str = "") -> str:
        """Pump until ``found(screen text)`` holds; AssertionError with the screen when it does not in time."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.pump()
            text = self.text()
            if found(text):
                return text
            if not self.child.isalive():
                self.pump()
                break
        raise AssertionError(f"screen never showed {what or found}:\n{self.text()}")

    def type_when_taken(self, text: str, tries: int = 5, wait: float = 5.0) -> None:
        """Type ``text`` into an interface that may still be loading: keys it reads before its input box is live are
        dropped (Gemini 0.61 showed its resumed prompt and lost the keys typed then, in 1 of 6 full runs). A second's
        pause, the text, and when it does not show within ``wait`` seconds, what did arrive erased and the text again."""
        for _ in range(tries):
            pause = time.monotonic() + 1.0
            while time.monotonic() < pause:
                self.pump()
            self.child.send(text)
            with suppress(AssertionError):
                self.wait_for(lambda t: text in t, wait)
                return
            self.child.send("\x7f" * len(text))
        raise AssertionError(f"the interface never took the typed {text!r}:\n{self.text()}")

    def submit(self, sent: Callable[[], bool], tries: int = 3, wait: float = 5.0) -> None:
        """Press Enter on a typed prompt until ``sent()`` says the CLI acted on it: Gemini 0.61 can read an Enter
        that comes soon after typed keys as part of a paste and keep the text in its box (CI run 61, a resumed
        interface). Only for a prompt whose turn asks nothing: a second Enter must find an empty box."""
        for _ in range(tries):
            self.child.send("\r")
            with suppress(AssertionError):
                self.until(sent, wait)
                return

    def until(
        self, condition: Callable[[], bool], timeout: float = 60.0, what: str = "", every: Callable[[], None] | None = None
    ) -> None:
        """Pump the screen until ``condition()`` holds (the screen must be read, or the TUI blocks on output);
        AssertionError with the screen when it does not in time. ``every`` runs after each pump."""
        if not self.within(condition, timeout, every):
            raise AssertionError(f"timed out waiting for {what or condition}:\n{self.text()}")

    def within(self, check: Callable[[], bool], timeout: float = 60.0, every: Callable[[], None] | None = None) -> bool:
        """Pump until ``check()`` holds (True) or ``timeout`` passes (False); ``every`` runs after each pump."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            alive = self.pump()
            if every is not None:
                every()
            if check():
                return True
            if not alive:
                return check()
        return False

    def close(self) -> None:
        """End the child (Ctrl-C twice, then SIGKILL), its last output read first."""
        # A CLI that exited may have left output unread (its last lines, agentlaunch's error and hint after them):
        # the screen gets all of it before a test reads it (CI run 40 missed a hint printed just before the exit).
        end = time.monotonic() + 10.0
        while not self.child.isalive() and time.monotonic() < end and self.pump():
            pass
        if self.child.isalive():
            self.child.sendcontrol("c")
            self.pump(0.3)
            self.child.sendcontrol("c")
            self.pump(0.5)
        if self.child.isalive():
            # Killed and waited for: pexpect's close(force=True) gives a SIGKILLed CLI 0.1 s to be reaped and
            # raised "Could not terminate the child" when a loaded machine took longer (seen in full runs).
            self.child.kill(signal.SIGKILL)
            self.child.wait()
        self.child.close()


def spawn(argv: list[str], env: Mapping[str, str], cwd: Path, columns: int = 120, lines: int = 40) -> Screen:
    """Start ``argv`` on a PTY of ``columns`` x ``lines``."""
    child = pexpect.spawn(argv[0], argv[1:], env=dict(env), cwd=str(cwd), dimensions=(lines, columns))
    return Screen(child, columns, lines)


@contextmanager
def running(argv: list[str], env: Mapping[str, str], cwd: Path, columns: int = 120, lines: int = 40) -> Iterator[Screen]:
    """:func:`spawn`, and on leaving the block a child still alive is ended (SIGTERM, then SIGKILL)."""
    screen = spawn(argv, env, cwd, columns, lines)
    try:
        yield screen
    finally:
        if screen.child.isalive():
            screen.child.terminate(force=True)


def run_to_exit(argv: list[str], env: Mapping[str, str], cwd: Path, timeout: float = 120.0) -> Screen:
    """Run ``argv`` on a PTY, its screen read, until it exits by itself; the child is closed after, so
    ``screen.child.exitstatus`` is its exit code (AssertionError with the screen when it does not exit in time)."""
    with running(argv, env, cwd) as screen:
        screen.until(lambda: not screen.child.isalive(), timeout, "agentlaunch to end the interface")
    screen.child.close()
    return screen
