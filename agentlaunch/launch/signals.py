"""Signals as loop events: the handlers only record, a wakeup pipe wakes the loop.

:class:`Signals` installs a handler for SIGINT, SIGTERM, SIGHUP, SIGWINCH and
SIGCHLD that appends the signal's number to a list, and points
``signal.set_wakeup_fd`` at a pipe the loop reads. So a signal never raises
in the middle of handling an event; the loop takes the recorded signals and
acts on them in order (interrupt the turn, end the launch, resize the CLI's
terminal, look at the CLI's exit).

Two moments are not loop moments, and keep their familiar behaviour:

- while agentlaunch waits for the person (the chat's prompt, a permission
  question: :meth:`Signals.person_waiting`), Ctrl-C raises KeyboardInterrupt
  in ``input()`` and SIGTERM/SIGHUP raise :class:`Terminated` (recorded too);
- outside a turn (starting, between turns) Ctrl-C raises KeyboardInterrupt,
  while SIGTERM/SIGHUP are recorded and end the launch at its next turn or prompt.

A resize (SIGWINCH) outside a turn is passed on at once (``on_resize``): no
loop runs then, and the CLI should not wait for the next turn to learn it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

WATCHED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGWINCH, signal.SIGCHLD)
ENDING = (signal.SIGTERM, signal.SIGHUP)
NUDGE = 0.2  # seconds between two wakeups of the chat's prompt once its CLI has exited
SEND_NUDGE_FOR = 2.0  # seconds a sent prompt keeps waking the chat's prompt; later, the chat finds it at its next prompt


class Terminated(BaseException):
    """agentlaunch itself got SIGTERM or SIGHUP while waiting for the person."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class CliExited(BaseException):
    """The provider CLI exited while agentlaunch waited for the person at the chat's prompt."""


class PromptArrived(BaseException):
    """A prompt from ``agentlaunch send`` arrived while the chat's prompt waited for the person."""


class Signals:
    """The launch's signal handlers and wakeup pipe (inert off the main thread, where Python allows no handlers)."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.termination: int | None = None  # the first SIGTERM/SIGHUP: the launch ends with 128 + it
        self.fd: int | None = None  # the wakeup pipe's read end, for the loop
        self._write_fd: int | None = None
        self._previous: dict[int, Any] = {}
        self._previous_wakeup = -1
        self._mode = "idle"  # idle · turn · person
        self.on_resize: Callable[[], None] | None = None  # SIGWINCH outside a turn
        self.cli_gone = False  # the watched CLI has exited (set by the watch_cli thread)
        self._watching = False  # the chat's prompt: the CLI's exit ends it (person_waiting)
        self._cli_exit_seen = False  # the chat has learned it (the watcher stops waking it)
        self.send_waiting = False  # a prompt from agentlaunch send waits (set by the control thread)
        self._takes_sends = False  # the chat's prompt: a sent prompt ends it (person_waiting)

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
        if signum == signal.SIGCHLD and self._mode == "person" and self._watching and self.cli_gone:
            self._cli_exit_seen = True
            raise CliExited  # a CLI that died at the prompt would otherwise be found only at the next turn
        if signum == signal.SIGCHLD and self._mode == "person" and self._takes_sends and self.send_waiting:
            self.send_waiting = False
            raise PromptArrived
        if signum == signal.SIGWINCH and self._mode != "turn" and self.on_resize is not None:
            self.on_resize()  # no event is being handled: nothing to wait for
            return
        self.received.append(signum)
        if signum in ENDING:
            if self.termination is None:
                self.termination = signum
            if self._mode == "person":
                raise Terminated(signum)

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
        """While a turn's loop runs (and while the launch closes): every signal is only recorded."""
        return self._in("turn")

    @contextlib.contextmanager
    def person_waiting(self, watch_cli: bool = False, takes_sends: bool = False) -> Iterator[None]:
        """While ``input()`` waits for the person: Ctrl-C raises KeyboardInterrupt, SIGTERM/SIGHUP Terminated.

        With ``watch_cli`` (the chat's prompt), the exit of the CLI given to :meth:`watch_cli` raises
        :class:`CliExited`, also when it happened before the prompt came up. With ``takes_sends``, a prompt
        from ``agentlaunch send`` (:meth:`send_arrived`) raises :class:`PromptArrived`.
        """
        if self.termination is not None and self.fd is not None:
            raise Terminated(self.termination)
        if watch_cli and self.cli_gone:
            self._cli_exit_seen = True
            raise CliExited
        previous, self._watching = self._watching, watch_cli
        previous_sends, self._takes_sends = self._takes_sends, takes_sends
        try:
            with self._in("person"):
                if watch_cli and self.cli_gone:  # it ended while the mode changed: its wakeup found another mode
                    self._cli_exit_seen = True
                    raise CliExited
                if takes_sends and self.send_waiting:
                    self.send_waiting = False
                    raise PromptArrived
                yield
        finally:
            self._watching, self._takes_sends = previous, previous_sends

    def send_arrived(self) -> None:
        """From the control thread: a sent prompt waits; wake the chat's prompt until it has seen it.

        Again and again, as :meth:`watch_cli` does: a signal that lands while ``input()`` is between two system
        calls only trips Python's flag. Not forever: a chat in a turn finds the prompt at its next prompt.
        """
        self.send_waiting = True
        main = threading.main_thread().ident
        if main is None:
            return
        until = time.monotonic() + SEND_NUDGE_FOR
        while self.send_waiting and self.fd is not None and time.monotonic() < until:
            if self._mode == "person" and self._takes_sends:
                with contextlib.suppress(OSError, ProcessLookupError):
                    signal.pthread_kill(main, signal.SIGCHLD)
            time.sleep(NUDGE / 4)

    def watch_cli(self, pid: int) -> None:
        """Watch our child ``pid`` from a thread: its exit sets :attr:`cli_gone` and wakes the main thread.

        A thread, not the SIGCHLD handler: a handler that calls into C (``waitid``, Popen's ``poll``) can be
        interrupted there by SIGTERM's handler, which leaves an error set (or Popen's wait lock held).
        ``WNOWAIT`` looks without reaping: the launch's close still collects the CLI's exit code.
        """
        if threading.current_thread() is not threading.main_thread():
            return
        main = threading.main_thread().ident
        assert main is not None

        def wait() -> None:
            with contextlib.suppress(OSError):  # ECHILD: reaped already, so gone as well
                os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
            self.cli_gone = True
            # After the flag, so the handler sees it. Again until the chat has ended: a signal that lands while
            # readline is between two system calls only trips Python's flag, and readline's select() sleeps on.
            while not self._cli_exit_seen and self.fd is not None:
                with contextlib.suppress(OSError, ProcessLookupError):
                    signal.pthread_kill(main, signal.SIGCHLD)
                time.sleep(NUDGE)

        threading.Thread(target=wait, name=f"watch-cli-{pid}", daemon=True).start()
