"""A Launch built in-process from its collaborators: a fake child, a temporary store, a sink that keeps a list."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import sys
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

import agentlaunch
from agentlaunch import datarecord as records
from agentlaunch.definitions.spec import load_agent, resolve_working_dir
from agentlaunch.events import CallUsage, Diagnostic, Event, PermissionRequest, SessionStarted, TextDelta, TurnEnd
from agentlaunch.launch.options import LaunchOptions
from agentlaunch.launch.output_lines import Line, LineSplitter
from agentlaunch.launch.reaper import Reaper
from agentlaunch.launch.session import Launch, spawn_child
from agentlaunch.launch.turn import ChildLike
from agentlaunch.live.view import HeadlessView
from agentlaunch.providers import get_adapter
from agentlaunch.sinks import LaunchView, PricedCall, SessionClosed, StateChanged, TurnDone
from agentlaunch.usage.meter import Meter
from agentlaunch.usage.pricing import Pricer
from agentlaunch.usage.recorder import UsageRecorder
from agentlaunch.usage.store import Store


class Collect:
    """A sink that keeps every event."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def event(self, event: Event, launch: LaunchView) -> None:
        self.events.append(event)

    def of(self, kind: type[Event]) -> list[Event]:
        return [e for e in self.events if isinstance(e, kind)]


class FixedClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        import time

        return time.monotonic()  # deadlines need real time to pass; only "now" is fixed

    def now(self) -> datetime:
        return datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)


def build(
    agents_dir: Path,
    tmp_path: Path,
    factory: Callable[[Sequence[str], Mapping[str, str], Path, tuple[int, int]], ChildLike],
    *extra_sinks: object,
    interactive: bool = False,
    clock: FixedClock | None = None,
) -> tuple[Launch, Collect, Path]:
    state = tmp_path / "state"
    spec = load_agent(agents_dir, "demo", state)
    store_path = tmp_path / "usage.sqlite3"
    store = Store.open(store_path)
    collected = Collect()
    launch = Launch(
        LaunchOptions(agent="demo", agents_dir=agents_dir, interactive=interactive),
        spec=spec,
        adapter=get_adapter(spec.provider),
        store=store,
        pricer=Pricer(agents_dir=spec.agents_dir),
        meter=Meter(configured_window=spec.context_window, model=spec.model),
        sinks=[UsageRecorder(store), collected, *extra_sinks],  # type: ignore[list-item]
        state_dir=state,
        working_dir=resolve_working_dir(spec, None, state),
        clock=clock or FixedClock(),
        child_factory=factory,
        reaper=Reaper(subreaper=False),
    )
    return launch, collected, store_path


def test_a_turn_on_the_fake_cli_reaches_every_sink_and_the_store(agents_dir: Path, tmp_path: Path) -> None:
    spawned: list[ChildLike] = []

    def factory(argv: Sequence[str], env: Mapping[str, str], cwd: Path, size: tuple[int, int]) -> ChildLike:
        spawned.append(spawn_child(argv, env, cwd, size))
        return spawned[-1]

    launch, collected, store_path = build(agents_dir, tmp_path, factory)
    try:
        launch.start()
        outcome = launch.run_turn("hello")
        assert outcome.end is not None and not outcome.end.is_error and not outcome.interrupted
        assert 'You said: "hello"' in outcome.end.result and "Startup message received" in outcome.end.result
        assert len(spawned) == 1 and launch.cli_pid == spawned[0].pid
        kinds = [type(e).__name__ for e in collected.events if not isinstance(e, StateChanged)]
        assert kinds.index("SessionStarted") < kinds.index("TextDelta") < kinds.index("PricedCall") < kinds.index("CallUsage")
        assert kinds[-2:] == ["TurnEnd", "TurnDone"]
        states = [e.state for e in collected.of(StateChanged)]  # type: ignore[attr-defined]
        assert states == ["starting", "waiting", "thinking", "waiting"]
        assert launch.turns == 1 and launch.meter.calls == 1
    finally:
        launch.close(0)
    assert isinstance(collected.events[-1], SessionClosed) and collected.events[-2] == StateChanged(
        "exited", source="agentlaunch"
    )
    (session,) = collected.of(SessionStarted)
    priced = [e.record for e in collected.of(PricedCall)]  # type: ignore[attr-defined]
    with Store.open(store_path) as store:
        row = store.get_session(launch.session_id)
        assert row is not None and row.turns == 1 and row.exit_status == 0 and row.agent == "demo"
        assert [records.replace(c, id=None) for c in store.calls_for_session(launch.session_id)] == priced
    assert [c.usage for c in collected.of(CallUsage)] == [p.usage for p in priced]  # type: ignore[attr-defined]
    assert session.session_id == launch.session_id  # type: ignore[attr-defined]


