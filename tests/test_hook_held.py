"""The held hooks' socket (``hook_held``) and the command hook that waits on it (``hook_ask``): a request is held
until answered, what is not a hook's request is closed unanswered, and the hook fails closed whenever no answer
comes."""

from __future__ import annotations

import json
import os
import select
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch.providers.claude_hooks import tool_refusal
from agentlaunch.providers.native import hook_held
from agentlaunch.providers.native.hook_ask import MARK, ask, refusal
from agentlaunch.providers.native.hook_held import MAX_BODY, HeldHook, HeldHooks, same_user


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="alhd-") as name:  # short: it holds a socket
        os.chmod(name, 0o700)
        yield Path(name)


def connect(path: Path, data: bytes | None = None, close_write: bool = True) -> socket.socket:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(10)
    client.connect(str(path))
    if data is not None:
        client.sendall(data)
    if close_write:
        client.shutdown(socket.SHUT_WR)
    return client


def framed(event: str, body: bytes = b"{}") -> bytes:
    """A request as hook_ask sends it: its body's length in the header, the hook's side left open."""
    return json.dumps({"event": event, "length": len(body)}).encode() + b"\n" + body


def receive(server: HeldHooks, rounds: int = 30) -> list[HeldHook]:
    found: list[HeldHook] = []
    for _ in range(rounds):
        select.select(server.filenos(), [], [], 0.05)
        found += server.receive()
        if found:
            break
    return found


def closed_unanswered(client: socket.socket) -> bool:
    return client.recv(100) == b""


def test_a_request_is_held_until_answered_and_the_answer_starts_with_the_mark(folder: Path) -> None:
    server = HeldHooks(folder / "t-held.sock")
    try:
        assert (folder / "t-held.sock").stat().st_mode & 0o777 == 0o600
        client = connect(folder / "t-held.sock", b'{"event": "PermissionRequest"}\n{"tool_name": "Bash"}')
        (hook,) = receive(server)
        assert (hook.event, hook.body) == ("PermissionRequest", b'{"tool_name": "Bash"}')
        assert not select.select([client], [], [], 0.2)[0]  # held
        server.answer(hook.reply, '{"decision": "allow"}')
        assert client.recv(1000) == MARK + b'{"decision": "allow"}'
        server.answer(hook.reply, "twice")  # answered once: a second answer goes nowhere
    finally:
        server.close()
    assert not (folder / "t-held.sock").exists()


@pytest.mark.parametrize(
    "data",
    [
        b"",  # nothing
        b"no header line",  # no newline
        b"not json\n{}",
        b'["event"]\n{}',
        b'{"event": 7}\n{}',
        b'{"event": "../gate"}\n{}',  # not a plain name
        b'{"event": "' + b"x" * 400 + b'"}\n{}',  # a header over MAX_HEAD
        b"\xff\xfe\n{}",
    ],
)
def test_what_is_not_a_hooks_request_is_closed_unanswered(folder: Path, data: bytes) -> None:
    server = HeldHooks(folder / "t-held.sock")
    try:
        client = connect(folder / "t-held.sock", data)
        assert receive(server, rounds=10) == []
        assert closed_unanswered(client)
    finally:
        server.close()


def test_a_body_over_the_limit_is_read_to_its_end_and_dropped(folder: Path) -> None:
    server = HeldHooks(folder / "t-held.sock")
    try:
        client = connect(folder / "t-held.sock", close_write=False)
        sender = threading.Thread(
            target=lambda: (
                client.sendall(b'{"event": "PreToolUse"}\n' + b"x" * (MAX_BODY + 10)),
                client.shutdown(socket.SHUT_WR),
            )
        )
        sender.start()
        found: list[HeldHook] = []
        for _ in range(2000):
            select.select(server.filenos(), [], [], 0.05)
            found += server.receive()
            if found:
                break
        sender.join(10)
        (hook,) = found
        assert hook.event == "PreToolUse" and hook.body is None
    finally:
        server.close()


def test_a_request_longer_than_its_header_says_is_closed_unanswered(folder: Path) -> None:
    server = HeldHooks(folder / "t-held.sock")
    try:
        client = connect(folder / "t-held.sock", framed("PreToolUse") + b"more", close_write=False)
        assert receive(server, rounds=10) == []
        assert closed_unanswered(client)
    finally:
        server.close()


def test_a_silent_connection_is_closed_after_the_request_wait_and_a_held_one_after_the_hold_wait(folder: Path) -> None:
    clock = Clock()
    server = HeldHooks(folder / "t-held.sock", clock=clock)
    try:
        silent = connect(folder / "t-held.sock", close_write=False)
        held = connect(folder / "t-held.sock", b'{"event": "PreToolUse"}\n{}')
        (hook,) = receive(server)
        assert server.deadline() == clock.now + hook_held.REQUEST_WAIT
        clock.now += hook_held.REQUEST_WAIT
        server.receive()
        assert closed_unanswered(silent)
        assert not select.select([held], [], [], 0.1)[0]
        clock.now += hook_held.HOLD_WAIT
        server.receive()
        assert closed_unanswered(held)  # the hook then refuses the tool itself
        server.answer(hook.reply, "late")  # nothing to answer any more
    finally:
        server.close()


