"""The launch's end of the hooks it answers later (deferred replies): a Unix stream socket in its runtime folder.

A command hook (:mod:`agentlaunch.providers.native.hook_ask`, run by Claude Code for the budget's ``PreToolUse``)
connects and sends ``{"event": NAME, "length": N}`` + a newline + the CLI's JSON (N bytes), its side kept open (a
request without ``length`` is whole when its side is shut); :meth:`HeldHooks.receive`
gives it as a :class:`HeldHook` with a ``reply`` id, and the connection is held until :meth:`HeldHooks.answer`
sends :data:`~agentlaunch.providers.native.hook_ask.MARK` and the hook's output. Any event can be held so: a
``PermissionRequest`` hook answered by the person from outside the pane uses the same path.

Who can reach it: the socket is bound in the launch's runtime folder, which ``mkdtemp`` made 0700, and is itself
0600, so only this user (and root) can connect; where the OS tells a Unix socket's peer (``SO_PEERCRED`` on
Linux) a peer of another uid is also closed before anything is read. No other user can hold a slot: the http
hook server on 127.0.0.1 this replaces counted every local connection against its 64 before it read a key, and
200 idle connections of another user made every hook fail, which Claude Code treats as non-blocking (the tool
ran). A connection has :data:`REQUEST_WAIT` seconds to send its whole request; a body over :data:`MAX_BODY` is read
to its end and dropped (the report keeps no payload); at most :data:`MAX_CONNECTIONS` are open, the user's own
processes only. The launch's loop waits on the listener, each connection still sending and each held one whose hook
keeps its side open (:meth:`HeldHooks.filenos`, each on its own: no epoll set, which is Linux's alone): a held
connection becomes readable only when its hook goes away (Claude Code killed it: the person answered in its own
dialog), and is closed then. Told by a peek at it (end of file), not by ``poll``'s ``POLLHUP``: macOS reports that
for a connection half shut too. No thread.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path

from agentlaunch.providers.native.hook_ask import MARK, QUESTION_WAIT
from agentlaunch.providers.untrusted import loads

MAX_HEAD = 256
"""The header line's limit: ``{"event": NAME}``."""
MAX_BODY = 8 << 20
REQUEST_WAIT = 5.0
"""Seconds a connection has to send its whole request."""
HOLD_WAIT = 55.0
"""Seconds a held request waits for :meth:`HeldHooks.answer` (the hook itself waits ``hook_ask.ASK_WAIT``)."""
HOLD_WAITS = {"PermissionRequest": QUESTION_WAIT + 60.0}
"""A held ``PermissionRequest`` (a dialog the person may answer with agentlaunch answer) waits as long as its hook."""
MAX_CONNECTIONS = 64
READ_CHUNK = 1 << 16
READS_PER_WAKE = 64
"""At most this many chunks are read from one connection per :meth:`HeldHooks.receive` (a flood cannot stall)."""


class HeldHook:
    """One request: the event it names, its body (None: over :data:`MAX_BODY`), and the id its answer names."""

    __slots__ = ("event", "body", "reply")

    def __init__(self, event: str, body: bytes | None, reply: str) -> None:
        self.event, self.body, self.reply = event, body, reply


def listen(path: Path) -> socket.socket:
    """A non-blocking listening Unix stream socket at ``path``, 0600."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        sock.bind(str(path))
        os.chmod(path, 0o600)
        sock.listen(MAX_CONNECTIONS)
    except OSError:
        sock.close()
        raise
    return sock


def same_user(sock: socket.socket) -> bool:
    """The peer is this user (or root), where the OS tells (``SO_PEERCRED``); True where it cannot tell (the 0700
    folder is the guard there)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, option, 12)
    except OSError:
        return False
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid in (os.geteuid(), 0)


class _Conn:
    __slots__ = ("sock", "data", "deadline", "dropped", "received", "length", "open")

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock, self.deadline = sock, deadline
        self.data = bytearray()
        self.dropped = False
        self.received = 0  # bytes read, kept or not
        self.length: int | None = None  # the whole request's bytes, once its header named its body's length
        self.open = False  # whole by its length, the hook's side open: held, it is waited on for its hang-up


def header(data: bytes | bytearray) -> dict[str, object] | None:
    """The request's header line as an object, once it is there whole (None: not yet, or not an object)."""
    head, newline, _ = bytes(data[: MAX_HEAD + 1]).partition(b"\n")
    if not newline:
        return None
    with contextlib.suppress(ValueError, UnicodeDecodeError):
        value = loads(head.decode("utf-8"))
        if isinstance(value, dict):
            return value
    return None


def gone(sock: socket.socket) -> bool:
    """Whether the hook of a held connection went away: its connection reads end of file, fails, or has bytes a
    waiting hook never sends; False while it reads nothing (the hook waits for its answer)."""
    try:
        sock.recv(1, socket.MSG_PEEK)
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True
    return True