class ScriptedChild:
    """An in-memory CLI: each user message is answered with the lines ``answer`` gives for it, through a pipe."""

    pid = -1  # no process: nothing for the reaper to match
    pidfd = None
    stdin_fd = None
    wants_write = False

    def __init__(self, answer: Callable[[dict[str, object]], list[str]]) -> None:
        self.answer = answer
        self.master, self._w = os.pipe()
        os.set_blocking(self.master, False)
        self.eof = False
        self.sent: list[dict[str, object]] = []
        self.signalled: list[int] = []
        self._lines = LineSplitter()
        self._ready: list[Line] = []
        self.code: int | None = None

    def say(self, *lines: str) -> None:
        os.write(self._w, "".join(line + "\n" for line in lines).encode())

    def read_available(self) -> list[Line]:
        items, self._ready = self._ready, []
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except BlockingIOError:
                return items
            if not chunk:
                self.eof = True
                return items + self._lines.end()
            items += self._lines.feed(chunk)

    def unread(self, items: list[Line]) -> None:
        self._ready = list(items) + self._ready

    def flush_stdin(self) -> None: ...

    def send_json(self, obj: object) -> None:
        assert isinstance(obj, dict)
        self.sent.append(obj)
        self.say(*self.answer(obj))

    def send_bytes(self, data: bytes) -> None:
        self.send_json(json.loads(data))

    def close_stdin(self, *, after_flush: bool = False) -> None: ...

    def resize(self, cols: int, rows: int) -> None: ...

    def signal_group(self, sig: int) -> None:
        self.signalled.append(sig)

    def poll(self) -> int | None:
        return self.code

    def stop(self, grace: float = 3.0) -> int:
        self.code = 0 if self.code is None else self.code
        return self.code

    def close(self) -> None:
        for fd in (self.master, self._w):
            with contextlib.suppress(OSError):
                os.close(fd)


def stream_json(session: str) -> Callable[[dict[str, object]], list[str]]:
    """Claude Code's stream-json for a turn that asks to use a tool, then answers; an interrupt ends it."""

    def line(obj: dict[str, object]) -> str:
        return json.dumps(obj)

    def answer(msg: dict[str, object]) -> list[str]:
        if msg["type"] == "user":
            start = {"type": "message_start", "message": {"id": "m1", "model": "fake-1", "usage": {"input_tokens": 10}}}
            ask = {"subtype": "can_use_tool", "tool_name": "Write"}
            return [
                line({"type": "system", "subtype": "init", "session_id": session}),
                line({"type": "stream_event", "event": start}),
                line({"type": "stream_event", "event": {"type": "message_delta", "usage": {"output_tokens": 4}}}),
                line({"type": "control_request", "request_id": "r1", "request": ask}),
            ]
        if msg["type"] == "control_response":
            allowed = msg["response"]["response"]["behavior"] == "allow"  # type: ignore[index]
            delta = {"type": "content_block_delta", "delta": {"type": "text_delta", "text": f"allowed={allowed}"}}
            return [line({"type": "stream_event", "event": delta})]
        if msg["type"] == "control_request":  # the interrupt
            return [line({"type": "result", "subtype": "error_during_execution", "is_error": True, "result": "interrupted"})]
        return []

    return answer


