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

import json
import select
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
    """The app-server's Unix socket through agentlaunch's own WebSocket client
    (:class:`~agentlaunch.providers.native.unix_websocket.UnixWebSocket`), read on a thread of its own."""

    def __init__(self, path: Path, timeout: float = 30.0) -> None:
        from agentlaunch.providers.native.unix_websocket import UnixWebSocket

        super().__init__()
        try:
            self.ws = UnixWebSocket(str(path), timeout)
        except OSError as exc:
            raise AssertionError(f"no WebSocket connection to the app-server at {path}: {exc}") from None
        self.handshake = self.ws.handshake
        self._io = threading.Lock()  # the client is the relay loop's, one thread: a send and a receive never overlap
        self._stop = False
        threading.Thread(target=self._read, daemon=True).start()

    def _write(self, message: Message) -> None:
        with self._io:
            self.ws.send(message)

    def _read(self) -> None:
        while not self._stop:
            with self._io:
                got, ended = self.ws.receive(), self.ws.closed  # the first takes what came with the upgrade's answer
            for message in got:
                self._received(message)
            if ended:
                break
            try:
                select.select([self.ws], [], [], 0.5)  # data, or a look at _stop twice a second
            except (OSError, ValueError):  # closed under it by close()
                break
        self._ended()

    def close(self) -> None:
        self._stop = True
        with self._io:
            self.ws.close()


@contextmanager
def socket_server(command: Path, env: Mapping[str, str], cwd: Path, path: Path, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``codex app-server --listen unix://PATH`` for the block; ended (SIGTERM, then SIGKILL) after it."""
    from agentlaunch.fakeapi.responses import codex_quiet_args

    with log.open("wb") as err:
        server = subprocess.Popen(
            [str(command), *codex_quiet_args(), "app-server", "--listen", f"unix://{path}"],
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=err,
            env=dict(env),
            cwd=cwd,
        )
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
