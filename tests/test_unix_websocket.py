"""The product's WebSocket client on a Unix socket (``providers/native/unix_websocket.py``) against a peer
that sends chosen bytes: messages cut into any frames reassemble, thousands of frames in one burst all
arrive, and a message past :data:`MAX_MESSAGE` is refused with a close frame of code 1009 and a reason."""

from __future__ import annotations

import json
import select
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlaunch.providers.native import unix_websocket
from agentlaunch.providers.native.unix_websocket import MAX_MESSAGE, TOO_BIG, Closed, UnixWebSocket


def frame(opcode: int, data: bytes, final: bool = True) -> bytes:
    """A server's frame (unmasked, as a server's are)."""
    n = len(data)
    first = (0x80 if final else 0) | opcode
    if n < 126:
        return struct.pack(">BB", first, n) + data
    if n < 1 << 16:
        return struct.pack(">BBH", first, 126, n) + data
    return struct.pack(">BBQ", first, 127, n) + data


def fragments(data: bytes, cuts: list[int]) -> bytes:
    """``data`` as one text message cut at ``cuts``: a text frame, then continuation frames, the last final."""
    points = [0, *sorted({c for c in cuts if 0 < c < len(data)}), len(data)]
    parts = [data[a:b] for a, b in zip(points, points[1:], strict=False)]
    return b"".join(frame(0x1 if i == 0 else 0x0, part, i == len(parts) - 1) for i, part in enumerate(parts))


def client_frames(data: bytes) -> list[tuple[int, bytes]]:
    """The (opcode, unmasked payload) of each whole frame the client sent."""
    out, at = [], 0
    while at + 2 <= len(data):
        b0, b1 = data[at], data[at + 1]
        n, at = b1 & 0x7F, at + 2
        if n == 126:
            n, at = struct.unpack(">H", data[at : at + 2])[0], at + 2
        elif n == 127:
            n, at = struct.unpack(">Q", data[at : at + 8])[0], at + 8
        mask, at = data[at : at + 4], at + 4
        out.append((b0 & 0x0F, bytes(b ^ mask[i % 4] for i, b in enumerate(data[at : at + n]))))
        at += n
    return out


class Peer:
    """A socket that answers the upgrade, sends ``chunks`` one ``sendall`` each, and keeps what the client sends."""

    def __init__(self, path: Path, chunks: list[bytes]) -> None:
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(1)
        self.chunks = chunks
        self.got = b""
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            conn.settimeout(30)
            while b"\r\n\r\n" not in self.got:
                self.got += conn.recv(4096)
            self.got = self.got.split(b"\r\n\r\n", 1)[1]
            conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
            try:
                for chunk in self.chunks:
                    conn.sendall(chunk)
            except OSError:  # the client ended the connection before it had everything (it refused a message)
                pass
            try:
                while chunk := conn.recv(1 << 16):  # what the client sent, until it closes
                    self.got += chunk
            except OSError:
                pass
        self.done.set()

    def close(self) -> None:
        self.listener.close()


@contextmanager
def connected(tmp_path: Path, chunks: list[bytes]) -> Iterator[tuple[UnixWebSocket, Peer]]:
    path = tmp_path / "ws.sock"
    path.unlink(missing_ok=True)
    peer = Peer(path, chunks)
    ws = UnixWebSocket(str(path), 10.0)
    try:
        yield ws, peer
    finally:
        ws.close()
        assert peer.done.wait(10), "the peer did not see the connection end"
        peer.close()


def read_all(ws: UnixWebSocket, count: int) -> list[dict[str, Any]]:
    """Messages until ``count`` arrived or the connection ended (each wait for more data at most 10 s)."""
    out = ws.receive()  # frames that came with the upgrade's answer are in the buffer already
    while len(out) < count and not ws.closed:
        if not select.select([ws], [], [], 10)[0]:
            raise AssertionError(f"no more data after {len(out)} of {count} messages")
        out += ws.receive()
    return out


def test_thousands_of_small_frames_in_one_burst_all_arrive_in_order(tmp_path: Path) -> None:
    messages = [{"method": "item/agentMessage/delta", "params": {"delta": str(i)}} for i in range(5000)]
    stream = b"".join(frame(0x1, json.dumps(m).encode()) for m in messages)
    with connected(tmp_path, [stream]) as (ws, _):
        assert read_all(ws, len(messages)) == messages
        assert not ws.closed


