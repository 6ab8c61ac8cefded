"""A client of ``codex app-server`` for end-to-end tests and benches: JSON-RPC over stdio, or over its Unix socket.

Measured on Codex 0.171.0:

* ``codex app-server`` (``--listen stdio://``, the default) reads and writes one JSON object per line,
  JSON-RPC 2.0 without the ``"jsonrpc"`` member: ``initialize`` first, then the ``initialized``
  notification, then requests (``thread/start``, ``turn/start``, ...).
* ``codex app-server --listen unix://PATH`` makes PATH a socket (mode 0600) speaking WebSocket: an HTTP/1.1
  ``Upgrade: websocket`` handshake first (answered ``101 Switching Protocols``), then one JSON-RPC message
  per text frame. A plain JSON line on the socket is closed without an answer. (The Codex source of
  2026-08 reads the socket as raw WebSocket frames with no HTTP handshake; the 0.171.0 binary wants the
  handshake: the CLI wins.) This is also what ``codex --remote unix://PATH`` connects to.

:class:`Rpc` keeps every message it received, in order, with the time it arrived; tests wait for the one
they need (:meth:`Rpc.wait_for`), never for a fixed time.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

Message = dict[str, Any]


class Rpc:
    """Messages in, requests out; the transport is a subclass's (:meth:`_write`, and a reader thread calling
    :meth:`_received`)."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.received: list[tuple[float, Message]] = []
        self._lock = threading.Condition()
        self._ids = iter(range(1, 1 << 30))
        self.closed = False

    def _write(self, message: Message) -> None:
        raise NotImplementedError

    def _received(self, message: Message) -> None:
        with self._lock:
            self.received.append((time.monotonic() - self.t0, message))
            self._lock.notify_all()

    def _ended(self) -> None:
        with self._lock:
            self.closed = True
            self._lock.notify_all()

    def send(self, message: Message) -> None:
        self._write(message)

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        self.send({"method": method, **({"params": dict(params)} if params is not None else {})})

    def wait_for(self, check: Callable[[Message], bool], timeout: float = 60.0, start: int = 0) -> Message:
        """The first message from index ``start`` on for which ``check`` holds; AssertionError after ``timeout``."""
        end = time.monotonic() + timeout
        with self._lock:
            while True:
                for _, message in self.received[start:]:
                    if check(message):
                        return message
                left = end - time.monotonic()
                if left <= 0 or self.closed:
                    methods = [m.get("method") or m.get("id") for _, m in self.received[start:]]
                    raise AssertionError(f"no such message from the app-server (closed={self.closed}); got {methods}")
                self._lock.wait(min(left, 0.5))

    def request(self, method: str, params: Mapping[str, Any], timeout: float = 60.0) -> Message:
        """Send a request and return its answer (``result`` or ``error``)."""
        rid = next(self._ids)
        self.send({"id": rid, "method": method, "params": dict(params)})
        return self.wait_for(lambda m: m.get("id") == rid and "method" not in m, timeout)

    def result(self, method: str, params: Mapping[str, Any], timeout: float = 60.0) -> Any:
        """A request's ``result``; AssertionError when it was answered with an error."""
        answer = self.request(method, params, timeout)
        assert "result" in answer, f"{method}: {answer}"
        return answer["result"]

    def initialize(self, name: str = "agentlaunch-test") -> Any:
        result = self.result("initialize", {"clientInfo": {"name": name, "version": "0"}})
        self.notify("initialized")
        return result

    def mark(self) -> int:
        """An index for :meth:`wait_for` and :meth:`since`: what arrives after now."""
        with self._lock:
            return len(self.received)

    def since(self, start: int) -> list[Message]:
        with self._lock:
            return [m for _, m in self.received[start:]]

    def methods(self, start: int = 0, skip: tuple[str, ...] = ("item/agentMessage/delta",)) -> list[str]:
        """The notification and server-request methods received from ``start`` on, in order."""
        return [str(m["method"]) for m in self.since(start) if "method" in m and m["method"] not in skip]

    def turn(self, thread_id: str, text: str, timeout: float = 60.0) -> list[Message]:
        """Start a turn with ``text`` and return what arrived until its ``turn/completed``."""
        start = self.mark()
        turn = self.result("turn/start", {"threadId": thread_id, "input": [{"type": "text", "text": text}]}, timeout)
        turn_id = turn["turn"]["id"]
        self.wait_for(lambda m: m.get("method") == "turn/completed" and m["params"]["turn"]["id"] == turn_id, timeout, start)
        return self.since(start)