def test_a_scripted_child_asks_permission_and_a_sink_interrupts_the_turn(agents_dir: Path, tmp_path: Path) -> None:
    children: list[ScriptedChild] = []
    asked: list[PermissionRequest] = []

    class Guard:
        """A budget guard in miniature: one more sink, which interrupts the turn once text streams."""

        def event(self, event: Event, launch: LaunchView) -> None:
            if isinstance(event, TextDelta):
                launch.request_interrupt("over budget")

    def factory(argv: Sequence[str], env: Mapping[str, str], cwd: Path, size: tuple[int, int]) -> ChildLike:
        children.append(ScriptedChild(stream_json("scripted-session")))
        return children[-1]

    launch, collected, store_path = build(agents_dir, tmp_path, factory, Guard(), interactive=True)
    try:
        launch.start()
        outcome = launch.run_turn("hi", ask_permission=lambda r: asked.append(r) or "once")
    finally:
        launch.close(130)
    child = children[0]
    assert [m["type"] for m in child.sent] == ["user", "control_response", "control_request"]
    assert child.sent[2]["request"] == {"subtype": "interrupt"}
    assert [r.tool_name for r in asked] == ["Write"]
    assert outcome.interrupted and outcome.end is not None and outcome.end.is_error
    assert any(getattr(e, "message", "") == "over budget" for e in collected.events)
    assert collected.of(TurnDone) and isinstance(collected.of(TurnEnd)[0], TurnEnd)
    with Store.open(store_path) as store:
        (call,) = store.calls_for_session(launch.session_id)
        assert (call.usage.input, call.usage.output) == (10, 4)
        assert store.get_session(launch.session_id).exit_status == 130  # type: ignore[union-attr]


def test_sigint_during_a_turn_is_a_loop_event_not_an_exception(agents_dir: Path, tmp_path: Path) -> None:
    def answer(msg: dict[str, object]) -> list[str]:
        if msg["type"] == "user":
            os.kill(os.getpid(), signal.SIGINT)  # arrives while the loop runs the turn
            return [json.dumps({"type": "system", "subtype": "init", "session_id": "s"})]
        if msg["type"] == "control_request":
            return [json.dumps({"type": "result", "subtype": "error_during_execution", "is_error": True})]
        return []

    launch, collected, _ = build(agents_dir, tmp_path, lambda *a: ScriptedChild(answer))
    try:
        launch.start()
        outcome = launch.run_turn("hi")  # no KeyboardInterrupt: the turn is interrupted and ends
    finally:
        launch.close(130)
    assert outcome.interrupted and outcome.end is not None
    assert any(getattr(e, "message", "") == "interrupting the turn…" for e in collected.events)


# -- nothing grows with the output ------------------------------------------------------------


# Only allocations made under agentlaunch's code or this file's count: under pytest-xdist the worker's execnet
# thread allocates at the same time, and a process-wide figure would count its buffers too.
OURS = (
    tracemalloc.Filter(True, str(Path(agentlaunch.__file__).parent / "*"), all_frames=True),
    tracemalloc.Filter(True, __file__, all_frames=True),
)
FRAMES = 8  # deep enough that an allocation in the standard library still shows the agentlaunch frame that asked


def _ours(snapshot: tracemalloc.Snapshot) -> int:
    return sum(trace.size for trace in snapshot.filter_traces(OURS).traces)


def grown_by(feed: Callable[[], None]) -> int:
    """Bytes still allocated after ``feed`` ran (tracemalloc), beyond what was allocated before, by agentlaunch or this file."""
    tracemalloc.start(FRAMES)
    try:
        before = _ours(tracemalloc.take_snapshot())
        feed()
        return _ours(tracemalloc.take_snapshot()) - before
    finally:
        tracemalloc.stop()


LINES = 20_000
LINE = "x" * 1900  # 20,000 of these are 38 MB if anything keeps them


