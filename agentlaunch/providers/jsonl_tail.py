"""Following a JSON-lines file another program appends to (Codex's rollout, Gemini's session file).

A native launch reads the CLI's own log while the CLI writes it: the file
may not exist yet, its last line may be half written, it may be truncated or
replaced by a new file at the same path, and a line may be huge (a tool's
whole output) or of a shape no version of agentlaunch knew. :class:`JsonlTail`
takes what is new since the last call and never raises on any of that:

- it keeps a byte offset and the partial last line (bounded by ``max_line``);
- a file that shrank, or a different file (inode) at the path, is read again
  from its start (the callers key records by id, so nothing is counted twice);
- a line longer than ``max_line`` bytes is skipped whole, without holding it;
- a line without any of the ``markers`` is not parsed at all (a cheap filter,
  as :func:`~agentlaunch.providers.base.json_lines` does for whole files);
- a line that is not a JSON object is skipped.

Memory stays bounded by ``max_line`` plus one read chunk, whatever the file holds.
This module uses the standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentlaunch.providers.values import loads

CHUNK = 1 << 16
MAX_LINE = 8 << 20
"""Lines longer than this (8 MiB) are skipped: no record agentlaunch reads is anywhere near it."""
MAX_READ = 64 << 20
"""At most this much is read per call, so one call never stalls the relay on a huge backlog."""


class JsonlTail:
    """The JSON objects appended to ``path`` since the last :meth:`read`."""

    def __init__(self, path: Path, markers: Iterable[str] = (), max_line: int = MAX_LINE, start: int = 0) -> None:
        self.path = path
        self.markers = tuple(m.encode() for m in markers)
        self.max_line = max_line
        self.offset = start
        self._inode: tuple[int, int] | None = None
        self._partial = bytearray()
        self._skipping = False  # inside a line longer than max_line: drop bytes up to its newline
        self.restarts = 0
        """How often the file was found truncated or replaced (read again from its start)."""

    def read(self) -> list[dict[str, Any]]:
        """The complete new lines that parse to JSON objects, in file order ([] when the file is missing)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            return []
        try:
            st = os.fstat(fd)
            identity = (st.st_dev, st.st_ino)
            if self._inode is not None and (identity != self._inode or st.st_size < self.offset):
                self._restart()
            self._inode = identity
            if st.st_size < self.offset:  # a start offset past the end (the file was replaced before we opened it)
                self._restart()
            return self._read_from(fd)
        except OSError:
            return []
        finally:
            os.close(fd)

    def _restart(self) -> None:
        self.offset = 0
        self._partial.clear()
        self._skipping = False
        self.restarts += 1

    def _read_from(self, fd: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        budget = MAX_READ
        while budget > 0:
            data = os.pread(fd, min(CHUNK, budget), self.offset)
            if not data:
                break
            self.offset += len(data)
            budget -= len(data)
            self._feed(data, out)
        return out

    def _feed(self, data: bytes, out: list[dict[str, Any]]) -> None:
        start = 0
        while True:
            newline = data.find(b"\n", start)
            if newline < 0:
                rest = data[start:]
                if not self._skipping:
                    if len(self._partial) + len(rest) > self.max_line:
                        self._partial.clear()
                        self._skipping = True
                    else:
                        self._partial += rest
                return
            piece = data[start:newline]
            start = newline + 1
            if self._skipping:
                self._skipping = False
                continue
            if self._partial:
                if len(self._partial) + len(piece) > self.max_line:
                    self._partial.clear()
                    continue
                line = bytes(self._partial) + piece
                self._partial.clear()
            else:
                if len(piece) > self.max_line:
                    continue
                line = piece
            parsed = self._parse(line)
            if parsed is not None:
                out.append(parsed)

    def _parse(self, line: bytes) -> dict[str, Any] | None:
        if self.markers and not any(m in line for m in self.markers):
            return None
        try:
            value = loads(line.decode("utf-8", errors="replace"))
        except (ValueError, RecursionError):
            return None
        return value if isinstance(value, dict) else None
