"""The CLI's output as lines: bytes in, decoded lines out, a line too long to hold dropped and reported by its size.

Stdlib only and cheap to import, as :mod:`agentlaunch.launch.transport` (which reads the PTY into it) is: the entry
point spawns a CLI from there before anything heavier is loaded.
"""

from __future__ import annotations

MAX_LINE = 64 * 1024 * 1024  # a longer line is dropped (and reported), never held


class LongLineDropped:
    """A line longer than ``MAX_LINE`` that was dropped, by its size (a plain class: this module loads before the early
    start's spawn, without dataclasses or typing)."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LongLineDropped) and other.size == self.size

    def __hash__(self) -> int:
        return hash((LongLineDropped, self.size))

    def __repr__(self) -> str:
        return f"LongLineDropped(size={self.size})"


Line = str | LongLineDropped


class LineSplitter:
    """Bytes in, decoded lines out (line ends and a trailing CR removed); a line past MAX_LINE is dropped."""

    __slots__ = ("_buf", "_dropping")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._dropping = 0  # bytes of an over-long line skipped so far

    def feed(self, chunk: bytes) -> list[Line]:
        items: list[Line] = []
        start = 0
        while (nl := chunk.find(b"\n", start)) >= 0:
            piece = chunk[start:nl]
            start = nl + 1
            if self._dropping:
                items.append(LongLineDropped(self._dropping + len(piece)))
                self._dropping = 0
                continue
            self._buf += piece
            items.append(self._buf.decode("utf-8", "replace").rstrip("\r"))
            self._buf = bytearray()
        rest = chunk[start:]
        if self._dropping:
            self._dropping += len(rest)
        else:
            self._buf += rest
            if len(self._buf) > MAX_LINE:
                self._dropping = len(self._buf)
                self._buf = bytearray()
        return items

    def end(self) -> list[Line]:
        """What is left when the output ends: a last line without its newline."""
        if self._buf:
            line, self._buf = self._buf.decode("utf-8", "replace").rstrip("\r"), bytearray()
            return [line]
        if self._dropping:
            size, self._dropping = self._dropping, 0
            return [LongLineDropped(size)]
        return []