class StdioRpc(Rpc):
    """``codex app-server`` on stdio, started by this client."""

    def __init__(self, argv: list[str], env: Mapping[str, str], cwd: Path, stderr: IO[str] | int = subprocess.DEVNULL) -> None:
        super().__init__()
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=dict(env), cwd=cwd, text=True, bufsize=1
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.strip():
                self._received(json.loads(line))
        self._ended()

    def _write(self, message: Message) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def close(self, timeout: float = 10.0) -> int:
        """Close its stdin (the app-server ends on EOF) and return its exit code; killed if it lingers."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


class UnixWebSocketRpc(Rpc):
    """A WebSocket client on the app-server's Unix socket (client frames masked, as RFC 6455 requires)."""

    def __init__(self, path: Path, timeout: float = 30.0) -> None:
        super().__init__()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        key = base64.b64encode(os.urandom(16)).decode()
        hello = (
            "GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(hello.encode())
        self._buf = b""
        while b"\r\n\r\n" not in self._buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise AssertionError(f"the app-server closed the socket during the WebSocket handshake: {self._buf!r}")
            self._buf += chunk
        head, self._buf = self._buf.split(b"\r\n\r\n", 1)
        self.handshake = head.decode("latin-1")
        if " 101 " not in self.handshake.split("\r\n", 1)[0]:
            raise AssertionError(f"no WebSocket upgrade: {self.handshake!r}")
        self.sock.settimeout(None)
        self._send_lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _frame(self, opcode: int, data: bytes) -> bytes:
        from agentlaunch.providers.native.unix_websocket import client_frame

        return client_frame(opcode, data)

    def _write(self, message: Message) -> None:
        with self._send_lock:
            self.sock.sendall(self._frame(0x1, json.dumps(message).encode()))

    def _take(self, n: int) -> bytes:
        while len(self._buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise EOFError
            self._buf += chunk
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def _read(self) -> None:
        pending = b""
        try:
            while True:
                b0, b1 = self._take(2)
                n = b1 & 0x7F
                if n == 126:
                    n = struct.unpack(">H", self._take(2))[0]
                elif n == 127:
                    n = struct.unpack(">Q", self._take(8))[0]
                mask = self._take(4) if b1 & 0x80 else b""
                data = self._take(n)
                if mask:
                    data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
                opcode = b0 & 0x0F
                if opcode in (0x0, 0x1):
                    pending += data
                    if b0 & 0x80:
                        self._received(json.loads(pending))
                        pending = b""
                elif opcode == 0x9:  # ping
                    with self._send_lock:
                        self.sock.sendall(self._frame(0xA, data))
                elif opcode == 0x8:
                    break
        except (EOFError, OSError):
            pass
        self._ended()

    def close(self) -> None:
        try:
            with self._send_lock:
                self.sock.sendall(self._frame(0x8, b""))
        except OSError:
            pass
        self.sock.close()


@contextmanager
def socket_server(command: Path, env: Mapping[str, str], cwd: Path, path: Path, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``codex app-server --listen unix://PATH`` for the block; ended (SIGTERM, then SIGKILL) after it."""
    from agentlaunch.fakeapi.responses import codex_quiet_args

    with log.open("wb") as err:
        server = subprocess.Popen(
            [str(command), *codex_quiet_args(), "app-server", "--listen", f"unix://{path}"],
            stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=dict(env), cwd=cwd,
        )  # fmt: skip
    try:
        end = time.monotonic() + 60
        while not path.exists():
            if server.poll() is not None or time.monotonic() > end:
                raise AssertionError(f"no socket at {path} (exit {server.poll()}): {log.read_text()[-2000:]}")
            time.sleep(0.02)
        yield server
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def of_method(messages: list[Message], method: str) -> list[dict[str, Any]]:
    """The ``params`` of every message with ``method``."""
    return [m.get("params") or {} for m in messages if m.get("method") == method]