@pytest.mark.parametrize("json_lines", [False, True])
def test_the_headless_view_keeps_no_diagnostic_lines(json_lines: bool) -> None:
    with open(os.devnull, "w") as null:  # what is written is not kept either
        view = HeadlessView(Meter(), json_lines=json_lines, stdout=null, stderr=io.StringIO())

        def feed() -> None:
            for i in range(LINES):
                view.event(Diagnostic(f"{i} {LINE}"))

        assert grown_by(feed) < 2_000_000


CHATTY = f"""
import sys
sys.stdin.readline()
for i in range({LINES}):
    print(i, {LINE!r})
sys.exit(5)
"""


def test_a_launch_keeps_only_the_last_lines_of_a_chatty_cli(agents_dir: Path, tmp_path: Path) -> None:
    def factory(argv: Sequence[str], env: Mapping[str, str], cwd: Path, size: tuple[int, int]) -> ChildLike:
        return spawn_child([sys.executable, "-c", CHATTY], env, cwd, size)  # in place of the provider CLI

    with open(os.devnull, "w") as null:
        launch, collected, _ = build(agents_dir, tmp_path, factory, HeadlessView(Meter(), stdout=null, stderr=null))
        launch.sinks.remove(collected)  # it keeps every event, by design
        try:
            launch.start()
            outcomes = []
            assert grown_by(lambda: outcomes.append(launch.run_turn("go"))) < 2_000_000
        finally:
            launch.close(1)
    (outcome,) = outcomes
    assert outcome.end is None and outcome.exit_code == 5
    assert outcome.last_output == tuple(f"{i} {LINE}" for i in range(LINES - 3, LINES))


def test_without_a_pidfd_the_clis_exit_comes_through_sigchld(agents_dir: Path, tmp_path: Path) -> None:
    # The detached test CLI exits mid-turn while its setsid helper holds the PTY: no end of file comes,
    # and with its pidfd taken away (as on a system without pidfds) only SIGCHLD can tell.
    pid_file = tmp_path / "helper.pid"
    script = Path(__file__).resolve().parent / "support" / "detached_cli.py"

    def factory(argv: Sequence[str], env: Mapping[str, str], cwd: Path, size: tuple[int, int]) -> ChildLike:
        env = {**env, "DETACHED_MODE": "die", "DETACHED_PID_FILE": str(pid_file)}
        child = spawn_child([sys.executable, str(script), *argv[1:]], env, cwd, size)
        assert child.pidfd is not None
        os.close(child.pidfd)
        child.pidfd = None
        return child

    launch, _, _ = build(agents_dir, tmp_path, factory)
    try:
        launch.start()
        outcome = launch.run_turn("hello")
        assert outcome.end is None and outcome.exit_code == 3
    finally:
        launch.close(1)
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)  # in-process there is no subreaper to bring it back


def test_the_startup_message_names_the_time_the_early_start_gave_its_cli(
    agents_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The message's time is rounded down to ten minutes: a launch whose early start came before a boundary and its own
    # rendering after it named another time than the CLI it started early, and refused it (the likely cause of a CI
    # run that failed test_early_turn: that run spanned 10:10).
    from agentlaunch.launch.early import early_turn, prespawn
    from agentlaunch.launch.turn_cycle import first_message

    launch, _, _ = build(agents_dir, tmp_path, spawn_child)  # its clock says 05:06 UTC
    try:
        own = first_message(launch, "hi")
        assert early_turn.now_text(FixedClock().now()) in own
    finally:
        launch.close(0)
    early = datetime(2026, 3, 4, 4, 59, 59, 900000, tzinfo=UTC)  # the early start, before the 05:00 boundary
    monkeypatch.setattr(prespawn, "_moment", early)
    launch, _, _ = build(agents_dir, tmp_path, spawn_child)
    try:
        message = first_message(launch, "hi")
        assert early_turn.now_text(early) in message and early_turn.now_text(early) != early_turn.now_text(FixedClock().now())
    finally:
        launch.close(0)
