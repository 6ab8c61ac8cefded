"""The http hooks' server: what Claude Code POSTs reaches the launch, held gates are answered, and nothing a local
client sends (no key, garbage, huge, slow, gone early) can hurt the launch or inject a report."""

from __future__ import annotations

import json
import select
import socket
import threading
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlaunch.providers.native import hook_http
from agentlaunch.providers.native.claude_source import http_report
from agentlaunch.providers.native.hook_http import HookServer, HttpHook
from agentlaunch.providers.native.hook_socket import HookReport
from tests.support.claude_native_replay import Clock

KEY = "k" * 32


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def server(clock: Clock) -> Iterator[HookServer]:
    served = HookServer(KEY, clock=clock)
    yield served
    served.close()


def request(path: str, body: bytes, key: str | None = KEY, extra: str = "") -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    if key is not None:
        head += f"X-Agentlaunch-Key: {key}\r\n"
    return (head + extra + "\r\n").encode() + body


def connect(server: HookServer) -> socket.socket:
    client = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    return client


def pump(server: HookServer, until: int = 1, rounds: int = 50) -> list[HttpHook]:
    """Read what the server has until ``until`` requests came (or ``rounds`` waits of the loop passed)."""
    found: list[HttpHook] = []
    for _ in range(rounds):
        select.select([server.fileno()], [], [], 0.1)
        found += server.receive()
        if len(found) >= until:
            break
    return found


def answer_of(client: socket.socket) -> bytes:
    data = b""
    while chunk := client.recv(65536):
        data += chunk
    return data


def test_a_report_is_answered_at_once_and_closed(server: HookServer) -> None:
    payload = {"hook_event_name": "Stop", "session_id": "s1", "last_assistant_message": "Done."}
    with connect(server) as client:
        client.sendall(request("/Stop", json.dumps(payload).encode()))
        (hook,) = pump(server)
        assert answer_of(client).startswith(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n")
    assert (hook.event, hook.reply) == ("Stop", None)
    assert http_report(hook) == HookReport("Stop", payload)


def test_the_server_listens_on_loopback_only_with_a_port_the_os_chose(server: HookServer) -> None:
    assert server.url("Stop") == f"http://127.0.0.1:{server.port}/Stop" and server.port > 0
    assert server.url("PreToolUse", gate=True) == f"http://127.0.0.1:{server.port}/gate/PreToolUse"
    assert server._listener.getsockname()[0] == "127.0.0.1"


@pytest.mark.parametrize(
    ("data", "status"),
    [
        (request("/Stop", b"{}", key=None), b"403"),
        (request("/Stop", b"{}", key="x" * 32), b"403"),
        (request("/Stop", b"{}", key=KEY[:-1]), b"403"),
        (b"GET /Stop HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Agentlaunch-Key: " + KEY.encode() + b"\r\n\r\n", b"405"),
        (b"garbage\r\n\r\n", b"400"),
        (b"POST /Stop HTTP/1.1\r\nno colon here\r\n\r\n", b"400"),
        (b"POST /Stop HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Agentlaunch-Key: " + KEY.encode() + b"\r\n\r\n", b"411"),
        (request("/Stop", b"{}").replace(b"Host: 127.0.0.1\r\n", b""), b"400"),  # HTTP/1.1 without Host (RFC 9112)
        (request("/Stop", b"{}", extra="Transfer-Encoding: chunked\r\n"), b"400"),
        (request("/../etc", b"{}"), b"400"),
        (request("/", b"{}"), b"400"),
        (request("/gate/", b"{}"), b"400"),
        (b"POST /Stop HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * (hook_http.MAX_HEAD + 10) + b"\r\n\r\n", b"431"),
        (b"POST /Stop HTTP/1.1\r\n" + b"a" * (hook_http.MAX_HEAD + 10), b"431"),
    ],
)
def test_requests_without_the_key_or_not_a_hooks_are_refused_and_report_nothing(
    server: HookServer, data: bytes, status: bytes
) -> None:
    with connect(server) as client:
        client.sendall(data)
        assert pump(server, rounds=10) == []
        assert answer_of(client).split(b" ")[1] == status
    assert not server._conns


def test_a_body_over_the_limit_is_read_to_its_end_and_reported_without_payload(
    server: HookServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hook_http, "MAX_BODY", 1000)
    body = json.dumps({"session_id": "s1", "tool_input": {"content": "x" * 200_000}}).encode()
    with connect(server) as client:
        sender = threading.Thread(target=client.sendall, args=(request("/PreToolUse", body),))
        sender.start()
        (hook,) = pump(server, rounds=100)
        sender.join()
        assert answer_of(client).startswith(b"HTTP/1.1 200")
    assert hook.body is None and http_report(hook) == HookReport("PreToolUse", {}, truncated=True)


def test_a_slow_client_is_closed_at_its_deadline_and_a_client_gone_early_reports_nothing(
    server: HookServer, clock: Clock
) -> None:
    body = b'{"session_id": "s1"}'
    with connect(server) as slow, connect(server) as gone:
        slow.sendall(request("/Stop", body)[:20])
        gone.sendall(request("/Stop", body)[:-5])
        gone.shutdown(socket.SHUT_WR)
        assert pump(server, rounds=10) == []
        assert len(server._conns) == 1 and server.deadline() == 100.0 + hook_http.REQUEST_WAIT
        clock.now += hook_http.REQUEST_WAIT
        assert server.receive() == []
        assert answer_of(slow) == b"" and not server._conns and server.deadline() is None


def test_a_gate_is_held_until_answered(server: HookServer) -> None:
    with connect(server) as client:
        client.sendall(request("/gate/PreToolUse", b'{"tool_use_id": "toolu_1"}'))
        (hook,) = pump(server)
        assert hook.event == "PreToolUse" and hook.reply is not None
        client.settimeout(0.2)
        with pytest.raises(TimeoutError):
            client.recv(10)  # the tool waits for the launch's answer
        client.settimeout(10)
        server.answer(hook.reply, '{"continue": false}')
        reply = answer_of(client)
    assert reply.startswith(b"HTTP/1.1 200 OK\r\nContent-Length: 19\r\n") and reply.endswith(b'\r\n\r\n{"continue": false}')
    server.answer(hook.reply, "again")  # answered once only
    assert not server._held


def test_a_gate_whose_client_gave_up_or_that_waited_too_long_is_dropped(server: HookServer, clock: Clock) -> None:
    with connect(server) as quitter, connect(server) as waiter:
        quitter.sendall(request("/gate/PreToolUse", b"{}"))
        waiter.sendall(request("/gate/PreToolUse", b"{}"))
        hooks = pump(server, until=2)
        assert len(hooks) == 2 and len(server._held) == 2
        quitter.close()  # Claude Code's hook timed out
        pump(server, until=1, rounds=5)
        assert len(server._held) == 1
        clock.now += hook_http.HOLD_WAIT
        server.receive()
        assert not server._held and answer_of(waiter) == b""
        for hook in hooks:
            assert hook.reply is not None
            server.answer(hook.reply, "")  # late answers go nowhere


def test_connections_past_the_limit_are_closed(server: HookServer) -> None:
    clients: list[socket.socket] = []
    try:
        for _ in range(hook_http.MAX_CONNECTIONS + 5):
            clients.append(connect(server))
            pump(server, rounds=1)
        assert len(server._conns) == hook_http.MAX_CONNECTIONS
        assert answer_of(clients[-1]) == b""  # closed at once
    finally:
        for client in clients:
            client.close()


def exchange(data: bytes, shut: bool) -> list[HttpHook]:
    """``data`` sent to a new server (then the client's half closed when ``shut``): the requests it took."""
    served = HookServer(KEY)
    try:
        with connect(served) as client:
            client.sendall(data)
            if shut:
                client.shutdown(socket.SHUT_WR)
            return pump(served, rounds=3 if shut else 50)
    finally:
        served.close()


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=3000))
def test_any_bytes_are_answered_or_dropped_and_never_raise(data: bytes) -> None:
    for hook in exchange(data, shut=True):
        http_report(hook)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=2000))
