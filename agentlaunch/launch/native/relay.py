"""The provider CLI's own interface, relayed between the user's terminal and the CLI's PTY.

One loop (:class:`~agentlaunch.launch.loop.Loop`) waits on the user's terminal (keys to pass on), the PTY master
(the interface's output), the CLI's pidfd (its exit; SIGCHLD where there is none), the signal wakeup pipe (a
resize, SIGTERM, SIGHUP) and each structured source's descriptors and deadline
(:mod:`agentlaunch.launch.native.source_waits`). Nothing is read from the screen: keys go to the CLI as typed,
output goes to the terminal as written, but for the CLI's OSC 7501 probe and reports
(:mod:`~agentlaunch.launch.native.program_status`: answered, read, taken out). What agentlaunch adds (a bell) waits
for a point between two escape sequences (:class:`~agentlaunch.launch.native.terminal.ScreenModes`).

The relay ends when the CLI has exited and its output is read (or after :data:`~agentlaunch.launch.turn.EXIT_DRAIN`
seconds: a helper may hold the PTY open), or when agentlaunch is told to stop (SIGTERM, SIGHUP, the terminal gone).
The caller restores the terminal (:func:`~agentlaunch.launch.native.terminal.raw_terminal`) and ends the CLI.
"""

from __future__ import annotations

import os
import signal
from collections import deque
from collections.abc import Callable, Sequence
from functools import partial
from typing import Protocol

from agentlaunch.datarecord import datarecord
from agentlaunch.launch.loop import Loop, Timer
from agentlaunch.launch.native.program_status import PROBE, ProgramStatus
from agentlaunch.launch.native.source_waits import SourceWaits
from agentlaunch.launch.native.terminal import ScreenModes, write_all
from agentlaunch.launch.signals import ENDING, Signals
from agentlaunch.launch.transport import window_size
from agentlaunch.launch.turn import EXIT_DRAIN, EXIT_WAIT
from agentlaunch.providers.native.source import NativeItem, NativeSource

KEYS_HIGH_WATER = 256 << 10  # queued keys (a huge paste) above which the terminal is not read until the CLI takes them
INJECT_WAIT = 0.2  # seconds an added byte waits for a boundary in a busy output before it is dropped
TAIL_BYTES = 4096  # the CLI's last output kept, for its last words when it exits at once
BRACKETED_PASTE = 2004  # the private mode in which the CLI takes ESC[200~ … ESC[201~ as pasted text
PASTE_SETTLE = 0.3  # seconds between a typed prompt and its Enter: an interface that saw a paste takes Enter as its own key
ECHO_SETTLE = 0.1  # seconds between the CLI drawing a typed prompt and its Enter (Gemini 0.61 joins one within 40 ms)
ENTER_WAIT = 5.0  # seconds a typed prompt's Enter waits for the CLI to draw it (a CLI busy starting reads its keys late)
ENTER_LOOK = 0.05  # seconds between two looks for that drawing


class InterfaceChild(Protocol):
    """What the relay needs of the CLI process (:class:`~agentlaunch.launch.transport.Child` with ``terminal``)."""

    master: int
    pidfd: int | None
    eof: bool

    @property
    def pid(self) -> int: ...

    @property
    def keys_waiting(self) -> int: ...

    @property
    def keys_unread(self) -> int: ...

    def read_bytes(self) -> bytes: ...

    def send_keys(self, data: bytes) -> None: ...

    def flush_keys(self) -> None: ...

    def resize(self, cols: int, rows: int) -> None: ...

    def signal_group(self, sig: int) -> None: ...

    def poll(self) -> int | None: ...


class RelayHost(Protocol):
    """What the relay hands to the launch."""

    def on_items(self, items: list[NativeItem]) -> None:
        """What a structured source reported (events to meter, states)."""
        ...

    def on_source_error(self, source: NativeSource, error: Exception) -> None:
        """A source broke its promise never to raise; the relay goes on without it."""
        ...

    def on_child_signal(self) -> None:
        """SIGCHLD came: collect orphans that exited."""
        ...


@datarecord
class RelayResult:
    exit_code: int | None = None  # the CLI's, once it exited (negative: killed by that signal)
    terminated: int | None = None  # SIGTERM/SIGHUP (or the terminal hanging up) ended the relay
    tail: bytes = b""  # the CLI's last output


