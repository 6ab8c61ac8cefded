"""The person at the line chat: their lines, read from the terminal on the launch's loop, and the questions put to them.

The terminal stays in canonical mode: the kernel edits the line (erase, kill,
Ctrl-W) and hands over whole lines, so a :class:`LineInput` is one more loop
reader and nothing blocks in ``input()``. Ctrl-C stays a signal (the loop
reads it from the signal pipe); Ctrl-D at the start of a line is a read of no
bytes, the end of input. When stdin is a pipe, the same reader splits what
arrives into lines.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TextIO

from agentlaunch.datarecord import datarecord
from agentlaunch.launch.loop import Loop, Timer

LineCallback = Callable[[bytes | None], None]


class LineInput:
    """The person's lines from ``fd`` (their terminal, or a pipe), one at a time, on a loop."""

    def __init__(self, fd: int = 0, out: TextIO | None = None) -> None:
        self.fd = fd
        self.out = out or sys.stdout
        self._buffer = bytearray()
        self._ended = False  # a read of no bytes not handed over yet (a terminal's Ctrl-D, a pipe's end)
        self._loop: Loop | None = None
        self._callback: LineCallback | None = None
        self._soon: Timer | None = None

    def write(self, text: str) -> None:
        """Show ``text`` (a prompt, a question) where the person types."""
        self.out.write(text)
        self.out.flush()

    def next_line(self, loop: Loop, callback: LineCallback) -> None:
        """Call ``callback`` once, on ``loop``, with the next line (no newline), or None at the end of input."""
        self.cancel()
        self._loop, self._callback = loop, callback
        if self._ready():  # a pipe may have brought several lines in one read
            self._soon = loop.call_later(0, self._deliver)
        else:
            loop.add_reader(self.fd, self._on_readable)

    def cancel(self) -> None:
        """Stop waiting for a line; what was read stays for the next :meth:`next_line`."""
        if self._soon is not None:
            self._soon.cancel()
            self._soon = None
        if self._loop is not None:
            self._loop.remove_reader(self.fd)
        self._loop = self._callback = None

    def _ready(self) -> bool:
        return self._ended or b"\n" in self._buffer

    def _on_readable(self) -> None:
        # Readable means a whole line (canonical mode) or data (a pipe): this read does not block.
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return
        except OSError:  # the terminal went away: as the end of input
            data = b""
        if data:
            self._buffer += data
        else:
            self._ended = True
        if self._ready():
            self._deliver()

    def _deliver(self) -> None:
        callback = self._callback
        self.cancel()
        if callback is not None:
            callback(self._take())

    def _take(self) -> bytes | None:
        line, newline, rest = bytes(self._buffer).partition(b"\n")
        if newline:
            self._buffer = bytearray(rest)
            return line
        # The end of input: what was typed before it is a last line (as input() returns it), then the end.
        self._ended = False
        self._buffer.clear()
        return line if line else None


@datarecord
class Question:
    """Something the person is asked during a turn (:meth:`~agentlaunch.launch.turn.Turn.ask`).

    ``parse`` turns a line into the answer, None to ask again; ``answered`` gets the answer once, or
    ``default`` when the person presses Ctrl-C or ends the input, or the turn ends first.
    """

    input: LineInput
    prompt: str
    parse: Callable[[str], str | None]
    answered: Callable[[str], None]
    default: str
