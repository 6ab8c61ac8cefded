"""The exporter's HTTP/1.1 POST against raw sockets on 127.0.0.1: the answers a real collector may give."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from agentlaunch.usage.otel.transport import MAX_BODY, ProtocolError, exchange


@contextmanager
def one_answer(raw: bytes, *, hold: bool = False) -> Iterator[tuple[int, list[bytes]]]:
    """A server that reads one request and sends ``raw`` (then holds the connection open when ``hold``)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    seen: list[bytes] = []
    release = threading.Event()

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
            while len(body) < length:
                body += conn.recv(65536)
            seen.append(head + b"\r\n\r\n" + body)
            conn.sendall(raw)
            if hold:
                release.wait(10)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], seen
    finally:
        release.set()
        thread.join(5)
        server.close()


def post(port: int, timeout: float = 5.0) -> object:
    return exchange(
        "http", "127.0.0.1", port, "/v1/logs", {"Content-Type": "application/x-protobuf"}, b"\x01\x02", timeout=timeout
    )


def test_a_content_length_answer_and_the_request_as_sent() -> None:
    with one_answer(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 3\r\n\r\nabc") as (port, seen):
        reply = post(port)
    assert (reply.status, reply.headers["content-type"], reply.body) == (200, "application/x-protobuf", b"abc")  # type: ignore[attr-defined]
    head = seen[0].split(b"\r\n")
    assert head[0] == b"POST /v1/logs HTTP/1.1" and f"Host: 127.0.0.1:{port}".encode() in head
    assert b"Content-Length: 2" in head and seen[0].endswith(b"\r\n\r\n\x01\x02")


def test_a_chunked_answer_is_joined() -> None:
    raw = b"HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nbad \r\n7;x=y\r\nrequest\r\n0\r\n\r\n"
    with one_answer(raw) as (port, _):
        reply = post(port)
    assert (reply.status, reply.body) == (400, b"bad request")  # type: ignore[attr-defined]


def test_an_answer_without_length_is_read_to_its_end_and_bounded() -> None:
    with one_answer(b"HTTP/1.0 503 Busy\r\n\r\n" + b"x" * (MAX_BODY + 10)) as (port, _):
        reply = post(port)
    assert reply.status == 503 and len(reply.body) == MAX_BODY  # type: ignore[attr-defined]


def test_an_answer_that_never_finishes_times_out() -> None:
    with (
        one_answer(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly a bit", hold=True) as (port, _),
        pytest.raises(TimeoutError),
    ):
        post(port, timeout=0.5)


def test_something_that_is_not_http_is_a_protocol_error() -> None:
    with one_answer(b"SSH-2.0-OpenSSH_9.6\r\n\r\n") as (port, _), pytest.raises(ProtocolError):
        post(port)
