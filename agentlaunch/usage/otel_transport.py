"""One HTTP/1.1 POST over a socket: what an OTLP/HTTP export needs of HTTP, and nothing more.

``http.client`` would do, but importing it (with the ``email`` package it
parses headers with, and ``ssl``) costs 8 ms of CPU in every launch that
exports, on a machine where each millisecond beside the starting CLI delays
it; ``socket`` costs 1.3 ms, and ``ssl`` is imported only for an https
endpoint. The request is sent whole with ``Connection: close``; the answer is
read by its Content-Length, chunked, or to the end, at most :data:`MAX_BODY`
bytes, the whole exchange bounded by one deadline.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass

MAX_BODY = 1 << 20
"""An OTLP answer is a few bytes (a partial success, a status): anything past this is cut."""
MAX_HEAD = 64 << 10


class ProtocolError(OSError):
    """The receiver's answer is not HTTP/1.x."""


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]  # lower-cased names
    body: bytes


def exchange(
    scheme: str, host: str, port: int | None, path: str, headers: dict[str, str], body: bytes, *,
    timeout: float, ca_file: str | None = None,
) -> Reply:  # fmt: skip
    """POST ``body`` to ``scheme://host:port/path``; raises OSError (TimeoutError, ConnectionRefusedError,
    ssl.SSLError, ProtocolError...) when no complete answer came within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    port = port or (443 if scheme == "https" else 80)
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        if scheme == "https":
            import ssl  # only for https: 2.7 ms

            context = ssl.create_default_context(cafile=ca_file)
            sock = context.wrap_socket(sock, server_hostname=host)
        authority = f"[{host}]" if ":" in host else host
        lines = [f"POST {path} HTTP/1.1", f"Host: {authority}:{port}", f"Content-Length: {len(body)}", "Connection: close"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        return _read_reply(_Reader(sock, deadline))
    finally:
        sock.close()


class _Reader:
    """Buffered reads from the socket, each bounded by what is left of the deadline."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock, self.deadline, self.buffer, self.eof = sock, deadline, bytearray(), False

    def fill(self) -> bool:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no complete answer in time")
        self.sock.settimeout(left)
        data = self.sock.recv(65536)
        if not data:
            self.eof = True
            return False
        self.buffer += data
        return True

    def until(self, marker: bytes, limit: int) -> bytes:
        while (index := self.buffer.find(marker)) < 0:
            if len(self.buffer) > limit or not self.fill():
                raise ProtocolError("the answer ended before its header did")
        out = bytes(self.buffer[:index])
        del self.buffer[: index + len(marker)]
        return out

    def exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            if not self.fill():
                raise ProtocolError("the answer ended early")
        out = bytes(self.buffer[:size])
        del self.buffer[:size]
        return out

    def rest(self, limit: int) -> bytes:
        while len(self.buffer) <= limit and self.fill():
            pass
        return bytes(self.buffer[:limit])


def _read_reply(reader: _Reader) -> Reply:
    head = reader.until(b"\r\n\r\n", MAX_HEAD).decode("latin-1")
    status_line, *header_lines = head.split("\r\n")
    version, _, rest = status_line.partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise ProtocolError(f"not an HTTP answer: {status_line[:80]!r}")
    headers: dict[str, str] = {}
    for line in header_lines:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    status = int(code)
    if status in (204, 304) or 100 <= status < 200:
        return Reply(status, headers, b"")
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = bytearray()
        while True:
            size_line = reader.until(b"\r\n", MAX_HEAD).split(b";")[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                raise ProtocolError("a malformed chunk") from None
            if size == 0:
                break
            chunk = reader.exactly(size + 2)[:-2]
            if len(body) < MAX_BODY:
                body += chunk[: MAX_BODY - len(body)]
        return Reply(status, headers, bytes(body))
    length = headers.get("content-length")
    if length is not None and length.isdigit():
        size = int(length)
        if size > MAX_BODY:
            return Reply(status, headers, reader.exactly(MAX_BODY))
        return Reply(status, headers, reader.exactly(size))
    return Reply(status, headers, reader.rest(MAX_BODY))
