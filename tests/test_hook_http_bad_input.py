"""The http hooks' server against requests that are almost right: a bad request line or length, a body cut short or
announced without end, two requests in one write, a request sent in any pieces. Each is refused, dropped or taken
whole (never half of one, never two from one connection), and the connection ends."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlaunch.providers.native.hook_http import HookServer, HttpHook
from tests.test_hook_http import KEY, answer_of, connect, pump, request

STOP = request("/Stop", b'{"a": 1}')


@pytest.fixture
def server() -> Iterator[HookServer]:
    served = HookServer(KEY)
    yield served
    served.close()


@pytest.mark.parametrize(
    "line",
    [
        b"POST",
        b"POST /Stop",
        b"POST /Stop HTTP/1.1 more",
        b"POST  /Stop HTTP/1.1",
        b"POST /Stop HTTP/x.y",
        b"\x00\x01\x02",
        b"POST /St op HTTP/1.1",
        b"PO\x7fST /Stop HTTP/1.1",
        b" POST /Stop HTTP/1.1",
    ],
)
def test_a_malformed_request_line_is_answered_400_and_reports_nothing(server: HookServer, line: bytes) -> None:
    with connect(server) as client:
        client.sendall(line + b"\r\nHost: 127.0.0.1\r\nX-Agentlaunch-Key: " + KEY.encode() + b"\r\nContent-Length: 0\r\n\r\n")
        assert pump(server, rounds=10) == []
        assert answer_of(client).split(b" ")[1] == b"400"
    assert not server._conns


@pytest.mark.parametrize("length", [b"abc", b"-1", b"5, 6", b"1e3", b" ", b"99999999999999999999999999999"])
def test_a_bad_content_length_is_refused(server: HookServer, length: bytes) -> None:
    with connect(server) as client:
        client.sendall(STOP.replace(b"Content-Length: 8", b"Content-Length: " + length))
        assert pump(server, rounds=10) == []
        status = answer_of(client).split(b" ")[1]
    assert status in (b"400", b"411") and not server._conns  # 99...9 digits: read as announced, then cut short


def test_a_body_cut_short_reports_nothing_and_ends_the_connection(server: HookServer) -> None:
    with connect(server) as client:
        client.sendall(STOP.replace(b"Content-Length: 8", b"Content-Length: 100"))
        client.shutdown(socket.SHUT_WR)  # 8 bytes of the 100 announced, then the client's end
        assert pump(server, rounds=10) == []
        assert answer_of(client) == b""
    assert not server._conns


def test_a_body_announced_without_end_is_dropped_at_the_deadline_holding_nothing(server: HookServer) -> None:
    clock = [0.0]
    server.clock = lambda: clock[0]
    with connect(server) as client:
        client.sendall(STOP.replace(b"Content-Length: 8", b"Content-Length: 1000000000000") + b"x" * 100_000)
        assert pump(server, rounds=10, until=1) == []
        (conn,) = server._conns.values()
        assert len(conn.body) <= 100_008  # what came, no more: nothing sized by the announced length
        clock[0] = 1000.0
        assert server.receive() == [] and not server._conns
        assert answer_of(client) == b""


def test_two_requests_in_one_write_give_the_first_only(server: HookServer) -> None:
    with connect(server) as client:
        client.sendall(STOP + request("/Notification", b'{"b": 2}'))
        hooks = pump(server, rounds=10, until=2)
        answer = answer_of(client)
    assert [(h.event, h.body) for h in hooks] == [("Stop", b'{"a": 1}')]
    assert answer.count(b"HTTP/1.1") == 1 and answer.startswith(b"HTTP/1.1 200") and not server._conns


@settings(max_examples=40, deadline=None)
@given(
    body=st.binary(max_size=600),
    announced=st.one_of(st.none(), st.integers(min_value=0, max_value=700)),
    cuts=st.lists(st.integers(min_value=1, max_value=900), max_size=6),
)
def test_a_request_in_any_pieces_with_any_length_is_taken_whole_or_not_at_all(
    body: bytes, announced: int | None, cuts: list[int]
) -> None:
    data = request("/Notification", body)
    if announced is not None:
        data = data.replace(f"Content-Length: {len(body)}".encode(), f"Content-Length: {announced}".encode())
    served = HookServer(KEY)
    hooks: list[HttpHook] = []
    try:
        with connect(served) as client:
            at = 0
            for cut in sorted(set(cuts)):
                client.sendall(data[at:cut])
                at = max(at, cut)
                hooks += served.receive()
            client.sendall(data[at:])
            client.shutdown(socket.SHUT_WR)
            hooks += pump(served, rounds=5)
    finally:
        served.close()
    length = len(body) if announced is None else announced
    if length <= len(body):
        assert [(h.event, h.body) for h in hooks] == [("Notification", body[:length])]
    else:
        assert hooks == []  # cut short: never half a request
