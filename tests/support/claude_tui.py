"""Running the real Claude Code TUI offline: a temp HOME seeded like a set-up user's, and a screen to read it.

Claude Code's interactive interface talks to ``api.anthropic.com`` and asks
first-run questions unless its ``~/.claude.json`` says that onboarding is
done, the API key was approved and the working folder is trusted. A real
user's home already holds these; :func:`seed_home` writes them, so the TUI
runs against the fake API on 127.0.0.1 (see provider-interfaces.md).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path

import pexpect
import pyte

API_KEY = "sk-ant-fake-0123456789abcdefghij"
"""The key the tests hand to Claude Code; approved in the seeded home (it shows its last 20 characters)."""


def seed_home(home: Path, working_dirs: list[Path], key: str = API_KEY, config_dir: Path | None = None) -> Path:
    """Write ``~/.claude.json`` (or ``$CLAUDE_CONFIG_DIR/.claude.json``) as a set-up user's; returns its path."""
    target_dir = config_dir if config_dir is not None else home
    target_dir.mkdir(parents=True, exist_ok=True)
    state = {
        "hasCompletedOnboarding": True,
        "lastOnboardingVersion": "2.1.332",
        "numStartups": 5,
        "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
        "bypassPermissionsModeAccepted": False,
        "projects": {
            str(d.resolve()): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True, "allowedTools": []}
            for d in working_dirs
        },
    }
    path = target_dir / ".claude.json"
    path.write_text(json.dumps(state, indent=2))
    return path


def tui_env(base_url: str, home: Path, extra: Mapping[str, str] | None = None, key: str = API_KEY) -> dict[str, str]:
    """The environment for the TUI: PATH from ours, HOME the seeded one, the fake API, no other traffic."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "PYTHONPATH")}
    env.update(
        {
            "HOME": str(home),
            "TERM": "xterm-256color",
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": key,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
    )
    env.update(extra or {})
    return env


class Screen:
    """A pexpect child whose output feeds a pyte screen: tests read the screen as a person would see it."""

    def __init__(self, child: pexpect.spawn, columns: int = 120, lines: int = 40) -> None:
        self.child = child
        self.screen = pyte.Screen(columns, lines)
        self.stream = pyte.ByteStream(self.screen)

    def pump(self, timeout: float = 0.1) -> None:
        """Feed what the child printed within ``timeout`` seconds to the screen."""
        try:
            data = self.child.read_nonblocking(1 << 16, timeout=timeout)
        except pexpect.TIMEOUT:
            return
        except pexpect.EOF:
            return
        self.stream.feed(data)

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

    def until(self, condition: Callable[[], bool], timeout: float = 60.0, what: str = "") -> None:
        """Pump the screen until ``condition()`` holds (the screen must be read, or the TUI blocks on output)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.pump()
            if condition():
                return
        raise AssertionError(f"timed out waiting for {what or condition}:\n{self.text()}")


def quit_with_ctrl_c(screen: Screen, pump: Callable[[], None] | None = None, attempts: int = 3) -> None:
    """Leave Claude Code's interface as its user does: Ctrl-C, then Ctrl-C again once it says "again to exit".

    Under load the first Ctrl-C can be taken by something else (a turn it interrupts, a hint that timed out before
    the second came): the pair is tried again. ``pump`` reads whatever else must be read meanwhile (a hook socket).
    """
    step = pump or screen.pump
    for _ in range(attempts):
        screen.child.send("\x03")
        end = time.monotonic() + 10
        while time.monotonic() < end and "again to exit" not in screen.text() and screen.child.isalive():
            step()
        screen.child.send("\x03")
        end = time.monotonic() + 20
        while time.monotonic() < end and screen.child.isalive():
            step()
        if not screen.child.isalive():
            return
    raise AssertionError(f"the interface did not exit after {attempts} double Ctrl-C:\n{screen.text()}")


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
