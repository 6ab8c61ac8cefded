"""The control socket `agentlaunch send` talks to (agentlaunch.launch.control); the send command: test_send_command.py.

The socket is driven in-process: a ControlServer in a temporary folder on a loop that a thread of the
test runs, as the launch's thread would; the test plays the launch's part (taking and answering
requests) and the clients'.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlaunch.launch import control, control_request
from agentlaunch.launch.control import MAX_QUEUED, ControlServer, SendRequest
from agentlaunch.launch.control_client import ControlClient
from agentlaunch.launch.control_door import busy_reason
from agentlaunch.launch.control_request import Parsed, command_problem, parse_request, prompt_problem
from agentlaunch.launch.loop import Loop
from tests.support.control_socket import serve, server, take_one
from tests.support.waits import wait_for

__all__ = ["server"]  # the fixture, used by name


def raw_request(path: Path, data: bytes, *, close_write: bool = True) -> dict[str, Any]:
    """Send ``data`` as it is and read the first reply line."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(10)
        conn.connect(str(path))
        conn.sendall(data)
        if close_write:
            conn.shutdown(socket.SHUT_WR)
        reply = b""
        while b"\n" not in reply:
            chunk = conn.recv(65536)
            if not chunk:
                break
            reply += chunk
    return dict(json.loads(reply))


# -- the protocol ------------------------------------------------------------------------------


def accepted(server: ControlServer, prompt: str, wait: bool) -> tuple[ControlClient, SendRequest, dict[str, Any] | None]:
    """A client whose request the session took: the client, the request as the session sees it, the first reply."""
    client = ControlClient(str(server.path))
    replies: list[dict[str, Any] | None] = []
    thread = threading.Thread(target=lambda: replies.append(client.request(prompt, wait)))
    thread.start()
    request = take_one(server)
    request.accept("sess-1")
    thread.join(10)
    return client, request, replies[0]


def test_a_prompt_is_accepted_then_answered_with_the_turns_figures(server: ControlServer) -> None:
    client, request, first = accepted(server, "hello\nthere", True)
    assert (request.prompt, request.wait) == ("hello\nthere", True)
    assert first == {"ok": True, "session_id": "sess-1"}
    request.answer(exit_code=0, answer="Hi.", usage={"input": 3, "output": 2}, cost_usd=0.01)
    assert client.reply(10) == {
        "done": True,
        "exit_code": 0,
        "answer": "Hi.",
        "error": None,
        "usage": {"input": 3, "output": 2},
        "cost_usd": 0.01,
    }
    assert client.reply(10) is None  # and the session hung up
    client.close()
    assert oct(server.path.stat().st_mode & 0o777) == "0o600"


def test_without_wait_the_accept_is_the_last_word(server: ControlServer) -> None:
    client, _, first = accepted(server, "hi", False)
    assert first == {"ok": True, "session_id": "sess-1"}
    assert client.reply(10) is None
    client.close()


def test_a_client_that_waits_for_an_answer_that_never_comes_times_out(server: ControlServer) -> None:
    client, _, _ = accepted(server, "hi", True)
    with pytest.raises(TimeoutError):
        client.reply(0.2)
    client.close()


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"not json\n", "not a JSON line"),
        (b"\xff\xfe\n", "not a JSON line"),
        (b"[1, 2]\n", "not a JSON object"),
        (b'{"wait": true}\n', "no prompt string"),
        (b'{"prompt": 5}\n', "no prompt string"),
        (b'{"prompt": "hi", "wait": "yes"}\n', "wait is not true or false"),
        (b'{"prompt": "   "}\n', "the prompt is empty"),
        (b'{"prompt": "a\\u001b[201~b"}\n', "control character"),
        (b'{"prompt": "bell\\u0007"}\n', "control character"),
        (b'{"prompt": "csi\\u009b"}\n', "control character"),
        (b'{"prompt": "a"}\n{"prompt": "b"}\n', "one request per connection"),
        (b"[" * 100_000 + b"\n", "not a JSON"),
    ],
)
def test_a_bad_request_is_refused_with_its_reason_and_never_reaches_the_session(
    server: ControlServer, data: bytes, said: str
) -> None:
    reply = raw_request(server.path, data)
    assert reply["ok"] is False and said in reply["error"]
    assert server.take() == []


