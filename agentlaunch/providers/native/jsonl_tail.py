"""Following a JSON-lines file another program appends to, in bounded memory, whatever happens to it.

A :class:`JsonlTail` keeps its offset in the file and the bytes of a last line
that is not finished yet. Each :meth:`JsonlTail.read` takes what was appended
since, and copes with what a CLI's own file can do between two reads: not
exist yet (or never), be truncated (read again from the start), be replaced
by another file at the same path (a new inode: read it from the start), be
truncated and refilled in place to the same size or more (the bytes just
before the offset, or the file's first bytes, differ from those read: read it
from the start), hold
lines that are not JSON (skipped, counted), and hold a line far larger than
any event (not kept whole: its head and tail are handed to ``salvage``, which
may pull what it needs from them). It never raises on the file's content or
its absence, and never blocks (a FIFO at the path is refused).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentlaunch.providers.untrusted import loads

CHUNK = 1 << 16
MAX_LINE = 8 << 20
"""A line longer than this is not kept whole (a transcript line holding a huge tool input, say)."""
KEEP = 1 << 20
"""How much of an over-long line's head and tail is kept for :attr:`JsonlTail.salvage`."""
READ_BUDGET = 16 << 20
"""At most this much is read per call; the rest waits for the next (``more`` says so), so one read never stalls."""
MARK = 256
"""How many bytes at the file's start and just before the offset are compared at each read: a file rewritten in
place keeps its inode and may keep its size, so these are what tell it from the one read so far."""

Salvage = Callable[[bytes, bytes], Any]
"""Given an over-long line's head and tail, the value to use for it, or None to skip it."""


class JsonlTail:
    """The new complete lines of ``path`` as JSON values, one :meth:`read` after another."""

    def __init__(
        self,
        path: Path,
        *,
        start_at_end: bool = False,
        salvage: Salvage | None = None,
        max_line: int = MAX_LINE,
        keep: int = KEEP,
    ) -> None:
        self.path = path
        self.salvage = salvage
        self.max_line, self.keep = max_line, min(keep, max_line)
        self.offset = 0
        self.identity: tuple[int, int] | None = None
        self.more = False
        """The last read stopped at its budget: there is more to read now."""
        self.bad_lines = 0
        self.huge_lines = 0
        self.restarts = 0
        """Times the file was found truncated or replaced (read again from its start)."""
        self._partial = bytearray()
        self._huge_head: bytes | None = None  # set while inside an over-long line
        self._huge_tail = bytearray()
        self._head = b""  # the file's first bytes (up to MARK) as read
        self._before = b""  # the bytes just before ``offset`` (up to MARK) as read
        if start_at_end:
            self._skip_existing()

    def _skip_existing(self) -> None:
        with contextlib.suppress(OSError):
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            try:
                st = os.fstat(fd)
                if stat.S_ISREG(st.st_mode):
                    self.offset, self.identity = st.st_size, (st.st_dev, st.st_ino)
                    self._head = os.pread(fd, min(MARK, self.offset), 0)
                    start = max(self.offset - MARK, 0)
                    self._before = os.pread(fd, self.offset - start, start)
            finally:
                os.close(fd)

    def _rewritten(self, fd: int) -> bool:
        """Whether the bytes read so far are no longer where they were (the file was refilled in place)."""
        if self.offset == 0:
            return False
        head = os.pread(fd, len(self._head), 0)
        before = os.pread(fd, len(self._before), self.offset - len(self._before))
        return head != self._head or before != self._before

    def move_to(self, path: Path) -> None:
        """Follow another file from its start (the CLI said its file is elsewhere)."""
        if path != self.path:
            self.path = path
            self._restart(None)

    def _restart(self, identity: tuple[int, int] | None) -> None:
        self.offset, self.identity = 0, identity
        self._partial.clear()
        self._huge_head, self._huge_tail = None, bytearray()
        self._head = self._before = b""

    def read(self) -> list[Any]:
        """The JSON values of the lines completed since the last call, in order ([] when the file is absent)."""
        self.more = False
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return []
        values: list[Any] = []
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return []
            identity = (st.st_dev, st.st_ino)
            replaced = self.identity is not None and identity != self.identity
            if replaced or st.st_size < self.offset or self._rewritten(fd):
                self.restarts += 1
                self._restart(identity)
            self.identity = identity
            budget = READ_BUDGET
            while budget > 0:
                try:
                    chunk = os.pread(fd, min(CHUNK, budget), self.offset)
                except OSError:
                    break
                if not chunk:
                    break
                if len(self._head) < MARK:
                    self._head += chunk[: MARK - len(self._head)]
                self._before = (self._before + chunk[-MARK:])[-MARK:]
                self.offset += len(chunk)
                budget -= len(chunk)
                self._feed(chunk, values)
            else:
                self.more = True
        except OSError:
            pass
        finally:
            os.close(fd)
        return values

    def _feed(self, chunk: bytes, values: list[Any]) -> None:
        start = 0
        while start < len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            self._add(piece)
            if end < 0:
                return
            self._line_done(values)
            start = end + 1

    def _add(self, piece: bytes) -> None:
        if self._huge_head is not None:
            self._huge_tail += piece
            if len(self._huge_tail) > self.keep:
                del self._huge_tail[: len(self._huge_tail) - self.keep]
            return
        self._partial += piece
        if len(self._partial) > self.max_line:
            # Too long to keep whole: keep its head and (from now on) its tail only.
            self._huge_head = bytes(self._partial[: self.keep])
            self._huge_tail = bytearray(self._partial[-self.keep :])
            self._partial = bytearray()

    def _line_done(self, values: list[Any]) -> None:
        if self._huge_head is not None:
            head, tail = self._huge_head, bytes(self._huge_tail)
            self._huge_head, self._huge_tail = None, bytearray()
            self.huge_lines += 1
            value = self.salvage(head, tail) if self.salvage else None
            if value is not None:
                values.append(value)
            return
        line = bytes(self._partial)
        self._partial.clear()
        if not line.strip():
            return
        try:
            values.append(loads(line.decode("utf-8", "replace")))
        except ValueError:
            self.bad_lines += 1