def test_any_body_with_the_key_makes_a_report(body: bytes) -> None:
    (hook,) = exchange(request("/Notification", body), shut=False)
    report = http_report(hook)
    assert report.event == "Notification" and isinstance(report.payload, dict)


def test_the_cli_reaches_the_hooks_past_a_proxy_and_the_users_own_bypass_list_is_kept() -> None:
    past = hook_http.past_proxies
    assert past({}) == {"no_proxy": "127.0.0.1", "NO_PROXY": "127.0.0.1"}
    # One of the two set: both carry it (a client reading the other first would find an empty list).
    both = ("no_proxy", "NO_PROXY")
    assert past({"NO_PROXY": "corp.example, localhost"}) == dict.fromkeys(both, "corp.example, localhost,127.0.0.1")
    assert past({"no_proxy": "a", "NO_PROXY": "b"}) == {"no_proxy": "a,127.0.0.1", "NO_PROXY": "b,127.0.0.1"}
    assert past({"no_proxy": " 127.0.0.1 ,x"}) == dict.fromkeys(both, " 127.0.0.1 ,x")  # named already


@given(st.dictionaries(st.sampled_from(["no_proxy", "NO_PROXY", "HTTP_PROXY"]), st.text(max_size=40)))
def test_any_bypass_list_keeps_its_entries_and_gains_loopback(env: dict[str, str]) -> None:
    got = hook_http.past_proxies(env)
    for var in ("no_proxy", "NO_PROXY"):
        entries = [part.strip() for part in got[var].split(",")]
        assert hook_http.HOST in entries
        own = env.get(var) or env.get("no_proxy") or env.get("NO_PROXY") or ""
        assert got[var].startswith(own)