class HeldHooks:
    """The listening socket, its connections and the requests held for an answer."""

    def __init__(self, path: Path, bound: socket.socket | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self.clock = clock
        self._listener = bound if bound is not None else listen(path)
        self._conns: dict[int, _Conn] = {}
        self._held: dict[str, _Conn] = {}
        self._ids = 0

    def filenos(self) -> tuple[int, ...]:
        """The listener, the connections still sending their request and the held ones whose hook keeps its side open
        (readable when it goes away); not a held one whose side is shut (it reads as ready for ever)."""
        return (self._listener.fileno(), *self._conns, *(c.sock.fileno() for c in self._held.values() if c.open))

    def deadline(self) -> float | None:
        times = [c.deadline for c in self._conns.values()] + [c.deadline for c in self._held.values()]
        return min(times) if times else None

    def receive(self) -> list[HeldHook]:
        """The requests that came whole since the last call, each held until :meth:`answer`."""
        found: list[HeldHook] = []
        self._accept()
        for conn in list(self._conns.values()):  # non-blocking: one with nothing new reads nothing
            hook = self._read(conn)
            if hook is not None:
                found.append(hook)
        for reply, conn in list(self._held.items()):
            if conn.open and gone(conn.sock):  # its hook went away (Claude Code killed it): nothing waits for the answer
                self._close(self._held.pop(reply))
        now = self.clock()
        for conn in [c for c in self._conns.values() if c.deadline <= now]:
            self._close(conn)
        for reply in [r for r, c in self._held.items() if c.deadline <= now]:
            self._close(self._held.pop(reply))  # the hook then fails closed
        return found

    def answer(self, reply: str, text: str) -> bool:
        """Answer the held request ``reply`` with ``text`` (the hook's output; "" lets the tool run); False when it
        is not held (its hook went away, or it was answered)."""
        conn = self._held.pop(reply, None)
        if conn is None:
            return False
        try:
            if conn.open and gone(conn.sock):  # killed since the last receive (answered in the dialog): not answered here
                return False
            conn.sock.settimeout(1.0)  # a few hundred bytes into a fresh socket's buffer: one send takes them
            conn.sock.sendall(MARK + text.encode("utf-8"))
        except OSError:  # it went away while the answer was sent (EPIPE, ECONNRESET): nothing took it
            return False
        finally:
            self._close(conn)
        return True

    def close(self) -> None:
        for conn in [*self._conns.values(), *self._held.values()]:
            conn.sock.close()
        self._conns.clear()
        self._held.clear()
        self._listener.close()
        with contextlib.suppress(OSError):
            self.path.unlink()

    def _accept(self) -> None:
        for _ in range(MAX_CONNECTIONS):
            try:
                sock, _ = self._listener.accept()
            except OSError:  # none waiting (BlockingIOError), or out of descriptors: the rest wait in the backlog
                return
            if len(self._conns) + len(self._held) >= MAX_CONNECTIONS or not same_user(sock):
                sock.close()
                continue
            sock.setblocking(False)
            self._conns[sock.fileno()] = _Conn(sock, self.clock() + REQUEST_WAIT)

    def _read(self, conn: _Conn) -> HeldHook | None:
        for _ in range(READS_PER_WAKE):
            try:
                chunk = conn.sock.recv(READ_CHUNK)
            except (BlockingIOError, InterruptedError):
                return None
            except OSError:
                self._close(conn)
                return None
            if not chunk:  # the hook closed its side: the request is whole
                return self._whole(conn)
            room = max(MAX_BODY + MAX_HEAD - len(conn.data), 0)
            conn.data += chunk[:room]
            conn.dropped = conn.dropped or len(chunk) > room
            conn.received += len(chunk)
            if conn.length is None and (head := header(conn.data)) is not None:
                size = head.get("length")
                if isinstance(size, int) and not isinstance(size, bool) and size >= 0:
                    conn.length = bytes(conn.data).index(b"\n") + 1 + size
            if conn.length is not None and conn.received >= conn.length:
                if conn.received > conn.length:  # more than it said: not a hook's request
                    self._close(conn)
                    return None
                conn.open = True
                return self._whole(conn)
        return None

    def _whole(self, conn: _Conn) -> HeldHook | None:
        _, _, body = bytes(conn.data).partition(b"\n")
        event = (header(conn.data) or {}).get("event", "")
        if not isinstance(event, str) or not event.isascii() or not event.isalnum():
            self._close(conn)  # not a hook's request: closed unanswered
            return None
        del self._conns[conn.sock.fileno()]  # held now: waited on for its hang-up only where its side is open
        self._ids += 1
        reply = str(self._ids)
        conn.deadline = self.clock() + HOLD_WAITS.get(event, HOLD_WAIT)
        conn.data = bytearray()
        self._held[reply] = conn
        return HeldHook(event, None if conn.dropped or len(body) > MAX_BODY else body, reply)

    def _close(self, conn: _Conn) -> None:
        fd = conn.sock.fileno()
        if fd >= 0:
            self._conns.pop(fd, None)
        conn.sock.close()