def test_a_hook_that_goes_away_while_held_is_dropped(folder: Path) -> None:
    server = HeldHooks(folder / "t-held.sock")
    try:
        client = connect(folder / "t-held.sock", framed("PreToolUse"), close_write=False)
        (hook,) = receive(server)
        assert len(server.filenos()) == 2  # the listener, and the held hook's connection: for its hang-up
        assert select.select(server.filenos(), [], [], 0.05)[0] == []  # while it waits: not ready (no busy loop)
        client.close()
        for _ in range(20):
            select.select(server.filenos(), [], [], 0.05)
            server.receive()
        assert server.deadline() is None  # nothing held
        server.answer(hook.reply, "")  # no one to tell: no error
    finally:
        server.close()


def test_an_answer_to_a_hook_gone_before_the_next_receive_is_not_taken(folder: Path) -> None:
    """Claude Code kills the held hook when the person answers in its dialog; an answer sent before the launch's next
    receive saw it go says it was not taken (``answer`` exits 10, "answered meanwhile"), never "denied"."""
    server = HeldHooks(folder / "t-held.sock")
    try:
        client = connect(folder / "t-held.sock", framed("PermissionRequest"), close_write=False)
        (hook,) = receive(server)
        live = connect(folder / "t-held.sock", framed("PermissionRequest"), close_write=False)
        (other,) = receive(server)
        client.close()  # no receive after this
        assert server.answer(hook.reply, "{}") is False
        assert server.answer(hook.reply, "{}") is False  # and it is no longer held
        assert server.answer(other.reply, "{}") is True  # a hook still there takes its answer
        assert live.recv(100) == MARK + b"{}"
    finally:
        server.close()


def test_connections_past_the_limit_are_closed_at_once(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hook_held, "MAX_CONNECTIONS", 3)
    server = HeldHooks(folder / "t-held.sock")
    try:
        kept = [connect(folder / "t-held.sock", close_write=False) for _ in range(3)]
        select.select(server.filenos(), [], [], 0.5)
        server.receive()
        extra = connect(folder / "t-held.sock", close_write=False)
        select.select(server.filenos(), [], [], 0.5)
        server.receive()
        assert closed_unanswered(extra)
        assert not select.select(kept, [], [], 0.1)[0]
    finally:
        server.close()


def test_the_peer_is_this_user(folder: Path) -> None:
    one, two = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with one, two:
        assert same_user(one)


def test_ask_prints_the_answer_after_the_mark(folder: Path) -> None:
    server = HeldHooks(folder / "t-held.sock")
    got: list[str] = []
    try:
        asker = threading.Thread(target=lambda: got.append(ask(str(folder / "t-held.sock"), "PreToolUse", b"{}")))
        asker.start()
        (hook,) = receive(server, rounds=200)
        server.answer(hook.reply, "")
        asker.join(10)
        assert got == [""]  # nothing printed: the tool runs
    finally:
        server.close()


def _listening(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen(1)
    return sock


def test_ask_fails_closed_for_a_tool_and_open_for_anything_else(folder: Path) -> None:
    missing = str(folder / "none.sock")
    refused = json.loads(ask(missing, "PreToolUse", b"{}"))
    assert refused == json.loads(refusal(refused["stopReason"]))
    assert refused == tool_refusal(refused["stopReason"])  # the same refusal the launch gives
    assert "cannot reach the launch" in refused["stopReason"]
    assert ask(missing, "PermissionRequest", b"{}") == ""  # Claude Code shows its own dialog
    with _listening(folder / "mute.sock") as mute:  # takes the request, never answers
        late = json.loads(ask(str(folder / "mute.sock"), "PreToolUse", b"{}", wait=0.3))
        assert "none within 0.3 s" in late["stopReason"] and late["continue"] is False
        del mute
    with _listening(folder / "rude.sock") as rude:  # answers without the mark

        def answer_wrongly() -> None:
            conn = rude.accept()[0]
            conn.recv(1000)  # the request (its side stays open: its length says where it ends)
            conn.sendall(b"HTTP/1.1 200 OK\r\n\r\n")
            conn.close()

        threading.Thread(target=answer_wrongly, daemon=True).start()
        odd = json.loads(ask(str(folder / "rude.sock"), "PreToolUse", b"{}", wait=5))
        assert "closed without answering" in odd["stopReason"]


def test_the_early_start_binds_the_held_socket_as_a_listening_stream_socket_the_launch_takes_over(folder: Path) -> None:
    from agentlaunch.launch.early import early_interface

    path = folder / "claude-held.sock"
    bound = early_interface._bind(path)  # noqa: SLF001
    assert bound.type == socket.SOCK_STREAM and path.stat().st_mode & 0o777 == 0o600
    with early_interface._bind(folder / "claude.sock") as datagrams:  # noqa: SLF001
        assert datagrams.type == socket.SOCK_DGRAM
    server = HeldHooks(path, bound)
    try:
        client = connect(path, b'{"event": "PreToolUse"}\n{}')
        (hook,) = receive(server)
        server.answer(hook.reply, "")
        assert client.recv(100) == MARK
    finally:
        server.close()
