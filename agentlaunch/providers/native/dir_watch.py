"""A descriptor that becomes readable when files change in a few folders (Linux inotify, through ctypes).

Why: Gemini CLI 0.61 offers a native launch no signal agentlaunch can receive
without changing the user's settings (its hooks are read only from settings
files, and the system layers that would merge over the user's file must be
owned by root; see :mod:`agentlaunch.providers.native.gemini`). Its session
file is the only source, so the relay needs to be woken when that file
changes: inotify gives a descriptor the relay loop waits on like any other,
so the launch reads the file when Gemini writes it and sits idle otherwise.
Where inotify is missing (not Linux, no libc symbol, watch limit reached)
:func:`open_watch` returns None and the caller reads on a timer instead.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from pathlib import Path

IN_MODIFY = 0x002
IN_CLOSE_WRITE = 0x008
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_MOVED_FROM = 0x040
IN_DELETE = 0x200
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC
MASK = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE
GONE = IN_MOVED_FROM | IN_DELETE  # files removed too (the deck: a session's record goes when it ends)


class DirWatch:
    """An inotify descriptor watching folders for created, written and moved-in files."""

    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self._libc = libc
        self.fd = fd
        self.watched: set[Path] = set()

    def watch(self, folder: Path, mask: int = MASK) -> bool:
        """Watch ``folder`` (once) for ``mask``'s events; False when it does not exist or cannot be watched."""
        if folder in self.watched:
            return True
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(folder), mask)
        if wd < 0:
            return False
        self.watched.add(folder)
        return True

    def drain(self) -> bool:
        """Read what is pending (the events only wake the caller); True when there was something."""
        got = False
        while True:
            try:
                data = os.read(self.fd, 65536)
            except (BlockingIOError, InterruptedError):
                return got
            except OSError:
                return got
            if not data:
                return got
            got = True

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


def open_watch() -> DirWatch | None:
    """A new :class:`DirWatch`, or None where inotify is not available."""
    try:
        # The process's own symbols, libc's among them: `ctypes.util.find_library("c")` would run `ldconfig -p` and
        # import shutil, tempfile, bz2 and lzma, about 10 ms of a native launch's start (measured).
        libc = ctypes.CDLL(None, use_errno=True)
        init = libc.inotify_init1
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    except (OSError, AttributeError):
        return None
    fd = init(IN_NONBLOCK | IN_CLOEXEC)
    if fd < 0:
        return None
    return DirWatch(libc, fd)
