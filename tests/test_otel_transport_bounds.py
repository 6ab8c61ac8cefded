"""The OTLP client against hostile answers: bounded memory, one deadline, no redirect followed, TLS host checked.

A collector (or whatever answers at its address) can send a chunk size of
``FFFFFFFFFF``, endless data, a drip of one byte at a time, or bytes that are
no HTTP at all. The client keeps at most :data:`MAX_BODY` of an answer, ends
the exchange at its deadline, and raises nothing but ``OSError``.
"""

from __future__ import annotations

import contextlib
import queue
import shutil
import socket
import subprocess
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlaunch.usage.otel.config import read_config
from agentlaunch.usage.otel.request import post as otlp_post
from agentlaunch.usage.otel.transport import MAX_BODY, Reply, exchange
from testbed.otlp_receiver import OtlpReceiver


class Answering:
    """A server on 127.0.0.1 that answers each connection with the next queued answer: bytes, or a function of the
    connection (which may send without end), after reading the request."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(8)
        self.port = self.server.getsockname()[1]
        self.answers: queue.Queue[object] = queue.Queue()
        self.requests = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                self.requests += 1
                try:
                    conn.settimeout(5)
                    data = b""
                    while b"\r\n\r\n" not in data:
                        piece = conn.recv(65536)
                        if not piece:
                            raise ConnectionResetError("the client left before its request's end")
                        data += piece
                    answer = self.answers.get_nowait()
                    if callable(answer):
                        answer(conn, self.stop)
                    else:
                        conn.sendall(answer)  # type: ignore[arg-type]
                except (OSError, queue.Empty):
                    pass

    def close(self) -> None:
        self.stop.set()
        # shutdown() wakes the thread's accept(); close() alone leaves it blocked until the join's own timeout
        with contextlib.suppress(OSError):
            self.server.shutdown(socket.SHUT_RDWR)
        self.server.close()
        self.thread.join(10)
        assert not self.thread.is_alive()


@pytest.fixture
def answering() -> Iterator[Answering]:
    server = Answering()
    try:
        yield server
    finally:
        server.close()


def post(port: int, timeout: float = 5.0) -> Reply:
    return exchange("http", "127.0.0.1", port, "/v1/logs", {"Content-Type": "application/x-protobuf"}, b"\x01", timeout=timeout)


def endless(head: bytes, piece: bytes, total: int) -> object:
    def send(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(head)
        sent = 0
        while sent < total and not stop.is_set():
            conn.sendall(piece)
            sent += len(piece)

    return send


def test_a_chunk_of_ffffffffff_bytes_is_not_buffered(answering: Answering) -> None:
    head = b"HTTP/1.1 400 Bad\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFF\r\n"
    answering.answers.put(endless(head, b"x" * (1 << 16), 24 << 20))
    tracemalloc.start()
    try:
        reply = post(answering.port, timeout=20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert reply.status == 400 and len(reply.body) == MAX_BODY
    assert peak < 4 * MAX_BODY  # the 24 MiB sent never held; the old reader buffered all of it


def test_an_endless_content_length_answer_is_cut_at_the_bound(answering: Answering) -> None:
    head = b"HTTP/1.1 503 Busy\r\nContent-Length: 99999999999\r\n\r\n"
    answering.answers.put(endless(head, b"y" * (1 << 16), 8 << 20))
    tracemalloc.start()
    try:
        reply = post(answering.port, timeout=20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert reply.status == 503 and len(reply.body) == MAX_BODY and peak < 4 * MAX_BODY


def test_a_drip_of_bytes_ends_at_the_one_deadline(answering: Answering) -> None:
    def drip(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
        while not stop.wait(0.05):  # each byte well within any per-read timeout: only a whole-exchange one ends it
            conn.sendall(b"z")

    answering.answers.put(drip)
    with pytest.raises(TimeoutError):
        post(answering.port, timeout=1.0)


def test_headers_without_end_are_refused(answering: Answering) -> None:
    answering.answers.put(endless(b"HTTP/1.1 200 OK\r\n", b"X-A: b\r\n" * 1000, 8 << 20))
    with pytest.raises(OSError):
        post(answering.port, timeout=20)


def test_a_redirect_is_an_answer_not_followed(answering: Answering) -> None:
    answering.answers.put(b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:1/v1/logs\r\nContent-Length: 0\r\n\r\n")
    reply = post(answering.port)
    assert reply.status == 307 and answering.requests == 1


def test_a_certificate_for_another_host_is_refused(tmp_path: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("needs the openssl command to make a self-signed certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=other.example",
            "-addext",
            "subjectAltName=DNS:other.example",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    with OtlpReceiver(tls=(str(cert), str(key))) as receiver:
        config = read_config(
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
                "OTEL_EXPORTER_OTLP_CERTIFICATE": str(cert),
                "OTEL_EXPORTER_OTLP_TIMEOUT": "3000",
            }
        )
        answer = otlp_post(config.targets["logs"], b"", config)
    assert not answer.accepted and not answer.retryable and "certificate not trusted" in answer.problem
    assert "127.0.0.1" in answer.problem and receiver.received == []


# -- any answer at all ----------------------------------------------------------------------------------

_status = st.one_of(
    st.sampled_from(
        [
            b"HTTP/1.1 200 OK",
            b"HTTP/1.0 503 Busy",
            b"HTTP/1.1 100 Continue",
            b"HTTP/1.1 204 No Content",
            b"HTTP/1.1 302 Found",
            b"HTTP/2 200",
            b"HTTP/1.1 999 X",
            b"HTTP/1.1 abc",
            b"",
            b"ICY 200 OK",
        ]
    ),
    st.binary(max_size=40),
)
_header = st.one_of(
    st.sampled_from(
        [
            b"Content-Length: 5",
            b"Content-Length: -1",
            b"Content-Length: 99999999999999999999",
            b"Content-Length: 3, 4",
            b"Transfer-Encoding: chunked",
            b"Transfer-Encoding: gzip, chunked",
            b"Content-Type: application/json",
            b"Retry-After: 5",
            b"X: \xff\xfe",
            b": novalue",
            b"NoColon",
        ]
    ),
    st.binary(max_size=30).filter(lambda b: b"\r\n" not in b),
)
_chunk_size = st.one_of(
    st.sampled_from([b"0", b"5", b"FFFFFFFFFF", b"-1", b"zz", b"5;ext=1", b"", b"1" * 70]),
    st.integers(min_value=0, max_value=1 << 40).map(lambda n: b"%x" % n),
)
_body = st.one_of(
    st.binary(max_size=200),
    st.lists(st.tuples(_chunk_size, st.binary(max_size=40)), max_size=4).map(
        lambda parts: b"".join(size + b"\r\n" + data + b"\r\n" for size, data in parts)
    ),
)
answers = st.one_of(
    st.tuples(_status, st.lists(_header, max_size=6), _body).map(
        lambda t: t[0] + b"\r\n" + b"".join(h + b"\r\n" for h in t[1]) + b"\r\n" + t[2]
    ),
    st.binary(max_size=300),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=answers)
def test_any_answer_is_a_bounded_reply_or_an_oserror(answering: Answering, raw: bytes) -> None:
    answering.answers.put(raw)
    begun = time.monotonic()
    try:
        reply = post(answering.port, timeout=2.0)
    except OSError:
        return  # ProtocolError, TimeoutError, a reset: what the exporter reports and retries or not
    assert 100 <= reply.status <= 999 and len(reply.body) <= MAX_BODY
    assert all(isinstance(k, str) and k == k.lower() and isinstance(v, str) for k, v in reply.headers.items())
    del begun