def test_a_message_in_thousands_of_continuation_frames_is_one_message(tmp_path: Path) -> None:
    text = json.dumps({"id": 1, "result": {"history": "x" * 6000}}).encode()
    stream = fragments(text, list(range(1, len(text), 2)))  # two bytes a frame: 3,000 frames
    with connected(tmp_path, [stream, frame(0x1, b'{"id": 2}')]) as (ws, _):
        assert read_all(ws, 2) == [json.loads(text), {"id": 2}]


def test_pings_between_fragments_are_answered_and_binary_messages_skipped(tmp_path: Path) -> None:
    text = b'{"method": "turn/completed"}'
    stream = (
        frame(0x2, b"\x00\x01", final=False)
        + frame(0x0, b"\x02")  # a binary message, fragmented: skipped
        + frame(0x1, text[:5], final=False)
        + frame(0x9, b"hi")
        + frame(0x0, text[5:9], final=False)
        + frame(0x0, text[9:])
    )
    with connected(tmp_path, [stream]) as (ws, peer):
        assert read_all(ws, 1) == [json.loads(text)]
        ws.close()
        assert peer.done.wait(10)
    assert client_frames(peer.got)[0] == (0xA, b"hi")


def test_a_fragmented_message_past_the_limit_is_refused_with_code_1009(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unix_websocket, "MAX_MESSAGE", 4096)
    part = b"y" * 1000
    # Five fragments of 1,000 bytes and no final one: without the bound they would be kept for ever.
    stream = frame(0x1, b'{"a": "' + part, final=False) + b"".join(frame(0x0, part, final=False) for _ in range(5))
    with connected(tmp_path, [stream, frame(0x1, b'{"id": 9}')]) as (ws, peer):
        assert read_all(ws, 1) == []
        assert ws.closed
        assert ws.reason is not None and "more than 4096 bytes" in ws.reason and "1009" in ws.reason
        with pytest.raises(Closed, match="more than 4096 bytes"):
            ws.call({"id": 3, "method": "thread/read"}, 1.0, [])
    opcode, payload = client_frames(peer.got)[0]
    assert opcode == 0x8 and struct.unpack(">H", payload[:2])[0] == TOO_BIG


def test_a_frame_header_announcing_more_than_the_limit_is_refused_before_its_payload(tmp_path: Path) -> None:
    # 2**40 bytes announced, none sent: refused at the header, never a MemoryError nor a wait for the payload.
    with connected(tmp_path, [struct.pack(">BBQ", 0x81, 127, 1 << 40)]) as (ws, peer):
        assert read_all(ws, 1) == []
        assert ws.closed and ws.reason is not None and f"more than {MAX_MESSAGE} bytes" in ws.reason
    assert client_frames(peer.got)[0][0] == 0x8


def test_messages_up_to_the_limit_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unix_websocket, "MAX_MESSAGE", 4096)
    text = json.dumps({"id": 1, "result": "z" * (4096 - 23)}).encode()
    assert len(text) == 4096
    with connected(tmp_path, [fragments(text, [1000, 2000, 3000])]) as (ws, _):
        assert read_all(ws, 1) == [json.loads(text)]
        assert not ws.closed and ws.reason is None


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@st.composite
def cut_messages(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[bytes]]:
    """Messages, each cut into frames at drawn points, and the byte stream cut into drawn ``sendall`` chunks."""
    messages = draw(st.lists(st.dictionaries(st.text(max_size=8), _json, min_size=1, max_size=4), min_size=1, max_size=8))
    stream = b""
    for m in messages:
        text = json.dumps(m).encode()
        stream += fragments(text, draw(st.lists(st.integers(0, len(text)), max_size=12)))
    cuts = sorted(set(draw(st.lists(st.integers(1, max(len(stream) - 1, 1)), max_size=10))))
    points = [0, *cuts, len(stream)]
    return messages, [stream[a:b] for a, b in zip(points, points[1:], strict=False) if b > a]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cut_messages())
def test_any_fragmentation_reassembles_the_messages(tmp_path: Path, case: tuple[list[dict[str, Any]], list[bytes]]) -> None:
    messages, chunks = case
    with connected(tmp_path, chunks) as (ws, _):
        assert read_all(ws, len(messages)) == messages
