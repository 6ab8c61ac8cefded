"""Everything a launch waits for waits on its one loop: a permission question, the send socket's clients, the
person's lines, the status record's pane title. Each test here would hang or wait out a deadline if that
wait blocked the loop instead."""

from __future__ import annotations

import io
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
from agentlaunch.launch import control
from agentlaunch.launch.control import ControlServer, SendRequest
from agentlaunch.launch.line_input import LineInput
from agentlaunch.launch.loop import Loop
from agentlaunch.launch.permissions import PermissionPrompt
from agentlaunch.live.status import StatusWriter
from agentlaunch.sinks import LaunchView, SinkEvent
from tests.test_launch_inprocess import FixedClock, ScriptedChild, build


def asks_then_answers(msg: dict[str, Any]) -> list[str]:
    """Claude Code's stream-json for a turn that asks to use a tool, then ends as the answer (or an interrupt) says."""
    if msg["type"] == "user":
        ask = {"subtype": "can_use_tool", "tool_name": "Write", "input": {"file_path": "a.txt"}}
        return [
            json.dumps({"type": "system", "subtype": "init", "session_id": "s"}),
            json.dumps({"type": "control_request", "request_id": "r1", "request": ask}),
        ]
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


class JumpingClock(FixedClock):
    """The real monotonic clock, plus the seconds :meth:`jump` added: a deadline that only a jump can reach."""

    def __init__(self) -> None:
        super().__init__()
        self.offset = 0.0

    def monotonic(self) -> float:
        return super().monotonic() + self.offset

    def jump(self, seconds: float) -> None:
        self.offset += seconds


class JumpsWhenAsked(io.StringIO):
    """The person's screen: the moment a permission question is shown on it, the clock jumps ``seconds``."""

    def __init__(self, clock: JumpingClock, seconds: float) -> None:
        super().__init__()
        self.clock, self.seconds = clock, seconds

    def write(self, text: str) -> int:
        if "Allow " in text:
            self.clock.jump(self.seconds)
        return super().write(text)


def test_timeout_counts_while_the_person_decides_and_the_question_is_denied(agents_dir: Path, tmp_path: Path) -> None:
    children: list[ScriptedChild] = []

    def factory(*args: object) -> ScriptedChild:
        children.append(ScriptedChild(asks_then_answers))
        return children[-1]

    # An hour's timeout, and the hour passes (on the launch's clock) once the question is on screen and while
    # nobody answers it: the turn can end only by its deadline firing on the loop while the person decides.
    clock = JumpingClock()
    shown = JumpsWhenAsked(clock, 7200)
    keys_read, keys = os.pipe()  # nobody answers: nothing is ever written to ``keys``
    launch, _, _ = build(agents_dir, tmp_path, factory, interactive=True, clock=clock)
    try:
        launch.start()
        with pytest.raises(TurnTimeout, match="longer than 3600s"):
            launch.run_turn("hi", timeout=3600, ask_permission=PermissionPrompt(LineInput(keys_read, shown)))
    finally:
        launch.close(124)
        for fd in (keys_read, keys):
            os.close(fd)
    assert shown.getvalue().count("Allow Write") == 1 and clock.offset == 7200  # asked once; the hour passed then
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


def run_until(loop: Loop, done: Any, timeout: float = 30) -> None:
    """Run ``loop`` until ``done()`` (checked every 10 ms); a loop that never gets there fails after ``timeout``."""
    started = time.monotonic()

    def check() -> None:
        if done() or time.monotonic() - started > timeout:
            loop.stop()
        else:
            loop.call_later(0.01, check)

    check()
    loop.run()
    assert done(), "timed out"


def test_a_client_that_never_writes_does_not_hold_up_the_next(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(control, "REQUEST_WAIT", 3600.0)  # the silent client's deadline is out of reach here
    loop = Loop()
    server = ControlServer(tmp_path / "c.sock", loop)
    taken: list[SendRequest] = []
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.connect(str(server.path))
    later = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    later.connect(str(server.path))
    later.sendall(b'{"prompt": "after the silent one"}\n')
    try:
        run_until(loop, lambda: taken.extend(server.take()) or taken)
        assert [r.prompt for r in taken] == ["after the silent one"]
        # Taken while the silent client is still waited for: neither refused nor hung up on yet.
        with pytest.raises(BlockingIOError):
            silent.recv(1, socket.MSG_DONTWAIT)
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
        request.answer(exit_code=0, answer="x" * 4_000_000)  # far more than a socket's buffer holds
        # answer() returned while the client has read nothing: the rest waits on the loop, the connection open.
        assert request.conn is not None and not got

        def read_all() -> None:
            slow.settimeout(10)
            while chunk := slow.recv(1 << 20):
                got.extend(chunk)

        reader = threading.Thread(target=read_all)
        loop.call_later(0, reader.start)  # the client starts reading once the loop waits to write the rest
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
    gate = tmp_path / "gate"
    # A tmux held until the test opens the gate (or, should update() wait for it, until it gives up: ~10 s).
    tmux.write_text(
        f"#!/bin/sh\nn=0\nwhile [ ! -e {gate} ] && [ $n -lt 1000 ]; do sleep 0.01; n=$((n+1)); done\n"
        f'printf "%s\\n" "$6" >> {titles}\n'
    )
    tmux.chmod(tmux.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("TMUX_PANE", "%1")
    loop = Loop()
    writer = StatusWriter(tmp_path / "status", interval=0, pane_title=True, later=loop.call_later)
    record = {"agent": "demo", "pid": os.getpid(), "state": "thinking"}
    writer.update(record)
    writer.update({**record, "state": "waiting"})  # while the first title is on its way
    assert writer.writes == 2 and not titles.exists()  # both records written while tmux is held: not waited for
    gate.touch()
    writer.close()  # the session's end: the last title is set, its tmux collected
    loop.close()
    assert titles.read_text().splitlines() == ["demo · thinking", "demo · waiting"]
