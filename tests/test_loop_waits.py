"""Everything a launch waits for waits on its one loop: a permission question, the send socket's clients, the
person's lines, the status record's pane title. Each test here would hang or wait out a deadline if that
wait blocked the loop instead."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.errors import TurnTimeout
from agentlaunch.events import Warning
from agentlaunch.launch.control import ControlServer, SendRequest
from agentlaunch.launch.loop import Loop
from agentlaunch.launch.permissions import PermissionPrompt
from agentlaunch.launch.person import LineInput
from agentlaunch.live.status import StatusWriter
from agentlaunch.sinks import LaunchView, SinkEvent
from tests.test_launch_inprocess import ScriptedChild, build


def asks_then_answers(msg: dict[str, Any]) -> list[str]:
    """Claude Code's stream-json for a turn that asks to use a tool, then ends as the answer (or an interrupt) says."""
    if msg["type"] == "user":
        ask = {"subtype": "can_use_tool", "tool_name": "Write", "input": {"file_path": "a.txt"}}
        return [json.dumps({"type": "system", "subtype": "init", "session_id": "s"}),
                json.dumps({"type": "control_request", "request_id": "r1", "request": ask})]  # fmt: skip
    if msg["type"] == "control_response":
        allowed = msg["response"]["response"]["behavior"] == "allow"
        return [json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": f"allowed={allowed}"})]
    if msg["type"] == "control_request":  # the interrupt
        return [json.dumps({"type": "result", "subtype": "error_during_execution", "is_error": True})]
    return []


class StatesAtWarnings:
    """A sink that notes the launch's state whenever a warning arrives."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def event(self, event: SinkEvent, launch: LaunchView) -> None:
        if isinstance(event, Warning):
            self.seen.append((event.message, launch.state))


@pytest.fixture
def person() -> Iterator[tuple[LineInput, int]]:
    """The person's terminal as a pipe: their input (what the test writes to the fd given) and where questions go."""
    read_fd, write_fd = os.pipe()
    with open(os.devnull, "w") as shown:
        yield LineInput(read_fd, shown), write_fd
    for fd in (read_fd, write_fd):
        os.close(fd)


def test_while_the_person_decides_the_cli_is_still_read_and_the_answer_reaches_it(
    agents_dir: Path, tmp_path: Path, person: tuple[LineInput, int]
) -> None:
    terminal, keys = person
    children: list[ScriptedChild] = []
    states = StatesAtWarnings()

    def factory(*args: object) -> ScriptedChild:
        children.append(ScriptedChild(asks_then_answers))
        return children[-1]

    launch, _, _ = build(agents_dir, tmp_path, factory, states, interactive=True)
    try:
        launch.start()
        retry = {"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 3, "retry_delay_ms": 500}
        launch.call_later(0.1, lambda: children[0].say(json.dumps(retry)))  # the CLI speaks while the question is open
        launch.call_later(0.4, lambda: os.write(keys, b"y\n"))  # then the person answers
        outcome = launch.run_turn("hi", ask_permission=PermissionPrompt(terminal))
    finally:
        launch.close(0)
    assert states.seen == [("API call failed; retry 1/3 in 0.5s", "asking")]
    assert [m["type"] for m in children[0].sent] == ["user", "control_response"]
    assert children[0].sent[1]["response"]["response"]["behavior"] == "allow"
    assert outcome.end is not None and outcome.end.result == "allowed=True"


def test_timeout_counts_while_the_person_decides_and_the_question_is_denied(
    agents_dir: Path, tmp_path: Path, person: tuple[LineInput, int]
) -> None:
    terminal, _ = person  # nobody answers
    children: list[ScriptedChild] = []

    def factory(*args: object) -> ScriptedChild:
        children.append(ScriptedChild(asks_then_answers))
        return children[-1]

    launch, _, _ = build(agents_dir, tmp_path, factory, interactive=True)
    started = time.monotonic()
    try:
        launch.start()
        with pytest.raises(TurnTimeout, match="longer than 0.5s"):
            launch.run_turn("hi", timeout=0.5, ask_permission=PermissionPrompt(terminal))
    finally:
        launch.close(124)
    assert time.monotonic() - started < 5
    sent = children[0].sent
    assert [m["type"] for m in sent] == ["user", "control_response", "control_request"]
    assert sent[1]["response"]["response"]["behavior"] == "deny"  # the CLI is not left waiting for the answer
    assert sent[2]["request"] == {"subtype": "interrupt"}


def test_ctrl_c_at_the_question_denies_the_tool_and_the_turn_goes_on(
    agents_dir: Path, tmp_path: Path, person: tuple[LineInput, int]
) -> None:
    terminal, _ = person
    children: list[ScriptedChild] = []

    def factory(*args: object) -> ScriptedChild:
        children.append(ScriptedChild(asks_then_answers))
        return children[-1]

    launch, _, _ = build(agents_dir, tmp_path, factory, interactive=True)
    try:
        launch.start()
        launch.call_later(0.2, lambda: os.kill(os.getpid(), signal.SIGINT))
        outcome = launch.run_turn("hi", ask_permission=PermissionPrompt(terminal))
    finally:
        launch.close(0)
    assert [m["type"] for m in children[0].sent] == ["user", "control_response"]
    assert not outcome.interrupted and outcome.end is not None and outcome.end.result == "allowed=False"


def test_a_question_answered_with_nonsense_is_asked_again(
    agents_dir: Path, tmp_path: Path, person: tuple[LineInput, int]
) -> None:
    terminal, keys = person
    children: list[ScriptedChild] = []

    def factory(*args: object) -> ScriptedChild:
        children.append(ScriptedChild(asks_then_answers))
        return children[-1]

    os.write(keys, b"maybe\n\xff\xfe\na\n")
    launch, _, _ = build(agents_dir, tmp_path, factory, interactive=True)
    try:
        launch.start()
        outcome = launch.run_turn("hi", ask_permission=PermissionPrompt(terminal))
    finally:
        launch.close(0)
    assert outcome.end is not None and outcome.end.result == "allowed=True"
    assert launch.permissions.always_allowed == {"Write"}


# -- the person's lines ------------------------------------------------------------------------------


def lines_of(data: bytes, count: int) -> list[bytes | None]:
    """The first ``count`` lines a LineInput reads from a pipe that holds ``data`` and then ends."""
    read_fd, write_fd = os.pipe()
    os.write(write_fd, data)
    os.close(write_fd)
    loop, person, got = Loop(), LineInput(read_fd), []

    def take(line: bytes | None) -> None:
        got.append(line)
        if len(got) < count:
            person.next_line(loop, take)
        else:
            loop.stop()

    person.next_line(loop, take)
    loop.call_later(5, loop.stop)
    loop.run()
    os.close(read_fd)
    return got


def test_lines_from_a_pipe_come_one_at_a_time_and_the_end_comes_last() -> None:
    assert lines_of(b"one\ntwo\n\nthree", 5) == [b"one", b"two", b"", b"three", None]
    assert lines_of(b"", 1) == [None]


# -- the send socket ---------------------------------------------------------------------------------


def run_until(loop: Loop, done: Any, timeout: float = 10) -> float:
    """Run ``loop`` until ``done()`` (checked every 10 ms); the seconds it took."""
    started = time.monotonic()

    def check() -> None:
        if done() or time.monotonic() - started > timeout:
            loop.stop()
        else:
            loop.call_later(0.01, check)

    check()
    loop.run()
    assert done(), "timed out"
    return time.monotonic() - started


def test_a_client_that_never_writes_does_not_hold_up_the_next(tmp_path: Path) -> None:
    loop = Loop()
    server = ControlServer(tmp_path / "c.sock", loop)
    taken: list[SendRequest] = []
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.connect(str(server.path))
    later = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    later.connect(str(server.path))
    later.sendall(b'{"prompt": "after the silent one"}\n')
    try:
        took = run_until(loop, lambda: taken.extend(server.take()) or taken)
        assert [r.prompt for r in taken] == ["after the silent one"]
        assert took < 1.0  # not after the silent client's REQUEST_WAIT (2 s)
        taken[0].accept("s")
    finally:
        server.close()
        for conn in (silent, later):
            conn.close()
        loop.close()


def test_an_answer_a_client_does_not_read_waits_on_the_loop_and_arrives_whole(tmp_path: Path) -> None:
    loop = Loop()
    server = ControlServer(tmp_path / "c.sock", loop)
    slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    slow.connect(str(server.path))
    slow.sendall(b'{"prompt": "long", "wait": true}\n')
    taken: list[SendRequest] = []
    got = bytearray()
    try:
        run_until(loop, lambda: taken.extend(server.take()) or taken)
        (request,) = taken
        request.accept("s")
        started = time.monotonic()
        request.answer(exit_code=0, answer="x" * 4_000_000)  # far more than a socket's buffer holds
        assert time.monotonic() - started < 0.5  # the loop is not held while the client does not read

        def read_all() -> None:
            time.sleep(0.3)
            slow.settimeout(10)
            while chunk := slow.recv(1 << 20):
                got.extend(chunk)

        reader = threading.Thread(target=read_all)
        reader.start()
        run_until(loop, lambda: request.conn is None)  # written on the loop as the client reads, then hung up
        reader.join(10)
    finally:
        server.close()
        slow.close()
        loop.close()
    first, answer = bytes(got).splitlines()
    assert json.loads(first) == {"ok": True, "session_id": "s"}
    assert json.loads(answer)["answer"] == "x" * 4_000_000


# -- the pane title ----------------------------------------------------------------------------------


def test_a_slow_tmux_never_holds_up_the_status_record_and_the_last_title_still_lands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir, titles = tmp_path / "bin", tmp_path / "titles"
    bin_dir.mkdir()
    tmux = bin_dir / "tmux"
    tmux.write_text(f'#!/bin/sh\nsleep 0.5\nprintf "%s\\n" "$5" >> {titles}\n')
    tmux.chmod(tmux.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("TMUX_PANE", "%1")
    loop = Loop()
    writer = StatusWriter(tmp_path / "status", interval=0, pane_title=True, later=loop.call_later)
    record = {"agent": "demo", "pid": os.getpid(), "state": "thinking"}
    started = time.monotonic()
    writer.update(record)
    writer.update({**record, "state": "waiting"})  # while the first title is on its way
    assert time.monotonic() - started < 0.3  # two tmux runs of 0.5 s each were not waited for
    assert writer.writes == 2
    writer.close()  # the session's end: the last title is set, its tmux collected
    loop.close()
    assert titles.read_text().splitlines() == ["demo · thinking", "demo · waiting"]
