"""A WebSocket client on a Unix socket: how agentlaunch talks to the ``codex app-server`` it owns.

Measured on Codex 0.171.0 (``tests/e2e/test_codex_appserver_contract.py``): ``codex app-server --listen
unix://PATH`` wants an HTTP/1.1 ``Upgrade: websocket`` request first (answered ``101``), then one JSON-RPC
message per text frame; a plain JSON line is closed unanswered. Client frames are masked (RFC 6455).

Standard library only. The handshake and :meth:`UnixWebSocket.call`'s wait block (with a timeout); afterwards
the relay loop waits on :meth:`UnixWebSocket.fileno` and :meth:`UnixWebSocket.receive` takes what has arrived.

Why not a library: this runs on the native Codex launch path, before Codex's interface can start, and its
reads must be the relay loop's (no thread of its own, no read that blocks on half a frame). Measured on this
machine (2026-12-02, ``-X importtime``, the smallest of 9, load 2): this module 3.1 ms; ``websocket-client``
1.9.2 15.3 ms, and its ``recv`` blocks until a whole frame; ``websockets`` 17.1's sans-I/O ``ClientProtocol``,
which would fit the loop, 28.0 ms (it reads its version through ``importlib.metadata``), its sync client
37.1 ms with a thread of its own. What is written here is the part of RFC 6455 a local app-server needs:
the upgrade, masked text, close and pong frames, and reading text (continued ones too), ping and close frames,
with a message bounded by :data:`MAX_MESSAGE` (a longer one closes the connection with code 1009). The tests
(``tests/test_unix_websocket.py``, and the app-server contract through ``tests/support/codex_appserver.py``) use
this client, not one of their own.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import struct
import time
from typing import Any

from agentlaunch.platform_support import SOCKET_PATH_MAX
from agentlaunch.providers.untrusted import loads

MAX_PATH = SOCKET_PATH_MAX
"""The longest socket path connected to (macOS's, on every platform)."""
MAX_MESSAGE = 1 << 26
"""The longest message (all its frames together) read: 64 MiB. A longer one is refused, the connection closed
with code 1009 (Message Too Big) and :attr:`UnixWebSocket.reason` saying so. The app-server's largest messages
are a resumed thread's history (every item of every turn: megabytes for a long session); the bound is there so
that a stream of continuation frames cannot grow the launch's memory without end."""
TOO_BIG = 1009
"""RFC 6455's close code for a message too big to process."""

Message = dict[str, Any]


def client_frame(opcode: int, data: bytes) -> bytes:
    """One final frame of ``opcode`` (0x1 text, 0x8 close, 0xA pong) carrying ``data``, masked as a client's must be."""
    mask = os.urandom(4)
    n = len(data)
    if n < 126:
        head = struct.pack(">BB", 0x80 | opcode, 0x80 | n)
    elif n < 1 << 16:
        head = struct.pack(">BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        head = struct.pack(">BBQ", 0x80 | opcode, 0x80 | 127, n)
    masked = (int.from_bytes(data, "big") ^ int.from_bytes((mask * (n // 4 + 1))[:n], "big")).to_bytes(n, "big")
    return head + mask + masked


class Closed(OSError):
    """The other end closed the connection (or sent what no WebSocket peer sends, or a message too big)."""


class UnixWebSocket:
    """One connection: JSON messages out (:meth:`send`), in (:meth:`receive`), ``closed`` once it ended.

    The bytes read wait in one ``bytearray`` and each whole frame is deleted from its front (CPython advances the
    buffer's start instead of moving the rest), so a burst of many small frames costs time in proportion to its bytes.
    """

    def __init__(self, path: str, timeout: float) -> None:
        """Connect to ``path`` and upgrade; OSError (``Closed``, ``TimeoutError``) when that fails."""
        if len(os.fsencode(path)) > MAX_PATH:
            raise OSError(f"the socket path is {len(os.fsencode(path))} bytes long, at most {MAX_PATH} work: {path}")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.closed = False
        self.reason: str | None = None
        """Why the connection ended, when agentlaunch ended it (a message over :data:`MAX_MESSAGE`)."""
        self.handshake = ""
        """The app-server's answer to the upgrade (its status line and headers)."""
        self._buf = bytearray()
        self._partial = bytearray()  # the text message whose final frame has not come yet
        self._kind = 0  # the opcode of the message in progress (0x1 text, 0x2 binary), 0 between messages
        self._size = 0  # its bytes so far
        try:
            self.sock.settimeout(timeout)
            self.sock.connect(path)
            key = base64.b64encode(os.urandom(16)).decode()
            self.sock.sendall(
                (
                    "GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
                ).encode()
            )
            while b"\r\n\r\n" not in self._buf:
                self._recv()
            end = self._buf.index(b"\r\n\r\n")
            self.handshake = self._buf[:end].decode("latin-1")
            del self._buf[: end + 4]
            status = self.handshake.split("\r\n", 1)[0]
            if " 101 " not in status + " ":
                raise Closed(f"no WebSocket upgrade: {status!r}")
            self.sock.settimeout(None)
        except OSError:
            self.sock.close()
            raise

    def fileno(self) -> int:
        return self.sock.fileno()

    def _recv(self, flags: int = 0) -> None:
        chunk = self.sock.recv(1 << 16, flags)
        if not chunk:
            raise Closed("the app-server closed the connection")
        self._buf += chunk

    def send(self, message: Message) -> None:
        self._send_frame(0x1, json.dumps(message).encode())

    def _send_frame(self, opcode: int, data: bytes) -> None:
        self.sock.sendall(client_frame(opcode, data))

    def receive(self) -> list[Message]:
        """What has arrived (never waits); sets ``closed`` once the connection ended."""
        try:
            self._recv(socket.MSG_DONTWAIT)
        except BlockingIOError:
            pass
        except OSError:
            self.closed = True
        return self._messages()

    def call(self, message: Message, timeout: float, backlog: list[Message]) -> Message:
        """Send a request and wait for its answer; what else arrives meanwhile goes to ``backlog``, in order."""
        rid = message["id"]
        self.send(message)
        end = time.monotonic() + timeout
        while True:
            for i, got in enumerate(backlog):
                if got.get("id") == rid and "method" not in got:
                    return backlog.pop(i)
            left = end - time.monotonic()
            if self.closed or left <= 0:
                why = (self.reason or "closed the connection") if self.closed else f"did not answer within {timeout:g}s"
                raise Closed(f"the app-server {why} ({message.get('method')})")
            self.sock.settimeout(left)
            try:
                self._recv()
            except TimeoutError:
                continue
            except OSError:
                self.closed = True
            finally:
                self.sock.settimeout(None)
            backlog.extend(self._messages())

    def _messages(self) -> list[Message]:
        out: list[Message] = []
        while (frame := self._frame()) is not None:  # a refused message empties the buffer: the loop ends
            opcode, final, data = frame
            if opcode == 0x9:
                self._send_frame(0xA, data)  # ping: pong
            elif opcode == 0x8:
                self.closed = True
            elif opcode in (0x0, 0x1, 0x2):
                kind = opcode or self._kind
                if kind == 0x1:
                    self._partial += data
                self._kind = 0 if final else kind
                if final:
                    self._size = 0
                    text, self._partial = bytes(self._partial), bytearray()
                    if kind != 0x1:
                        continue  # binary (or a continuation of nothing): nothing the app-server sends; skipped
                    try:
                        found = loads(text.decode("utf-8", "replace"))
                    except ValueError:
                        continue  # not JSON: nothing the app-server sends; skipped
                    if isinstance(found, dict):
                        out.append(found)
        return out

    def _frame(self) -> tuple[int, bool, bytes] | None:
        """The next whole frame in the buffer (taken from it), or None while it is incomplete.

        A data frame that would take its message past :data:`MAX_MESSAGE` is refused as soon as its header is
        read (its payload is never buffered): the connection is closed with :data:`TOO_BIG` and None returned.
        """
        buf = self._buf
        if len(buf) < 2:
            return None
        b0, b1 = buf[0], buf[1]
        n, at = b1 & 0x7F, 2
        if n == 126:
            if len(buf) < 4:
                return None
            n, at = struct.unpack_from(">H", buf, 2)[0], 4
        elif n == 127:
            if len(buf) < 10:
                return None
            n, at = struct.unpack_from(">Q", buf, 2)[0], 10
        opcode = b0 & 0x0F
        size = n + (self._size if opcode == 0x0 else 0)
        if size > MAX_MESSAGE:
            self._refuse(
                f"the app-server sent a message of more than {MAX_MESSAGE} bytes (at least {size}), "
                f"more than agentlaunch reads; connection closed (WebSocket code {TOO_BIG})"
            )
            return None
        mask = b""
        if b1 & 0x80:
            if len(buf) < at + 4:
                return None
            mask, at = bytes(buf[at : at + 4]), at + 4
        if len(buf) < at + n:
            return None
        data = bytes(buf[at : at + n])
        del buf[: at + n]
        if opcode < 0x8:
            self._size = size
        if mask:
            data = (int.from_bytes(data, "big") ^ int.from_bytes((mask * (n // 4 + 1))[:n], "big")).to_bytes(n, "big")
        return opcode, bool(b0 & 0x80), data

    def _refuse(self, reason: str) -> None:
        """End the connection for ``reason``: a close frame with :data:`TOO_BIG`, what is buffered dropped."""
        self.reason = reason
        with contextlib.suppress(OSError):
            self._send_frame(0x8, struct.pack(">H", TOO_BIG) + b"message too big")
        self.closed = True
        self._buf.clear()
        self._partial = bytearray()

    def close(self) -> None:
        if not self.closed:
            with contextlib.suppress(OSError):
                self._send_frame(0x8, b"")
        self.closed = True
        self.sock.close()