class Relay:
    """One run of a CLI's interface on the loop."""

    def __init__(
        self,
        loop: Loop,
        signals: Signals,
        child: InterfaceChild,
        host: RelayHost,
        *,
        tty_in: int,
        tty_out: int,
        sources: Sequence[NativeSource] = (),
        modes: ScreenModes | None = None,
        size: Callable[[], tuple[int, int]] | None = None,
        write: Callable[[int, bytes], None] = write_all,
        on_keys: Callable[[bytes], None] | None = None,
        status: ProgramStatus | None = None,
    ) -> None:
        self.loop, self.signals, self.child, self.host = loop, signals, child, host
        self.tty_in, self.tty_out = tty_in, tty_out
        self.sources = list(sources)
        self.waits = SourceWaits(loop, self.sources, host.on_items, host.on_source_error)
        self.modes = modes or ScreenModes()
        self.size = size or (lambda: window_size(tty_out))
        self.write = write
        self.on_keys = on_keys  # told the person's keys as they go to the CLI (never agentlaunch's own typing)
        self.status = status  # OSC 7501: the CLI's probe answered, its reports read and taken out of the output
        if status is not None:
            status.answer_cli = self.press
        self.result = RelayResult()
        self._tail: deque[bytes] = deque()
        self._tail_size = 0
        self._reading_keys = False
        self._writing_keys = False
        self._exited = False
        self._done = False
        self._timers: list[Timer] = []
        self._pending: deque[tuple[float, bytes]] = deque()  # added bytes waiting for a boundary
        self.last_output = 0.0  # the loop clock's time of the CLI's latest output (a sent command's output settles)

    # -- running -----------------------------------------------------------------------
    def run(self) -> RelayResult:
        """Relay until the CLI is gone or agentlaunch is told to stop."""
        loop, child = self.loop, self.child
        loop.add_reader(child.master, self._on_output)
        if child.pidfd is not None:
            loop.add_reader(child.pidfd, self._on_exit)
        if self.signals.fd is not None:
            loop.add_reader(self.signals.fd, self._on_signals)
        self._listen_keys(True)
        self.waits.start()
        try:
            with self.signals.turn():  # every signal is only recorded: the loop acts on it
                self.child.resize(*self.size())  # the size now: it may have changed while the CLI started
                if self.status is not None and self.status.ask_outer:
                    self.write(self.tty_out, PROBE)  # ask the outer terminal as the CLI does: its answer comes as keys
                self._on_signals()
                if not self._done:
                    loop.run()
        finally:
            self.waits.stop()
            for fd in (child.master, child.pidfd, self.signals.fd):
                if fd is not None:
                    loop.remove_reader(fd)
            self._listen_keys(False)
            if self._writing_keys:
                loop.remove_writer(child.master)
            for timer in self._timers:
                timer.cancel()
        self.result.tail = b"".join(self._tail)
        return self.result

    def _finish(self) -> None:
        self._done = True
        self.loop.stop()

    def stop(self) -> None:
        """End the relay now (a budget stopped the session); the launch's close ends the CLI."""
        self._finish()

    def _after(self, delay: float, callback: Callable[[], None]) -> None:
        self._timers.append(self.loop.call_later(delay, callback))

    # -- keys: the user's terminal to the CLI ------------------------------------------------
    def _listen_keys(self, on: bool) -> None:
        if on and not self._reading_keys:
            self.loop.add_reader(self.tty_in, self._on_keys)
        elif not on and self._reading_keys:
            self.loop.remove_reader(self.tty_in)
        self._reading_keys = on

    def _on_keys(self) -> None:
        try:
            data = os.read(self.tty_in, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the terminal hung up (raw mode reads 0 bytes only then)
            self._listen_keys(False)
            if self.result.terminated is None:
                self.result.terminated = signal.SIGHUP
            self._finish()
            return
        data = self.status.keys(data) if self.status is not None else data
        if self.on_keys is not None:
            self.on_keys(data)
        self.press(data)

    def press(self, data: bytes) -> None:
        """Type ``data`` into the CLI's interface as keys, among the person's (an answer to the prompt it shows)."""
        if self._done:
            return
        self.child.send_keys(data)
        self._want_key_writes()

    @property
    def takes_paste(self) -> bool:
        """The CLI switched bracketed paste on: a prompt of many lines reaches it as one text."""
        return BRACKETED_PASTE in self.modes.on

    def type_prompt(self, text: str) -> None:
        """Type ``text`` into the CLI's interface as a paste, then Enter (a prompt from ``agentlaunch send``), among
        the person's own keys, in order: what they were typing stays in front of it."""
        data = text.encode("utf-8")
        self.press(b"\x1b[200~" + data + b"\x1b[201~" if self.takes_paste else data)
        typed_at = self.loop.clock.monotonic()
        self._after(PASTE_SETTLE, partial(self._enter_once_drawn, typed_at))

    def _enter_once_drawn(self, typed_at: float, drawn_at: float | None = None) -> None:
        """Enter, ``ECHO_SETTLE`` after the CLI took the typed keys and drew (or after ``ENTER_WAIT`` in any case).

        A CLI busy elsewhere reads its keys late: a paste and an Enter sent a fixed time after it reach it in one
        read, and Gemini 0.61 takes such an Enter as part of the paste (4 of 9 sends after a restart under load).
        Output alone does not say the paste was read: its terminal must hold none of it any more.
        """
        now = self.loop.clock.monotonic()
        child = self.child
        if drawn_at is None and child.keys_waiting == 0 and self.last_output > typed_at and child.keys_unread == 0:
            drawn_at = now
        if now - typed_at < ENTER_WAIT and (drawn_at is None or now - drawn_at < ECHO_SETTLE):
            self._after(ENTER_LOOK, partial(self._enter_once_drawn, typed_at, drawn_at))
            return
        self.press(b"\r")

    def _want_key_writes(self) -> None:
        waiting = self.child.keys_waiting
        if waiting and not self._writing_keys:
            self.loop.add_writer(self.child.master, self._on_master_writable)
            self._writing_keys = True
        elif not waiting and self._writing_keys:
            self.loop.remove_writer(self.child.master)
            self._writing_keys = False
        # A paste larger than the CLI takes: stop reading the terminal until it has caught up.
        self._listen_keys(waiting < KEYS_HIGH_WATER and not self._done)

    def _on_master_writable(self) -> None:
        self.child.flush_keys()
        if self.child.eof:
            self.loop.remove_writer(self.child.master)
            self._writing_keys = False
            return
        self._want_key_writes()

    # -- output: the CLI to the user's terminal -----------------------------------------------
    def _on_output(self) -> None:
        chunk = self.child.read_bytes()
        if chunk:
            self.last_output = self.loop.clock.monotonic()
            if self.status is not None:
                chunk = self.status.output(chunk)
            self.write(self.tty_out, chunk)
            self.modes.feed(chunk)
            self._keep_tail(chunk)
            if self._pending and self.modes.at_boundary:
                self._flush_pending()
            return
        if self.child.eof:
            self.loop.remove_reader(self.child.master)  # a master at EOF stays readable: stop listening
            if self._writing_keys:
                self.loop.remove_writer(self.child.master)
                self._writing_keys = False
            if self._exited or self.child.poll() is not None:
                self._exited = True
                self._finish()
            else:
                # Output over, process still there: give it time to exit (the pidfd wakes the loop).
                self._after(EXIT_WAIT, self._finish)

    def _keep_tail(self, chunk: bytes) -> None:
        self._tail.append(chunk[-TAIL_BYTES:])
        self._tail_size += len(self._tail[-1])
        while self._tail_size - len(self._tail[0]) >= TAIL_BYTES:
            self._tail_size -= len(self._tail.popleft())

    def inject(self, data: bytes) -> None:
        """Show ``data`` (a bell, a title) at the next point between two of the CLI's escape sequences."""
        if self._done:
            return
        if self.modes.at_boundary and not self._pending:
            self.write(self.tty_out, data)
            return
        self._pending.append((self.loop.clock.monotonic() + INJECT_WAIT, data))
        self._after(INJECT_WAIT, self._expire_pending)

    def _flush_pending(self) -> None:
        while self._pending:
            self.write(self.tty_out, self._pending.popleft()[1])

    def _expire_pending(self) -> None:
        now = self.loop.clock.monotonic()
        while self._pending and self._pending[0][0] <= now:
            self._pending.popleft()  # the output never paused between sequences: better lost than garbling it

    # -- the CLI's exit ---------------------------------------------------------------------
    def _on_exit(self) -> None:
        if self._exited:
            return
        self._exited = True
        if self.child.pidfd is not None:
            self.loop.remove_reader(self.child.pidfd)
        self.result.exit_code = self.child.poll()
        if self.child.eof:
            self._finish()
            return
        # Read what it wrote last; a helper it started may hold the PTY open, so only briefly.
        self._after(EXIT_DRAIN, self._finish)

    # -- signals ------------------------------------------------------------------------------
    def _on_signals(self) -> None:
        for sig in self.signals.take():
            if self._done:
                return
            if sig in ENDING:
                self.result.terminated = sig
                self._finish()
            elif sig == signal.SIGWINCH:
                self.child.resize(*self.size())
            elif sig == signal.SIGINT:
                # Not a key (raw mode sends Ctrl-C as a byte): someone signalled agentlaunch; the CLI gets it.
                self.child.signal_group(signal.SIGINT)
            elif sig == signal.SIGCHLD:
                if self.child.pidfd is None and self.child.poll() is not None:
                    self._on_exit()
                self.host.on_child_signal()

    def read_sources(self, *, arm: bool = True) -> None:
        """Read every source at once (what a turn's last report may still hold); ``arm``: wait for them as before."""
        self.waits.read_all(arm=arm)