def test_a_request_over_the_limit_is_refused(server: ControlServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(control, "MAX_REQUEST", 1000)
    reply = raw_request(server.path, b'{"prompt": "' + b"x" * 5000 + b'"}\n', close_write=False)
    assert reply["ok"] is False and "over 1,000 bytes" in reply["error"]


def test_a_prompt_over_the_limit_is_refused() -> None:
    assert prompt_problem("x" * (control_request.MAX_PROMPT + 1)) == (
        f"the prompt is {control_request.MAX_PROMPT + 1:,} bytes; a session takes at most {control_request.MAX_PROMPT:,}"
    )
    assert prompt_problem("x" * control_request.MAX_PROMPT) is None


def test_a_client_that_never_writes_is_hung_up_on_and_the_next_one_is_served(
    server: ControlServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(control, "REQUEST_WAIT", 0.3)
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.connect(str(server.path))
    later = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    later.connect(str(server.path))
    later.sendall(b'{"prompt": "after the silent one"}\n')
    request = take_one(server)  # served once the silent client was refused (after REQUEST_WAIT)
    assert request.prompt == "after the silent one"
    silent.settimeout(5)
    assert json.loads(silent.recv(1000)) == {"ok": False, "error": "no request within 0.3s", "state": None}
    silent.close()
    request.accept("s")
    later.close()


def test_the_gate_refuses_at_once_on_the_thread(tmp_path: Path) -> None:
    made = serve(tmp_path / "c.sock", gate=lambda: "demo is in a turn (thinking); send again once it is waiting")
    try:
        reply = raw_request(made.path, b'{"prompt": "hi"}\n')
        assert reply == {"ok": False, "error": "demo is in a turn (thinking); send again once it is waiting", "state": None}
        assert made.take() == []
    finally:
        made.close()


def test_a_full_queue_refuses_more(server: ControlServer) -> None:
    clients = []
    for n in range(MAX_QUEUED):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(str(server.path))
        c.sendall(json.dumps({"prompt": f"p{n}"}).encode() + b"\n")
        clients.append(c)
    wait_for(lambda: len(server._queue) == MAX_QUEUED, timeout=10, what="the queue full")
    reply = raw_request(server.path, b'{"prompt": "one too many"}\n')
    assert reply["ok"] is False and "too many prompts" in reply["error"]
    for c in clients:
        c.close()


def test_closing_tells_the_prompts_not_taken_that_the_session_ended(tmp_path: Path) -> None:
    made = serve(tmp_path / "c.sock")
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(made.path))
    conn.sendall(b'{"prompt": "late"}\n')
    wait_for(made.pending, timeout=10, what="the request queued")
    made.close()
    conn.settimeout(5)
    assert json.loads(conn.recv(1000)) == {"ok": False, "error": "the session ended", "state": "exited"}
    assert not made.path.exists()
    conn.close()


def test_a_reply_to_a_client_that_left_never_raises(server: ControlServer) -> None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(server.path))
    conn.sendall(b'{"prompt": "hi", "wait": true}\n')
    request = take_one(server)
    conn.close()  # the client went away before any reply
    request.accept("s")
    request.answer(exit_code=0, answer="x" * 1_000_000)  # into a closed socket: swallowed


def test_busy_reasons_name_the_state() -> None:
    assert busy_reason("a", "waiting") is None
    assert "is asking" in (busy_reason("a", "asking") or "")
    assert "in a turn (tool)" in (busy_reason("a", "tool") or "")
    assert "still starting" in (busy_reason("a", "starting") or "")
    assert "is ending: budget" in (busy_reason("a", "waiting", "budget") or "")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_parse_request_never_raises(data: bytes) -> None:
    result = parse_request(data)
    assert isinstance(result, str) or (isinstance(result, tuple) and isinstance(result[0], str))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=200))
def test_any_printable_prompt_round_trips(text: str) -> None:
    line = json.dumps({"prompt": text, "wait": True}, ensure_ascii=False).encode()
    if text.strip():
        assert parse_request(line) == Parsed(text, True, False)
    else:
        assert parse_request(line) == "the prompt is empty"


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
FIELD = st.one_of(st.just(None), JSON_VALUES, st.text(max_size=60))  # None: the field is left out


@settings(max_examples=400, deadline=None)
@given(prompt=FIELD, wait=FIELD, command=FIELD, extra=st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=3))
def test_parse_request_takes_exactly_the_well_formed_requests(prompt: Any, wait: Any, command: Any, extra: Any) -> None:
    """A request is taken exactly when its prompt is a typable string and wait and command are booleans or left out;
    a command must then be one slash-command line. Anything else is one reason, never an exception."""
    value = {**extra, **{k: v for k, v in (("prompt", prompt), ("wait", wait), ("command", command)) if v is not None}}
    result = parse_request(json.dumps(value).encode())
    wait_ok, command_ok = value.get("wait", False), value.get("command", False)
    well_formed = (
        isinstance(value.get("prompt"), str)
        and type(wait_ok) is bool
        and type(command_ok) is bool
        and prompt_problem(value["prompt"]) is None
        and not (command_ok and command_problem(value["prompt"]))
    )
    if well_formed:
        assert result == Parsed(value["prompt"], wait_ok, command_ok)
    else:
        assert isinstance(result, str) and result


