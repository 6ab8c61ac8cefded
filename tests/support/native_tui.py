"""Driving a provider CLI's real TUI on a PTY (pexpect) and reading its screen (pyte), for native-mode tests.

Also the seeding of a temporary HOME the way a set-up user's is, for Codex
(fake ``model_providers`` entry, the project trusted, the model-migration
notice already acknowledged) and Gemini (API-key auth, workspace trusted), and
a Responses fake that answers Codex TUI's thread-title call on its own (that
call is not part of the turn a test scripts).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pexpect
import pyte

from agentlaunch.fakeapi.responses import (
    ResponsesFake,
    ResponsesUsage,
    TextReply,
    is_responses_call,
    prepare_codex_home,
    user_texts,
)
from agentlaunch.fakeapi.server import Recorded, Reply

TITLE_PROMPT = "Generate a concise, single-line task title"
TITLE_USAGE = ResponsesUsage(input_tokens=321, cached_tokens=0, output_tokens=4)


class Screen(pyte.Screen):
    """pyte's screen, tolerating the private SGR sequences (``CSI > … m``) Gemini's TUI sends."""

    def select_graphic_rendition(self, *attrs: int, private: bool = False, **_: Any) -> None:
        if not private:
            super().select_graphic_rendition(*attrs)


class Tui:
    """A CLI's TUI on a PTY of ``rows`` x ``cols``, its output fed to a terminal emulator."""

    def __init__(self, argv: list[str], env: Mapping[str, str], cwd: Path, rows: int = 40, cols: int = 120) -> None:
        self.child = pexpect.spawn(
            argv[0], argv[1:], env=dict(env), cwd=str(cwd), dimensions=(rows, cols), encoding="utf-8", codec_errors="replace"
        )
        self.screen = Screen(cols, rows)
        self.stream = pyte.Stream(self.screen)

    @property
    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def pump(self, seconds: float = 0.2) -> bool:
        """Feed what the CLI printed within ``seconds`` to the screen; False once it exited."""
        try:
            self.stream.feed(self.child.read_nonblocking(1 << 16, timeout=seconds))
        except pexpect.TIMEOUT:
            pass
        except pexpect.EOF:
            return False
        return True

    def wait_for(self, check: Callable[[], bool], timeout: float = 60.0, every: Callable[[], None] | None = None) -> bool:
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

    def screen_has(self, text: str, timeout: float = 60.0, every: Callable[[], None] | None = None) -> bool:
        return self.wait_for(lambda: text in self.text, timeout, every)

    def close(self) -> None:
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


class TitledResponsesFake(ResponsesFake):
    """The Responses fake, answering Codex TUI's thread-title request itself (never from the script)."""

    def _respond(self, rec: Recorded) -> Reply:
        body = rec.body if is_responses_call(rec) else None
        if isinstance(body, dict) and any(TITLE_PROMPT in text for text in user_texts(body)):
            return Reply(chunks=self._text_stream(0, str(body.get("model", "")), TextReply("Run a command", TITLE_USAGE)))
        return super()._respond(rec)

    @property
    def turn_requests(self) -> list[Recorded]:
        """The model requests of the conversation itself (not the title call)."""
        return [r for r in self.model_requests if not any(TITLE_PROMPT in t for t in user_texts(r.body))]


def seed_codex_home(home: Path, base_url: str, workdir: Path, extra: str = "") -> dict[str, str]:
    """A set-up user's Codex home: the fake provider, the project trusted, the model notice acknowledged."""
    config = f'[projects."{workdir}"]\ntrust_level = "trusted"\n\n[notice.model_migrations]\n"gpt-5.5" = "gpt-6-sol"\n'
    env = prepare_codex_home(home, base_url, extra_config=config + extra)
    env["TERM"] = "xterm-256color"
    return env
