"""Signals as loop events: the handlers only record, a wakeup pipe wakes the loop.

:class:`Signals` installs a handler for SIGINT, SIGTERM, SIGHUP, SIGWINCH and
SIGCHLD that appends the signal's number to a list, and points
``signal.set_wakeup_fd`` at a pipe the loop reads. So a signal never raises
in the middle of handling an event; the loop takes the recorded signals and
acts on them in order (interrupt the turn, answer a question, end the chat,
end the launch, resize the CLI's terminal, look at the CLI's exit).

Everything that waits runs on the loop (a turn, the chat's prompt, a question
to the person, the relay), inside :meth:`Signals.turn`. Outside it (starting,
between a turn and the next prompt) Ctrl-C raises KeyboardInterrupt, while
SIGTERM/SIGHUP are recorded and end the launch at its next turn or prompt; a
resize is passed on at once (``on_resize``), since no loop runs then to pass
it on and the CLI should not wait for the next turn to learn it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

WATCHED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGWINCH, signal.SIGCHLD)
ENDING = (signal.SIGTERM, signal.SIGHUP)


class Signals:
    """The launch's signal handlers and wakeup pipe (inert off the main thread, where Python allows no handlers)."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.termination: int | None = None  # the first SIGTERM/SIGHUP: the launch ends with 128 + it
        self.fd: int | None = None  # the wakeup pipe's read end, for the loop
        self._write_fd: int | None = None
        self._previous: dict[int, Any] = {}
        self._previous_wakeup = -1
        self._mode = "idle"  # idle · turn (the loop runs)
        self.on_resize: Callable[[], None] | None = None  # SIGWINCH outside the loop

    # -- installing ----------------------------------------------------------------
    def install(self) -> None:
        """Take over the watched signals (idempotent)."""
        if self.fd is not None or threading.current_thread() is not threading.main_thread():
            return
        read_fd, write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC) if hasattr(os, "pipe2") else os.pipe()
        for fd in (read_fd, write_fd):
            os.set_blocking(fd, False)
        self.fd, self._write_fd = read_fd, write_fd
        # A full pipe only means the loop is already due to wake: no warning for it.
        self._previous_wakeup = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        for sig in WATCHED:
            self._previous[sig] = signal.signal(sig, self._handle)

    def uninstall(self) -> None:
        """Give the signals back as they were."""
        if self.fd is None:
            return
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()
        signal.set_wakeup_fd(self._previous_wakeup)
        for fd in (self.fd, self._write_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.fd = self._write_fd = None

    # -- the handler -----------------------------------------------------------------
    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGINT and self._mode != "turn":
            raise KeyboardInterrupt
        if signum == signal.SIGWINCH and self._mode != "turn" and self.on_resize is not None:
            self.on_resize()  # no event is being handled: nothing to wait for
            return
        self.received.append(signum)
        if signum in ENDING and self.termination is None:
            self.termination = signum

    def take(self) -> list[int]:
        """The signals received since the last call, in order (and the wakeup pipe emptied)."""
        if self.fd is not None:
            with contextlib.suppress(OSError):
                while os.read(self.fd, 512):
                    pass
        taken, self.received = self.received, []
        return taken

    def forget_interrupts(self) -> None:
        """Drop a Ctrl-C recorded after the last turn ended: it must not interrupt the next one."""
        self.received = [s for s in self.received if s != signal.SIGINT]

    # -- modes ---------------------------------------------------------------------
    @contextlib.contextmanager
    def _in(self, mode: str) -> Iterator[None]:
        previous, self._mode = self._mode, mode
        try:
            yield
        finally:
            self._mode = previous

    def turn(self) -> contextlib.AbstractContextManager[None]:
        """While the loop runs (a turn, the chat's prompt, the relay) and while the launch closes: every signal is
        only recorded."""
        return self._in("turn")