@settings(max_examples=200, deadline=None)
@given(text=st.text(min_size=1, max_size=80), cut=st.integers(min_value=0, max_value=200))
def test_a_request_line_cut_anywhere_arrives_whole_or_is_refused_whole(tmp_path_factory: Any, text: str, cut: int) -> None:
    """The server reads a line in pieces: a request written in two writes is the same request as one."""
    line = json.dumps({"prompt": text, "wait": True}).encode() + b"\n"
    cut = min(cut, len(line) - 1)  # the newline itself comes in the second piece
    loop = Loop()
    server = ControlServer(tmp_path_factory.mktemp("cut") / "c.sock", loop)
    got: list[Any] = []
    server._received = lambda conn, parsed, bad=True: (got.append(parsed), conn.close())  # type: ignore[method-assign]
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.connect(str(server.path))
        client.sendall(line[:cut])

        def run_until(done: Callable[[], bool]) -> None:
            give_up = loop.call_later(10, loop.stop)

            def check() -> None:
                if done():
                    loop.stop()
                else:
                    loop.call_later(0.001, check)

            check()
            loop.run()
            give_up.cancel()

        # The server reads the first piece alone: waited for (its connection holds exactly that piece), not slept.
        run_until(lambda: bool(got) or any(bytes(i.data) == line[:cut] for i in server._incoming))
        if not got:
            client.sendall(line[cut:])
        run_until(lambda: bool(got))
    finally:
        client.close()
        server.close()
        loop.close()
    assert got == [parse_request(line[:-1])]


# -- a whole-request deadline, and cancelling ---------------------------------------------------


def test_a_client_that_trickles_its_request_is_cut_off_at_the_deadline_and_others_are_served(
    server: ControlServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deadline is for the whole request, from the connection: a byte now and then does not extend it."""
    monkeypatch.setattr(control, "REQUEST_WAIT", 1.0)
    slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    slow.connect(str(server.path))
    body = b'{"prompt": "' + b"x" * 200 + b'"}\n'  # a byte every 0.1 s: 20 s to write it whole
    sent = threading.Event()
    written = [0]

    def trickle() -> None:
        for byte in body:
            if sent.is_set():
                return
            try:
                slow.send(bytes([byte]))
            except OSError:
                return
            written[0] += 1
            sent.wait(0.1)

    thread = threading.Thread(target=trickle)
    thread.start()
    try:
        later = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        later.connect(str(server.path))
        later.sendall(b'{"prompt": "beside the slow one"}\n')
        assert take_one(server).prompt == "beside the slow one"  # served while the slow one still writes
        assert written[0] < len(body)
        slow.settimeout(30)
        reply = json.loads(slow.recv(1000))
        assert written[0] < len(body)  # cut off before its request was whole
        assert reply == {"ok": False, "error": "no request within 1s", "state": None}
        assert server.take() == []
        later.close()
    finally:
        sent.set()
        thread.join(10)
        slow.close()


def test_a_client_that_gives_up_before_the_session_takes_its_request_is_never_typed(server: ControlServer) -> None:
    """Taken or refused, never both: a client's cancel (its writing end shut) reaches the queue before any typing."""
    client = ControlClient(str(server.path))
    assert client.request("never typed", True, first_wait=0.2) is None  # nobody took it in time: cancelled
    client.close()
    assert server.take() == []  # and the session, looking now, does not get it


def test_a_cancel_frees_the_place_in_the_queue(server: ControlServer) -> None:
    clients = []
    for n in range(MAX_QUEUED):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(str(server.path))
        c.sendall(json.dumps({"prompt": f"p{n}"}).encode() + b"\n")
        clients.append(c)
    wait_for(lambda: len(server._queue) == MAX_QUEUED, timeout=10, what="the queue full")
    clients[0].shutdown(socket.SHUT_WR)  # the first gives up
    wait_for(lambda: len(server._queue) == MAX_QUEUED - 1, timeout=10, what="its place freed")
    clients[0].settimeout(5)
    assert clients[0].recv(100) == b""  # hung up on, without an ok
    late = ControlClient(str(server.path))
    replies: list[Any] = []
    thread = threading.Thread(target=lambda: replies.append(late.request("one more", False)))
    thread.start()
    wait_for(lambda: len(server._queue) == MAX_QUEUED, timeout=10, what="the late one queued")
    taken = server.take()
    assert [r.prompt for r in taken] == [f"p{n}" for n in range(1, MAX_QUEUED)] + ["one more"]
    taken[-1].accept("s")
    thread.join(10)
    assert replies == [{"ok": True, "session_id": "s"}]
    for c in clients:
        c.close()
    late.close()


def test_a_session_that_took_the_request_before_the_cancel_has_its_ok_read(server: ControlServer) -> None:
    """The other side of the race: typed (ok on its way) just before the client gave up: the client reads the ok."""
    client = ControlClient(str(server.path))
    replies: list[Any] = []
    thread = threading.Thread(target=lambda: replies.append(client.request("typed", True, first_wait=0.5)))
    thread.start()
    request = take_one(server)  # taken (not cancelled yet): the launch types it and accepts, in one go
    assert not request.cancelled()
    request.accept("s")
    thread.join(10)
    assert replies == [{"ok": True, "session_id": "s"}]
    request.close()
    client.close()
