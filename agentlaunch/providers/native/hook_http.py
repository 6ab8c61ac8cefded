"""The launch's end of Claude Code's ``"type": "http"`` hooks: a small HTTP/1.1 server on the launch's loop.

Claude Code POSTs each hook's JSON to ``http://127.0.0.1:PORT/EVENT`` (``/gate/EVENT`` for a hook the launch
answers later: the budget's ``PreToolUse``) and waits for the answer, whose body it reads as a command hook's
stdout (notes/claude-findings.md, "HTTP hooks"). No process runs per hook.

The server binds 127.0.0.1 only, on a port the OS chooses, and takes a request only with the launch's key in
:data:`KEY_HEADER` (Claude Code reads it from :data:`KEY_VAR` in its own environment: it is in no argv). HTTP is
parsed by h11 (the bring-your-own-I/O HTTP/1.1 parser: what a request line, a header and a ``Content-Length`` may
be is its job), fed from the loop's non-blocking reads; what this module adds is the limits a local client must
not get past. Every connection has :data:`REQUEST_WAIT` seconds to send its whole request; a head over
:data:`MAX_HEAD` (h11's ``max_incomplete_event_size``) is answered 431, anything h11 cannot read as a request 400,
a request that is not a POST with a ``Content-Length`` 405 or 411, and closed; a body over :data:`MAX_BODY` is read
to its end and dropped (the report keeps no payload). One request per connection: what follows it (a pipelined
second request) is never read. Everything waits on one ``epoll`` descriptor, the source's :meth:`fileno`: no
thread. Each answer is sent once and the connection closed (``Connection: close``): an answer is a few hundred
bytes into a fresh socket's buffer, so one ``send`` takes it (a client that does not read it loses it).

h11 is imported with the first connection, not with the server: the listening socket is made before the CLI
starts, the first hook comes once Claude Code runs. Its import measured 7-11 ms of CPU (``time.process_time``,
five runs, 2026-12-06, load 34 on 2 cores) with ``re`` and ``dataclasses`` loaded before it, 13-15 ms without;
the standard library's ``http.server`` would need a thread per connection.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import time
from collections.abc import Callable, Mapping
from hmac import compare_digest
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import h11

HOST = "127.0.0.1"
KEY_HEADER = b"x-agentlaunch-key"
KEY_VAR = "AGENTLAUNCH_HOOK_KEY"
BOUND = "hook-server"
"""The key of ``NativeContext.bound`` under which the early start hands over its listening socket and key."""
GATE_PATH = "/gate/"
MAX_HEAD = 16 << 10
MAX_BODY = 8 << 20
"""Bodies up to this size are kept (a Write's hook holds the whole file); a larger one is read and dropped."""
REQUEST_WAIT = 5.0
"""Seconds a connection has to send its whole request."""
HOLD_WAIT = 40.0
"""Seconds a held request (a gate) waits for :meth:`HookServer.answer` (Claude Code's own hook timeout is 30 s)."""
HOLD_WAITS = {"PermissionRequest": 24 * 3600 + 60.0}
"""A held ``PermissionRequest`` (a dialog the person may answer with agentlaunch answer) outlives its hook's timeout."""
MAX_CONNECTIONS = 64
READ_CHUNK = 1 << 16
READS_PER_WAKE = 64
"""At most this many chunks are read from one connection per :meth:`HookServer.receive` (a flood cannot stall)."""


class HttpHook:
    """One request: the event its path names, its body (None: over :data:`MAX_BODY`), the gate's id when held."""

    __slots__ = ("event", "body", "reply")

    def __init__(self, event: str, body: bytes | None, reply: str | None) -> None:
        self.event, self.body, self.reply = event, body, reply


def past_proxies(env: Mapping[str, str]) -> dict[str, str]:
    """``NO_PROXY`` and ``no_proxy`` for the CLI, naming :data:`HOST` besides what they named.

    Claude Code sends its http hooks through ``HTTP_PROXY`` (measured on 2.1.332: with it set, a hook to 127.0.0.1
    never arrived, and a failed hook lets the tool run: a budget's gate would open), and a proxy cannot reach this
    machine's loopback anyway. Where only one of the two is set, both get its value: some clients read the lower
    case first, and an empty one would hide the user's own list.
    """
    both = [env.get("no_proxy") or "", env.get("NO_PROXY") or ""]
    if not both[0] or not both[1]:
        both = [both[0] or both[1]] * 2
    return {
        var: value if HOST in (part.strip() for part in value.split(",")) else ",".join(filter(None, [value, HOST]))
        for var, value in zip(("no_proxy", "NO_PROXY"), both, strict=True)
    }


def new_key() -> str:
    return os.urandom(16).hex()


def listen() -> socket.socket:
    """A non-blocking listening socket on 127.0.0.1, its port chosen by the OS."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        sock.bind((HOST, 0))
        sock.listen(MAX_CONNECTIONS)
    except OSError:
        sock.close()
        raise
    return sock


class _Conn:
    __slots__ = ("sock", "parser", "body", "deadline", "event", "gate", "dropped")

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        import h11  # with the first connection: see the module's docstring

        self.sock, self.deadline = sock, deadline
        self.parser = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        self.body = bytearray()
        self.event, self.gate, self.dropped = "", False, 0


class HookServer:
    """The listening socket, its connections and the requests held for an answer, on one epoll descriptor."""

    def __init__(self, key: str, bound: socket.socket | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.key = key.encode()
        self.clock = clock
        self._listener = bound if bound is not None else listen()
        self.port: int = self._listener.getsockname()[1]
        self._poll = select.epoll()
        self._poll.register(self._listener.fileno(), select.EPOLLIN)
        self._conns: dict[int, _Conn] = {}
        self._held: dict[str, _Conn] = {}
        self._ids = 0

    def url(self, event: str, gate: bool = False) -> str:
        return f"http://{HOST}:{self.port}{GATE_PATH if gate else '/'}{event}"

    def fileno(self) -> int:
        return self._poll.fileno()

    def deadline(self) -> float | None:
        times = [c.deadline for c in self._conns.values()] + [c.deadline for c in self._held.values()]
        return min(times) if times else None

    def receive(self) -> list[HttpHook]:
        """The requests that came whole since the last call (each answered, or held when it is a gate's)."""
        found: list[HttpHook] = []
        for fd, _ in self._poll.poll(0):
            if fd == self._listener.fileno():
                self._accept()
            elif (conn := self._conns.get(fd)) is not None:
                hook = self._read(conn)
                if hook is not None:
                    found.append(hook)
            else:
                self._drop_held(fd)
        now = self.clock()
        for conn in [c for c in self._conns.values() if c.deadline <= now]:
            self._close(conn)
        for reply in [r for r, c in self._held.items() if c.deadline <= now]:
            self._close(self._held.pop(reply))
        return found

    def answer(self, reply: str, text: str) -> bool:
        """Answer the held request ``reply`` with ``text`` (the hook's output; "" lets the tool run); False when it
        is not held (its client gave up, or it was answered)."""
        conn = self._held.pop(reply, None)
        if conn is not None:
            self._respond(conn, 200, text.encode("utf-8"))
        return conn is not None

    def close(self) -> None:
        for conn in [*self._conns.values(), *self._held.values()]:
            conn.sock.close()
        self._conns.clear()
        self._held.clear()
        self._listener.close()
        self._poll.close()

    # -- connections ---------------------------------------------------------------------------

    def _accept(self) -> None:
        for _ in range(MAX_CONNECTIONS):
            try:
                sock, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            if len(self._conns) + len(self._held) >= MAX_CONNECTIONS:
                sock.close()
                continue
            sock.setblocking(False)
            conn = _Conn(sock, self.clock() + REQUEST_WAIT)
            self._conns[sock.fileno()] = conn
            self._poll.register(sock.fileno(), select.EPOLLIN)

    def _read(self, conn: _Conn) -> HttpHook | None:
        for _ in range(READS_PER_WAKE):
            try:
                chunk = conn.sock.recv(READ_CHUNK)
            except (BlockingIOError, InterruptedError):
                return None
            except OSError:
                chunk = b""
            if not chunk:  # the client closed before its request was whole
                self._close(conn)
                return None
            conn.parser.receive_data(chunk)
            hook = self._parse(conn)
            if hook is not None or conn.sock.fileno() < 0:  # a request, or a refusal answered and closed
                return hook
        return None

    def _parse(self, conn: _Conn) -> HttpHook | None:
        """The events h11 has read so far: the request whole, or None (more to come, or refused and closed)."""
        import h11

        while True:
            try:
                event = conn.parser.next_event()
            except h11.RemoteProtocolError as exc:  # not HTTP, a head over MAX_HEAD (431), a bad length...
                self._respond(conn, exc.error_status_hint)
                return None
            if event is h11.NEED_DATA:
                return None
            if isinstance(event, h11.Request):
                refused = self._refused(conn, event)
                if refused:
                    self._respond(conn, refused)
                    return None
            elif isinstance(event, h11.Data):
                room = max(MAX_BODY - len(conn.body), 0)
                conn.body += event.data[:room]
                conn.dropped += max(len(event.data) - room, 0)
            elif isinstance(event, h11.EndOfMessage):
                return self._whole(conn)
            else:  # ConnectionClosed (or PAUSED): nothing more will come
                self._close(conn)
                return None

    def _refused(self, conn: _Conn, request: h11.Request) -> int:
        """The status refusing ``request`` (0: taken), its event and gate noted on ``conn``."""
        # h11 bounds a head still incomplete (max_incomplete_event_size); one that came whole in a read is sized here
        if len(request.target) + sum(len(name) + len(value) + 4 for name, value in request.headers) > MAX_HEAD:
            return 431
        if request.method != b"POST":
            return 405
        headers = dict(request.headers)  # names lower-cased by h11
        if not compare_digest(headers.get(KEY_HEADER, b""), self.key):
            return 403
        path = request.target.decode("ascii", "replace")
        gate = path.startswith(GATE_PATH)
        event = path[len(GATE_PATH) if gate else 1 :]
        if not event.isalnum() or not event.isascii() or b"transfer-encoding" in headers:
            return 400
        if b"content-length" not in headers:
            return 411
        conn.event, conn.gate = event, gate
        return 0

    def _whole(self, conn: _Conn) -> HttpHook:
        body = None if conn.dropped else bytes(conn.body)
        if not conn.gate:
            self._respond(conn, 200)
            return HttpHook(conn.event, body, None)
        self._ids += 1
        reply = str(self._ids)
        del self._conns[conn.sock.fileno()]
        conn.deadline = self.clock() + HOLD_WAITS.get(conn.event, HOLD_WAIT)
        self._held[reply] = conn  # stays registered: a client that gives up makes it readable (_drop_held)
        return HttpHook(conn.event, body, reply)

    def _drop_held(self, fd: int) -> None:
        """A held request's client closed (Claude Code's hook timed out): nothing waits for the answer."""
        for reply, conn in list(self._held.items()):
            if conn.sock.fileno() == fd:
                self._close(self._held.pop(reply))
                return
        with contextlib.suppress(OSError, ValueError):
            self._poll.unregister(fd)

    def _respond(self, conn: _Conn, status: int, body: bytes = b"") -> None:
        head = f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\nContent-Length: {len(body)}\r\n"
        with contextlib.suppress(OSError):
            conn.sock.send(head.encode() + b"Content-Type: application/json\r\nConnection: close\r\n\r\n" + body)
        self._close(conn)

    def _close(self, conn: _Conn) -> None:
        fd = conn.sock.fileno()
        if fd >= 0:
            with contextlib.suppress(OSError, ValueError):
                self._poll.unregister(fd)
            self._conns.pop(fd, None)
        conn.sock.close()


REASONS = {
    200: "OK",
    400: "Bad Request",
    403: "Forbidden",
    405: "Method Not Allowed",
    411: "Length Required",
    431: "Request Header Fields Too Large",
    501: "Not Implemented",
    505: "HTTP Version Not Supported",
}
