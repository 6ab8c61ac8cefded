"""Linux's own primitives, in the one module that touches them, each with the portable fallback that does its job.

agentlaunch runs where its users are, macOS included, which has none of these. Everything else of agentlaunch asks
here and is handed a value it can use on any POSIX system (``tests/test_platform_support.py`` fails on a use of
one of them anywhere else; the no-Linux lane, ``tests/support/no_linux_lane.py``, runs launches with them removed):

- ``/proc`` (a process's state, parent, group and session; its children; the umask): :func:`proc_text`,
  :func:`proc_names` raise ``OSError`` where there is none, as a missing file does; each caller has its answer for
  that (a pid's start time unknown, the launch's process group alone ended, the umask read by setting it back);
  :func:`process_state` asks ``ps`` instead (a zombie is no running process: tmux may reap a pane's late).
- ``pidfd_open`` (a descriptor readable when a process exits): :func:`pidfd` gives None where there is none;
  the launch's loop then learns of its CLI's exit from SIGCHLD, through the ``signal.set_wakeup_fd`` pipe the loop
  already waits on (:mod:`agentlaunch.launch.signals`), and asks ``Popen.poll``. Chosen over ``waitpid`` on a
  thread with a self-pipe: the pipe and the handler are there anyway (SIGINT, SIGTERM, SIGWINCH), no thread reads
  for the launch, and a thread's ``waitpid`` would race ``Popen``'s own reaping of the same child.
- inotify (a descriptor readable when files change in a folder): :func:`inotify_open` gives None where there is
  none; each watcher then looks again on a bounded timer (the deck and the fleet's stream: the folder's mtime once
  a second; a native source: its files every :data:`~agentlaunch.providers.native.gemini.POLL` or so).
- ``prctl``: :func:`become_child_subreaper` (orphans of the CLI come back to agentlaunch) gives False and
  :func:`parent_death_signal` (the app-server started early ends with agentlaunch) gives None where there is none:
  the reaper then ends the CLI's process group and session (the CLIs start in a session of their own), and
  ``docs/macos.md`` says what is weaker.
- ``epoll``: nothing of agentlaunch needs it (``selectors.DefaultSelector`` is epoll on Linux, kqueue on macOS);
  a source with several descriptors hands each to the loop (:meth:`NativeSource.filenos`).

Cheap to import (the entry point's early start reads it): ctypes is imported only when a primitive is asked for.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ctypes

SOCKET_PATH_MAX = 103
"""The longest Unix socket path agentlaunch binds or connects to, on every platform: macOS's (and the BSDs')
``sun_path`` holds 104 bytes with its NUL, Linux's 108. Every socket agentlaunch makes is in its runtime folder
(``runtime_dirs.make_for_launch``: under a short ``$XDG_RUNTIME_DIR``, else ``/tmp``, never the long ``$TMPDIR`` of
macOS) or the ssh connections' folder (``hosts/ssh.py``, the same rule), so none comes near it."""
PROC = "/proc"
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
LINUX = sys.platform.startswith("linux")


def proc_path(*parts: int | str) -> str:
    """The path of ``/proc/PARTS...`` (for an error or an existence check; read with :func:`proc_text`)."""
    return "/".join((PROC, *map(str, parts)))


def proc_text(*parts: int | str) -> str:
    """The text of ``/proc/PARTS...`` (``proc_text(pid, "stat")``), read with plain system calls (no pathlib, no text
    wrapper: the reaper reads a few dozen at each turn's end); ``OSError`` as ``open`` raises it, and where there is
    no ``/proc`` (macOS) ``FileNotFoundError``. Not ``fsutil.read_regular``: its guards (a FIFO swapped in, a size
    limit) do not apply to ``/proc``, and its two stats made a tree walk 1.5 ms, not 0.9."""
    fd = os.open(proc_path(*parts), os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


def proc_names(*parts: int | str) -> list[str]:
    """The names in the ``/proc/PARTS...`` folder (``proc_names()``: every pid's, among others); ``OSError`` where it
    is missing, ``/proc`` itself included."""
    return os.listdir(proc_path(*parts))


def process_state(pid: int) -> str | None:
    """``pid``'s state letter (``R``, ``S``, ``Z`` for a zombie...): ``/proc``'s, else ``ps -o stat=`` (macOS; one
    process started, asked only there); None when neither tells (gone, or no ``ps``)."""
    try:
        stat = proc_text(pid, "stat")
    except OSError:
        pass
    else:
        fields = stat[stat.rfind(")") + 2 :].split()
        return fields[0] if fields else None
    import subprocess

    try:
        done = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()[:1] or None


def pidfd(pid: int) -> int | None:
    """A descriptor readable once ``pid`` exits (Linux 5.3+), or None: not Linux, an old kernel, or the process is
    gone. The caller closes it."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        fd: int = opener(pid)
    except OSError:
        return None
    return fd


def _libc_function(name: str) -> Any | None:
    """The C library's function ``name`` from this process's own symbols, or None where it has none."""
    if not LINUX:
        return None
    try:
        import ctypes

        return getattr(ctypes.CDLL(None, use_errno=True), name)
    except (OSError, AttributeError):
        return None


def become_child_subreaper() -> bool:
    """``prctl(PR_SET_CHILD_SUBREAPER)``: orphaned descendants become this process's children; False where it cannot."""
    prctl = _libc_function("prctl")
    return prctl is not None and prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def parent_death_signal(sig: int) -> Callable[[], None] | None:
    """A ``preexec_fn`` after which the child gets ``sig`` when this process's thread that started it ends, SIGKILL
    included (``PR_SET_PDEATHSIG``); None where there is no such thing. For a child started before any other thread
    runs (the entry point's early start): a forked child of a threaded process must not call into ctypes."""
    prctl = _libc_function("prctl")
    if prctl is None:
        return None
    parent = os.getpid()

    def set_signal() -> None:
        prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the signal was set
            os.kill(os.getpid(), sig)

    return set_signal


class Inotify:
    """An inotify instance: its descriptor and the two calls that add and remove a watch on it."""

    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self._libc = libc
        self.fd = fd

    def add(self, path: bytes, mask: int) -> int:
        """The watch descriptor of ``path`` for ``mask``'s events; negative when it cannot be watched."""
        wd: int = self._libc.inotify_add_watch(self.fd, path, mask)
        return wd

    def remove(self, wd: int) -> None:
        self._libc.inotify_rm_watch(self.fd, wd)


def inotify_open() -> Inotify | None:
    """A new non-blocking inotify instance, or None where there is none (not Linux, no libc symbol, no descriptor)."""
    if not LINUX:
        return None
    try:
        # The process's own symbols, libc's among them: `ctypes.util.find_library("c")` would run `ldconfig -p` and
        # import shutil, tempfile, bz2 and lzma, about 10 ms of a native launch's start (measured).
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        init = libc.inotify_init1
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
    except (OSError, AttributeError):
        return None
    fd = init(os.O_NONBLOCK | os.O_CLOEXEC)
    return Inotify(libc, fd) if fd >= 0 else None
