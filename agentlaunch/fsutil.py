"""agentlaunch's file helpers: bounded reads of what others wrote, atomic writes, caches kept small.

``Path.read_bytes`` on a FIFO waits for a writer forever, on ``/dev/zero``
reads until memory runs out, and on a 200 MB file reads it all. Every file
agentlaunch reads that a person or another program wrote (definitions, status
records, the delivery ledger, its own caches) goes through
:func:`read_regular` instead. Every file it writes goes through
:func:`write_atomic`; the caches that gain a file per key are trimmed with
:func:`keep_newest`.
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


class _Refused(OSError):
    """An OSError that reads as a plain sentence (no ``[Errno None]``)."""

    def __str__(self) -> str:
        return f"{self.strerror}: {self.filename}"


class NotRegularFile(_Refused):
    """The path is a directory, FIFO, socket or device; ``kind`` says which."""

    def __init__(self, path: str | Path, kind: str) -> None:
        super().__init__(f"is a {kind}, not a regular file")
        self.strerror = f"is a {kind}, not a regular file"
        self.kind = kind
        self.filename = str(path)


class FileTooLarge(_Refused):
    """The file is larger than the limit the caller gave."""

    def __init__(self, path: str | Path, size: int, limit: int) -> None:
        message = f"{human_size(size)} is larger than the {human_size(limit)} limit"
        super().__init__(message)
        self.strerror = message
        self.size = size
        self.limit = limit
        self.filename = str(path)


def human_size(n: int) -> str:
    """``4 MiB``, ``200.0 MiB``, ``512 bytes``: sizes as a person reads them."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            value = n / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


def file_kind(mode: int) -> str:
    """What kind of file ``mode`` (an ``st_mode``) describes, in words."""
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "regular file" if stat.S_ISREG(mode) else "special file"


def read_regular(path: str | Path, limit: int) -> bytes:
    """The bytes of ``path`` (symlinks followed), which must be a regular file of at most ``limit`` bytes.

    Raises ``FileNotFoundError`` and other ``OSError`` as ``open`` does, plus
    :class:`NotRegularFile` and :class:`FileTooLarge`; it never blocks on a
    FIFO or device (checked with ``stat`` first, opened with ``O_NONBLOCK``
    in case it was swapped in between) and never reads more than ``limit + 1``
    bytes, even from a file that grows while it is read.
    """
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFile(path, file_kind(mode))
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(path, file_kind(info.st_mode))
        if info.st_size > limit:
            raise FileTooLarge(path, info.st_size, limit)
        chunks: list[bytes] = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise FileTooLarge(path, len(data), limit)
    return data


def remove_tree(path: str | Path, ignore_errors: bool = False) -> None:
    """``shutil.rmtree``, with shutil (and its bz2, lzma and fnmatch: ~1.5 ms) imported only when a folder goes."""
    import shutil

    shutil.rmtree(path, ignore_errors=ignore_errors)


def current_umask() -> int:
    """The process's umask, read without changing it where the system allows (Linux ``/proc``)."""
    with contextlib.suppress(OSError, ValueError):
        from agentlaunch.platform_support import proc_text

        for line in proc_text("self", "status").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)  # elsewhere: read it by setting it, and set it straight back
    os.umask(mask)
    return mask


def write_atomic(path: Path, data: bytes, mode: int | None = None, durable: bool = True) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename.

    The file gets ``mode`` if given, else the mode of the regular file it
    replaces, else what the umask allows of 0o666, as a plain ``open`` would
    give it (``mkstemp`` alone would make every file 0600). ``durable=False``
    skips the fsync before the rename, for a file that only describes the
    moment (a status record, a cache of advice): a reader still sees the old
    or the new bytes, never a mix, while the system runs; the fsync is what a
    launch waited for most of the time such a write took (a few milliseconds
    each on a busy disk).
    """
    if mode is None:
        try:
            info = os.stat(path)
            mode = stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else None
        except OSError:
            mode = None
    if mode is None:
        mode = 0o666 & ~current_umask()
    import tempfile  # here: `status --line` and the early start read this module

    fd, tmp = tempfile.mkstemp(".tmp", f".{path.name}.", path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def tighten(path: Path, mode: int) -> None:
    """Take from ``path`` every permission bit ``mode`` does not allow (never adds one); symlinks followed.

    Only a file or folder of this user's is changed (``chmod`` of another's
    would fail anyway), and a failure is ignored: tightening protects what
    agentlaunch keeps from other users, it is never a reason to fail.
    """
    with contextlib.suppress(OSError):
        info = os.stat(path)
        if info.st_uid != os.geteuid():
            return
        current = stat.S_IMODE(info.st_mode)
        if current & ~mode:
            os.chmod(path, current & mode)


def private_dir(path: Path) -> Path:
    """Make ``path`` (and missing parents) a folder only this user can open: 0700 whatever the umask.

    An existing folder is tightened to 0700 (it may have been made 0755 by an
    older agentlaunch): the state folder holds session titles (first prompts),
    working directories and costs. Raises ``OSError`` as ``mkdir`` does.
    """
    for parent in reversed(path.parents):  # mkdir(parents=True) would give the parents the umask's mode
        if not parent.exists():
            parent.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
    path.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)  # the mode is still masked by the umask, so:
    tighten(path, PRIVATE_DIR_MODE)
    return path


def keep_newest(folder: Path, keep: int, pattern: str = "*.json") -> None:
    """Delete all but the ``keep`` most recently written files matching ``pattern`` in ``folder``.

    For the caches that gain a file per new key (what the schema accepted, the
    launch plans): they stay small without an expiry to configure. A file lost
    here only costs the next launch that would have used it its shortcut.
    """
    try:
        files = [(entry.stat().st_mtime_ns, entry) for entry in folder.glob(pattern)]
    except OSError:
        return
    if len(files) <= keep:
        return
    files.sort(key=lambda pair: pair[0], reverse=True)
    for _, old in files[keep:]:
        with contextlib.suppress(OSError):
            old.unlink()


@contextlib.contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Hold ``flock(LOCK_EX)`` on the file ``path`` (made when missing; its folder must exist) for the block."""
    import fcntl

    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
