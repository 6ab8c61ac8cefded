"""A threaded HTTP server on loopback that records requests and streams replies."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, Self, TypeVar

T = TypeVar("T")


@dataclass
class Recorded:
    """One request as the provider API would have received it."""

    method: str
    path: str
    headers: dict[str, str]
    raw: bytes

    @property
    def body(self) -> Any:
        """The JSON body, or None when it is not JSON."""
        try:
            return json.loads(self.raw)
        except ValueError:
            return None


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream"})
    chunks: Iterable[bytes] = ()


Responder = Callable[[Recorded], Reply]


class FakeServer:
    """Serve ``responder`` on 127.0.0.1 (a free port unless one is given).

    Use as a context manager; ``requests`` lists every request received, in
    order. Only loopback is ever bound.
    """

    def __init__(self, responder: Responder, port: int = 0) -> None:
        self.responder = responder
        self.requests: list[Recorded] = []
        # Called (on the server's thread) with each request once recorded: a waiting loop's wakeup.
        self.on_request: list[Callable[[Recorded], None]] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                rec = Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, raw)
                with outer._lock:
                    outer.requests.append(rec)
                for listener in list(outer.on_request):
                    listener(rec)
                reply = outer.responder(rec)
                self.close_connection = True
                try:
                    self.send_response(reply.status)
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.send_header("connection", "close")
                    self.end_headers()
                    for chunk in reply.chunks:
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    return  # the client hung up mid-stream (an interrupted turn): nothing to answer

            do_POST = _handle
            do_GET = _handle

            def do_CONNECT(self) -> None:
                # A client that tries to reach anywhere else through us as its proxy:
                # recorded (the prefix doctor reports it) and refused, never tunnelled.
                rec = Recorded("CONNECT", self.path, {k.lower(): v for k, v in self.headers.items()}, b"")
                with outer._lock:
                    outer.requests.append(rec)
                self.close_connection = True
                try:
                    self.send_response(403, "refused by the agentlaunch capture endpoint")
                    self.send_header("content-length", "0")
                    self.send_header("connection", "close")
                    self.end_headers()
                except (BrokenPipeError, ConnectionResetError):
                    return

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def proxy_attempts(self) -> list[Recorded]:
        """Requests that used this server as a proxy: CONNECT tunnels and absolute-URI requests."""
        with self._lock:
            return [r for r in self.requests if r.method == "CONNECT" or r.path.startswith(("http://", "https://"))]

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def sse(event: str | None, data: Any) -> bytes:
    """One server-sent event; ``data`` is serialized as JSON."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


class ReplyScript(Generic[T]):
    """A thread-safe queue of planned replies; ``default`` answers once it is empty."""

    def __init__(self, replies: Iterable[T] = (), default: T | None = None) -> None:
        self._queue: deque[T] = deque(replies)
        self.default: T = default if default is not None else self.fallback()
        self._lock = threading.Lock()

    def fallback(self) -> T:
        """The default reply when none is given (subclasses name one)."""
        raise TypeError("ReplyScript needs a default reply")

    def push(self, *replies: T) -> None:
        with self._lock:
            self._queue.extend(replies)

    def next(self) -> T:
        with self._lock:
            return self._queue.popleft() if self._queue else self.default

    def __len__(self) -> int:
        with self._lock:
            return len(self._queue)


class ScriptedFake:
    """Lifecycle shared by the scripted fakes: a FakeServer, and waits that end when it stops."""

    def __init__(self, responder: Responder, port: int = 0) -> None:
        self._stopping = threading.Event()
        self.server = FakeServer(responder, port=port)
        self._counting = threading.Lock()
        self.stalls = 0
        """Stalls begun (a reply's ``stall``): its first part was written and flushed before each. A test waits on
        this to act mid-stream, where a fixed sleep only guessed."""

    def start(self) -> Self:
        self.server.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self.server.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def requests(self) -> list[Recorded]:
        return self.server.requests

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def _stall(self, seconds: float) -> None:
        """Hold a reply mid-stream for ``seconds`` (ended early when the fake stops), counted in :attr:`stalls`."""
        with self._counting:  # one thread per request
            self.stalls += 1
        self._wait(seconds)
