"""The usage store's journal file: what a launch could not write because another process held the store's lock.

A write the store refuses with "database is locked" (after its busy timeout)
is appended here instead, one JSON line per write (an op of
:mod:`agentlaunch.usage.journal_ops`), fsynced before the call is shown:
``<store>.pending.jsonl`` beside the store, mode 0600 like it. The store
replays the journal when it is free again (its next write, its close, its
next open by any command): every line carries a unique ``uid``, and the store
keeps the uids it applied in the same transaction as the rows, so a journal
replayed twice (kill -9 after the commit, before the journal was cleared)
counts nothing twice. The journal is cleared only after that commit.

Appends and the journal's clearing take an exclusive ``flock`` on the file
itself; the file may be replaced (a rewrite) or removed under that lock, so a
writer checks, once it holds the lock, that the path still names the file it
locked, and opens it again when not. A half-written last line (a writer killed
mid-append) is ignored, and the next append starts a new line after it.

This module knows the file; what a line holds is :mod:`agentlaunch.usage.journal_ops`'s,
what an operation does to the store :mod:`agentlaunch.usage.store_writes`'s.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator
from hashlib import sha256
from pathlib import Path

from agentlaunch.datarecord import datarecord
from agentlaunch.fsutil import PRIVATE_FILE_MODE, tighten
from agentlaunch.usage.journal_ops import MAX_LINE, Op, Read, parse

READ_LIMIT = 64 * 1024 * 1024  # read per replay at most (then the rest at the next): ~150,000 calls
_OPEN_TRIES = 100  # a journal replaced between open and lock this often in a row: something is wrong


def journal_path(store: Path) -> Path:
    """The journal of the store at ``store``. Not ``<store>-journal``: that name is SQLite's own."""
    return store.with_name(store.name + ".pending.jsonl")


def has_lines(path: Path) -> bool:
    """Whether the journal exists and holds anything (one ``stat``: the store asks before every write)."""
    try:
        return os.stat(path).st_size > 0
    except OSError:
        return False


@contextlib.contextmanager
def _locked(path: Path, *, create: bool) -> Iterator[int | None]:
    """An fd of the journal at ``path`` under an exclusive flock, the path still naming it; None when there is none.

    The lock is taken on the open file; a clearing may have removed or replaced
    the path meanwhile, so the fd is checked against the path and opened again.
    """
    flags = os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | (os.O_CREAT if create else 0)
    for _ in range(_OPEN_TRIES):
        try:
            fd = os.open(path, flags | os.O_NONBLOCK, PRIVATE_FILE_MODE)  # never waits on a FIFO swapped in
        except FileNotFoundError:
            if create:
                raise
            yield None
            return
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise OSError(f"{path}: not a regular file; move it away")
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                now = os.stat(path, follow_symlinks=False)
            except FileNotFoundError:
                now = None
            if now is not None and (now.st_ino, now.st_dev) == (info.st_ino, info.st_dev):
                yield fd
                return
        finally:
            os.close(fd)  # closing drops the flock
    raise OSError(f"{path}: the journal kept being replaced while it was opened")


def append(path: Path, op: Op) -> None:
    """Append ``op`` to the journal at ``path`` and fsync it. Raises OSError when it cannot be written.

    A half-written last line (a writer killed mid-append: appends hold the lock,
    so its writer is dead) is cut off first, so this line starts a line of its
    own; a short write (a full disk) is cut off again before raising.
    """
    line = op.line()
    created = not path.exists()
    with _locked(path, create=True) as fd:
        assert fd is not None
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            tail = os.pread(fd, min(size, MAX_LINE + 1), max(0, size - MAX_LINE - 1))
            cut = tail.rfind(b"\n")
            if cut >= 0 or size <= MAX_LINE:
                size = size - len(tail) + cut + 1  # just after the last whole line (0: there is none)
                os.ftruncate(fd, size)
            else:
                line = b"\n" + line  # a tail longer than any line of ours: ended, and read as a bad line
        try:
            written = 0
            while written < len(line):
                written += os.write(fd, line[written:])
            os.fsync(fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise
    tighten(path, PRIVATE_FILE_MODE)  # made 0600; one a looser umask or another program left is tightened
    if created:
        _fsync_dir(path.parent)


@datarecord(frozen=True)
class Mark:
    """Which bytes a :func:`read` read: the first ``end`` bytes of the file, whose SHA-256 is ``digest``.

    The digest, not the inode, says it is the same file at :func:`clear`: a
    journal removed by another replay and made again by a new append can get
    the same inode number, and its first bytes were never replayed.
    """

    end: int
    digest: bytes


def read(path: Path) -> tuple[Read, Mark | None]:
    """The journal's ops (at most :data:`READ_LIMIT` bytes of them) and a :class:`Mark` of what was read.

    (Read([], [], 0), None) when there is no journal. Raises OSError when it cannot be read.
    """
    with _locked(path, create=False) as fd:
        if fd is None:
            return Read([], [], 0), None
        info = os.fstat(fd)
        chunks: list[bytes] = []
        offset = 0
        while offset < min(info.st_size, READ_LIMIT):
            chunk = os.pread(fd, min(READ_LIMIT - offset, 1 << 20), offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
    data = b"".join(chunks)
    found = parse(data)
    end = found.end
    if end == 0 and len(data) >= READ_LIMIT:
        end = len(data)  # a READ_LIMIT without a newline holds no op of ours: read past it
    return found, Mark(end, sha256(data[:end]).digest())


def clear(path: Path, mark: Mark) -> None:
    """Drop the journal's first bytes that :func:`read` read, once their ops are committed to the store.

    The journal is removed when nothing was appended since; else what was
    appended is written to a new file that replaces it (atomic rename). A
    journal whose first bytes are not the ones read (another replay cleared
    it, and new lines started a new one) is left alone.
    """
    end = mark.end
    with _locked(path, create=False) as fd:
        if fd is None:
            return
        info = os.fstat(fd)
        if info.st_size < end or sha256(os.pread(fd, end, 0)).digest() != mark.digest:
            return
        rest = os.pread(fd, info.st_size - end, end)
        if b"\n" not in rest:  # nothing, or half a line a writer died writing (appends hold the lock)
            os.unlink(path)
            return
        import tempfile

        tmp_fd, tmp = tempfile.mkstemp(".tmp", f".{path.name}.", path.parent)
        try:
            os.fchmod(tmp_fd, PRIVATE_FILE_MODE)
            with os.fdopen(tmp_fd, "wb") as fh:
                fh.write(rest)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)  # while the old file is still locked: its waiters see the new one
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    """Make a file's creation or rename durable (a crash of the machine, not only of the process)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
