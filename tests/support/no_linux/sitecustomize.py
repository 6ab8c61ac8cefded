"""Linux's own primitives taken away from a Python process, as on macOS: the no-Linux lane's proxy for a Mac.

Python runs this at its start when this folder is on ``PYTHONPATH`` (``tests/support/no_linux/lane.py`` puts it
there for every process a test of the lane starts, the ``python -m agentlaunch`` children and tmux's panes among
them). It removes what macOS does not have: ``select.epoll`` (before ``selectors`` is imported, so its
``DefaultSelector`` is a poll one; macOS's is kqueue), ``os.pidfd_open``, ``os.pipe2``; libc's ``inotify_*`` and
``prctl`` are not found through ctypes; and every read of ``/proc`` fails as a missing file does (``open``,
``os.open``, ``os.listdir``, ``os.scandir``, ``os.stat``, ``os.readlink``: pathlib goes through them too).
"""

from __future__ import annotations

import builtins
import io
import os
import select

TYPE_CHECKING = False  # typing costs ~10 ms at every Python start of the lane

if TYPE_CHECKING:
    from typing import Any

for _name in [n for n in dir(select) if n == "epoll" or n.startswith("EPOLL")]:
    delattr(select, _name)
for _name in ("pidfd_open", "pipe2"):
    if hasattr(os, _name):
        delattr(os, _name)


def _under_proc(path: Any) -> bool:
    if isinstance(path, int):
        return False
    try:
        text = os.fsdecode(os.fspath(path))
    except TypeError:
        return False
    return text == "/proc" or text.startswith("/proc/")


def _refusing(call: Any, first: int = 0) -> Any:
    def refused(*args: Any, **kwargs: Any) -> Any:
        if len(args) > first and _under_proc(args[first]):
            raise FileNotFoundError(2, "No such file or directory (no /proc: the no-Linux lane)", os.fsdecode(args[first]))
        return call(*args, **kwargs)

    refused.__wrapped__ = call  # type: ignore[attr-defined]
    return refused


builtins.open = io.open = _refusing(io.open)  # type: ignore[assignment]
for _name in ("open", "listdir", "scandir", "stat", "lstat", "readlink", "access"):
    setattr(os, _name, _refusing(getattr(os, _name)))


def _no_linux_symbols() -> None:
    import ctypes

    linux_only = ("prctl", "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch")
    lookup = ctypes.CDLL.__getattr__
    item = ctypes.CDLL.__getitem__

    def getattr_(self: ctypes.CDLL, name: str) -> Any:
        if name in linux_only:
            raise AttributeError(f"{name}: no such symbol (the no-Linux lane)")
        return lookup(self, name)

    def getitem(self: ctypes.CDLL, name: Any) -> Any:
        if name in linux_only:
            raise AttributeError(f"{name}: no such symbol (the no-Linux lane)")
        return item(self, name)

    ctypes.CDLL.__getattr__ = getattr_  # type: ignore[method-assign]
    ctypes.CDLL.__getitem__ = getitem  # type: ignore[method-assign]


_no_linux_symbols()


def _log_start() -> None:
    """This process's command line, appended to the lane's log when it names one (the lane checks an agentlaunch
    process did load the proxy)."""
    log = os.environ.get("AGENTLAUNCH_TEST_NO_LINUX_LOG")
    if log:
        import sys

        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, (" ".join(sys.orig_argv) + "\n").encode("utf-8", "replace"))
        finally:
            os.close(fd)


_log_start()
