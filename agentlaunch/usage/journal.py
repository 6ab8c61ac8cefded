"""The usage store's journal: what a launch could not write because another process held the store's lock.

A write the store refuses with "database is locked" (after its busy timeout)
is appended here instead, one JSON line per write, fsynced before the call is
shown: ``<store>.pending.jsonl`` beside the store, mode 0600 like it. The
store replays the journal when it is free again (its next write, its close,
its next open by any command): every line carries a unique ``uid``, and the
store keeps the uids it applied in the same transaction as the rows, so a
journal replayed twice (kill -9 after the commit, before the journal was
cleared) counts nothing twice. The journal is cleared only after that commit.

Appends and the journal's clearing take an exclusive ``flock`` on the file
itself; the file may be replaced (a rewrite) or removed under that lock, so a
writer checks, once it holds the lock, that the path still names the file it
locked, and opens it again when not. A half-written last line (a writer killed
mid-append) is ignored, and the next append starts a new line after it.

This module knows files and lines; what an operation does to the store is
:mod:`agentlaunch.usage.store`'s.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import stat
from collections.abc import Iterator, Mapping
from datetime import datetime
from hashlib import sha256
from pathlib import Path
from typing import Any, Literal, get_args

from agentlaunch.datarecord import datarecord, field
from agentlaunch.fsutil import PRIVATE_FILE_MODE, tighten
from agentlaunch.token_usage import Usage, usage_problem
from agentlaunch.usage.records import CallRecord, from_ts, to_ts

OpKind = Literal["session", "place", "title", "event", "call", "state", "touch", "end"]
OP_KINDS: tuple[str, ...] = get_args(OpKind)
VERSION = 1
MAX_LINE = 64 * 1024  # one line is well under 4 KiB; a longer one is not ours
READ_LIMIT = 64 * 1024 * 1024  # read per replay at most (then the rest at the next): ~150,000 calls
_LAST_TS = 253402300799.0  # 9999-12-31T23:59:59Z
_OPEN_TRIES = 100  # a journal replaced between open and lock this often in a row: something is wrong


def new_uid() -> str:
    """A random id for one write: 128 bits, so two writes never share one."""
    return os.urandom(16).hex()  # what secrets.token_hex(16) gives, without importing secrets (~1-5 ms)


@datarecord(frozen=True)
class Op:
    """One write to the store: ``kind`` names it, ``args`` are its fields as JSON values, ``uid`` makes it unique."""

    kind: OpKind
    args: Mapping[str, Any]
    uid: str = field(default_factory=new_uid)

    def line(self) -> bytes:
        """The op as one journal line (JSON, ``\\n`` at the end)."""
        data = {"v": VERSION, "uid": self.uid, "op": self.kind, **self.args}
        return json.dumps(data, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode() + b"\n"

    def call(self) -> CallRecord:
        """The call a ``call`` op stores."""
        a = self.args
        at = from_ts(a["at"])
        assert self.kind == "call" and at is not None
        return CallRecord(
            agent=a["agent"],
            provider=a["provider"],
            usage=Usage(**a["usage"]),
            session_id=a["session_id"],
            turn=a["turn"],
            model_requested=a["model_requested"],
            model_reported=a["model_reported"],
            cost_usd=a["cost_usd"],
            price_key=a["price_key"],
            at=at,
            full_price_usd=a["full_price_usd"],
        )


# --------------------------------------------------------------------------- the ops


def call_op(call: CallRecord) -> Op:
    u = call.usage
    usage = {
        "input": u.input,
        "cache_write": u.cache_write,
        "cache_read": u.cache_read,
        "output": u.output,
        "reasoning": u.reasoning,
        "cache_write_1h": u.cache_write_1h,
    }
    return Op(
        "call",
        {
            "at": to_ts(call.at),
            "agent": call.agent,
            "provider": call.provider,
            "session_id": call.session_id,
            "turn": call.turn,
            "model_requested": call.model_requested,
            "model_reported": call.model_reported,
            "usage": usage,
            "cost_usd": call.cost_usd,
            "price_key": call.price_key,
            "full_price_usd": call.full_price_usd,
        },
    )


def session_op(session_id: str, *, agent: str, provider: str, working_dir: str, model: str | None, at: datetime) -> Op:
    args = {"session_id": session_id, "agent": agent, "provider": provider, "working_dir": working_dir, "model": model}
    return Op("session", {**args, "at": to_ts(at)})


def place_op(session_id: str, tmux_session: str, tmux_window: str | None, tmux_layout: str | None) -> Op:
    return Op(
        "place", {"session_id": session_id, "tmux_session": tmux_session, "tmux_window": tmux_window, "tmux_layout": tmux_layout}
    )


def title_op(session_id: str, prompt: str) -> Op:
    return Op("title", {"session_id": session_id, "prompt": prompt})


def event_op(session_id: str, kind: str, detail: str | None, at: datetime) -> Op:
    return Op("event", {"session_id": session_id, "kind": kind, "detail": detail, "at": to_ts(at)})


def state_op(session_id: str, state: dict[str, Any] | None) -> Op:
    return Op("state", {"session_id": session_id, "state": state})


def touch_op(session_id: str, turns: int, at: datetime) -> Op:
    return Op("touch", {"session_id": session_id, "turns": turns, "at": to_ts(at)})


def end_op(session_id: str, exit_status: int | None, at: datetime) -> Op:
    return Op("end", {"session_id": session_id, "exit_status": exit_status, "at": to_ts(at)})


# What each op's fields must be; a line whose fields differ is not read (never half-applied).
_TEXT, _OPT_TEXT, _TIME, _OPT_INT, _INT, _OPT_USD, _USAGE, _STATE = range(8)
_FIELDS: dict[str, dict[str, int]] = {
    "session": {"session_id": _TEXT, "agent": _TEXT, "provider": _TEXT, "working_dir": _TEXT, "model": _OPT_TEXT, "at": _TIME},
    "place": {"session_id": _TEXT, "tmux_session": _TEXT, "tmux_window": _OPT_TEXT, "tmux_layout": _OPT_TEXT},
    "title": {"session_id": _TEXT, "prompt": _TEXT},
    "event": {"session_id": _TEXT, "kind": _TEXT, "detail": _OPT_TEXT, "at": _TIME},
    "call": {
        "at": _TIME,
        "agent": _TEXT,
        "provider": _TEXT,
        "session_id": _OPT_TEXT,
        "turn": _OPT_INT,
        "model_requested": _OPT_TEXT,
        "model_reported": _OPT_TEXT,
        "usage": _USAGE,
        "cost_usd": _OPT_USD,
        "price_key": _OPT_TEXT,
        "full_price_usd": _OPT_USD,
    },
    "state": {"session_id": _TEXT, "state": _STATE},
    "touch": {"session_id": _TEXT, "turns": _INT, "at": _TIME},
    "end": {"session_id": _TEXT, "exit_status": _OPT_INT, "at": _TIME},
}
_MAX_INT = (1 << 53) - 1


def _fits(kind: int, value: Any) -> bool:
    if kind in (_OPT_TEXT, _OPT_INT, _OPT_USD, _STATE) and value is None:
        return True
    if kind in (_TEXT, _OPT_TEXT):
        return isinstance(value, str) and _utf8(value)
    if kind in (_INT, _OPT_INT):
        return type(value) is int and -_MAX_INT <= value <= _MAX_INT
    if kind == _TIME:
        return type(value) in (int, float) and math.isfinite(value) and 0 <= value <= _LAST_TS
    if kind == _OPT_USD:
        return type(value) in (int, float) and math.isfinite(value) and 0 <= value <= 1e12
    if kind == _STATE:
        return isinstance(value, dict)
    # _USAGE: exactly Usage's fields, each a possible count
    if not isinstance(value, dict) or set(value) != {
        "input",
        "cache_write",
        "cache_read",
        "output",
        "reasoning",
        "cache_write_1h",
    }:
        return False
    return usage_problem(Usage(**value)) is None


def _utf8(text: str) -> bool:
    """Whether SQLite can take ``text`` (JSON can spell a lone surrogate, which no UTF-8 string holds)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def read_op(line: bytes) -> Op | None:
    """The op a journal line holds (without its ``\\n``), or None when the line is not one this version wrote."""
    if len(line) > MAX_LINE:
        return None
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    if not isinstance(data, dict) or data.get("v") != VERSION:
        return None
    kind, uid = data.pop("op", None), data.pop("uid", None)
    data.pop("v")
    if kind not in _FIELDS or not isinstance(uid, str) or not 0 < len(uid) <= 64:
        return None
    fields = _FIELDS[kind]
    if set(data) != set(fields) or not all(_fits(fields[name], data[name]) for name in fields):
        return None
    if isinstance(data.get("at"), int):
        data["at"] = float(data["at"])
    return Op(kind, data, uid)


@datarecord(frozen=True)
class Read:
    """What one read of the journal found: the ops, in order (a uid once), and the lines that were not ops."""

    ops: list[Op]
    bad: list[int]  # 1-based numbers of complete lines that are not ops
    end: int  # the bytes up to here are read (a half-written last line is not)


def parse(data: bytes) -> Read:
    """The ops of journal bytes. Never raises: a line that is not an op is named in ``bad``; the bytes
    after the last ``\\n`` (a line a writer was killed while writing) are left unread."""
    ops: list[Op] = []
    bad: list[int] = []
    seen: set[str] = set()
    end = data.rfind(b"\n") + 1
    for number, line in enumerate(data[:end].split(b"\n")[:-1], start=1):
        if not line.strip():
            continue  # the newline an append put after a half-written line
        op = read_op(line)
        if op is None:
            bad.append(number)
        elif op.uid not in seen:
            seen.add(op.uid)
            ops.append(op)
    return Read(ops, bad, end)


# --------------------------------------------------------------------------- the file


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
