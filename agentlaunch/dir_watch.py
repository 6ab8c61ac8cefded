"""A descriptor that becomes readable when files change in a few folders (Linux inotify, through
:mod:`agentlaunch.platform_support`).

Why: Gemini CLI 0.61 offers a native launch no signal agentlaunch can receive
without changing the user's settings (its hooks are read only from settings
files, and the system layers that would merge over the user's file must be
owned by root; see :mod:`agentlaunch.providers.native.gemini`). Its session
file is the only source, so the relay needs to be woken when that file
changes: inotify gives a descriptor the relay loop waits on like any other,
so the launch reads the file when Gemini writes it and sits idle otherwise.
Where inotify is missing (not Linux: macOS; no libc symbol, watch limit reached)
:func:`open_watch` returns None and the caller reads on a bounded timer instead.
"""

from __future__ import annotations

import contextlib
import os
import struct
from pathlib import Path

from agentlaunch.platform_support import Inotify, inotify_open

IN_MODIFY = 0x002
IN_CLOSE_WRITE = 0x008
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_MOVED_FROM = 0x040
IN_DELETE = 0x200
IN_Q_OVERFLOW = 0x4000  # the kernel's queue was full: events were lost
IN_IGNORED = 0x8000  # the watch is gone (its file or folder was removed)
MASK = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE
GONE = IN_MOVED_FROM | IN_DELETE  # files removed too (the deck: a session's record goes when it ends)
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then len bytes of name


class DirWatch:
    """An inotify descriptor watching folders (or files) for created, written and moved-in files."""

    def __init__(self, inotify: Inotify) -> None:
        self._inotify = inotify
        self.fd = inotify.fd
        self.watched: dict[Path, int] = {}  # path -> its watch descriptor

    def watch(self, folder: Path, mask: int = MASK, *, again: bool = False) -> bool:
        """Watch ``folder`` (once; ``again``: anew, as a replaced file is a new inode) for ``mask``'s events.

        False when it does not exist or cannot be watched. A file can be watched too: its own writes, no one else's.
        """
        if folder in self.watched and not again:
            return True
        wd = self._inotify.add(os.fsencode(folder), mask)
        if wd < 0:
            return False
        old = self.watched.get(folder)
        if old is not None and old != wd:
            self._inotify.remove(old)  # the inode it named before (moved away, still there)
        self.watched[folder] = wd
        return True

    def unwatch(self, path: Path) -> None:
        """Watch ``path`` no more (nothing when it is not watched)."""
        wd = self.watched.pop(path, None)
        if wd is not None:
            self._inotify.remove(wd)

    def drain(self) -> bool:
        """Read what is pending (the events only wake the caller); True when there was something."""
        return bool(self._pending())

    def events(self) -> tuple[bool, list[tuple[Path | None, str, int]]]:
        """Whether anything was pending, and what happened since the last call: the path watched, the name of the
        file in it ("" for the path itself), and the event's mask. None for the path: the kernel's queue overflowed
        (events were lost). A watch that is gone (``IN_IGNORED``) is forgotten, so that :meth:`watch` adds it
        again; events of a watch removed (:meth:`unwatch`, the kernel's last word on it) are left out."""
        data = self._pending()
        by_wd = {wd: path for path, wd in self.watched.items()}
        found: list[tuple[Path | None, str, int]] = []
        at = 0
        while at + _EVENT.size <= len(data):
            wd, mask, _cookie, size = _EVENT.unpack_from(data, at)
            name = data[at + _EVENT.size : at + _EVENT.size + size].split(b"\0", 1)[0]
            at += _EVENT.size + size
            if mask & IN_Q_OVERFLOW:
                found.append((None, "", mask))
            elif wd in by_wd:
                found.append((by_wd[wd], os.fsdecode(name), mask))
                if mask & IN_IGNORED:
                    self.watched.pop(by_wd.pop(wd), None)
        return bool(data), found

    def _pending(self) -> bytes:
        chunks: list[bytes] = []
        while True:
            try:
                data = os.read(self.fd, 65536)
            except OSError:  # BlockingIOError: nothing more; InterruptedError; a closed descriptor
                break
            if not data:
                break
            chunks.append(data)
        return b"".join(chunks)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


def open_watch() -> DirWatch | None:
    """A new :class:`DirWatch`, or None where inotify is not available."""
    inotify = inotify_open()
    return DirWatch(inotify) if inotify is not None else None
