"""Claude Code's native sources on the real TUI: ``native_extras`` drives the real ``claude`` on a PTY.

These run the TUI directly (not through ``agentlaunch run``): the settings,
hooks, status line and transcript reader of ``providers/claude_native.py``
against the pinned Claude Code and the fake API, with a temp HOME seeded as a
set-up user's. The same checks through ``agentlaunch run`` live in
``test_native_claude_run.py`` once the relay calls ``native_extras``.
"""

from __future__ import annotations

import json
import select
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch.events import CallUsage, Compaction, ContextWindow, SessionStarted
from agentlaunch.fakeapi.anthropic import ApiUsage, FakeAnthropic, text_reply, tool_reply
from agentlaunch.launch.native_source import NativeContext, NativeItem, NativeSource
from agentlaunch.launch.sink import StateChanged
from agentlaunch.providers.claude_native import native_extras
from agentlaunch.usage.meter import Meter
from tests.support.claude_tui import Screen, seed_home, spawn, tui_env

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]


class Run:
    """The TUI on a PTY and the source of its launch, pumped together (as the relay loop would)."""

    def __init__(self, screen: Screen, source: NativeSource) -> None:
        self.screen, self.source = screen, source
        self.items: list[NativeItem] = []

    def pump(self, timeout: float = 0.1) -> None:
        fd = self.source.fileno()
        deadline = self.source.deadline()
        wait = timeout if deadline is None else max(min(timeout, deadline - time.monotonic()), 0)
        if fd is not None:
            select.select([fd], [], [], wait)
        self.items += self.source.read()
        self.screen.pump(0.02)

    def states(self) -> list[str]:
        return [i.state for i in self.items if isinstance(i, StateChanged)]

    def wait(self, condition: object, timeout: float = 60.0, what: str = "") -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.pump()
            if callable(condition) and condition():
                return
        raise AssertionError(f"timed out: {what}\nstates {self.states()}\nscreen:\n{self.screen.text()}")

    def finish(self) -> None:
        self.screen.child.send("\x03")
        time.sleep(0.3)
        self.screen.child.send("\x03")
        self.wait(lambda: not self.screen.child.isalive(), 30, "the TUI to exit")
        self.items += self.source.read()
        self.source.close()


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    # The runtime folder holds a unix socket: its path must stay under 108 bytes.
    with tempfile.TemporaryDirectory(prefix="alcn-") as folder:
        yield Path(folder)


def start(claude_bin: Path, api: FakeAnthropic, root: Path, prompt: str, status: dict[str, object] | None,
          user_line: str | None = None) -> Run:  # fmt: skip
    home, work, runtime = root / "home", root / "work", root / "rt"
    for folder in (home, work, runtime):
        folder.mkdir(mode=0o700)
    seed_home(home, [work])
    if user_line is not None:
        (home / ".claude").mkdir()
        (home / ".claude" / "settings.json").write_text(json.dumps({"statusLine": {"type": "command", "command": user_line}}))
    status_path = None
    if status is not None:
        status_path = root / "status.json"
        status_path.write_text(json.dumps(status))
    assert api.server is not None
    env = tui_env(api.server.url, home)
    session = str(uuid.uuid4())
    ctx = NativeContext("reviewer", session, False, work, env, runtime, time.time(), sys.executable, status_path)
    extras = native_extras(ctx)
    assert extras.notices == []
    argv = [str(claude_bin), "--session-id", session, "--model", "claude-sonnet-4-5", *extras.argv, prompt]
    (source,) = extras.sources
    return Run(spawn(argv, env, work), source)


def calls(items: list[NativeItem]) -> list[CallUsage]:
    return [i for i in items if isinstance(i, CallUsage)]


def test_tool_turn_states_asking_then_waiting_and_each_call_counted_once_with_the_apis_figures(
    claude_bin: Path, short_tmp: Path
) -> None:
    api = FakeAnthropic(
        [
            tool_reply("Write", {"file_path": "out.txt", "content": "hi\n"}, ApiUsage(15, 2000, 11000, 40), text="Writing."),
            text_reply("Done writing.", ApiUsage(6, 120, 13000, 4)),
        ]
    )
    status = {"window": 200_000, "window_source": "provider", "context": 13_015, "to_compaction": 153_985,
              "cost": "$0.0123"}  # fmt: skip
    with api.serve():
        run = start(claude_bin, api, short_tmp, "write out.txt", status, user_line="echo USER-OWN-LINE")
        try:
            run.wait(lambda: "asking" in run.states(), 60, "asking while the permission prompt waits")
            assert "Do you want to create" in run.screen.text()
            assert run.states()[-1] == "asking"
            run.screen.child.send("1")
            run.wait(lambda: "Done writing." in run.screen.text() and run.states()[-1] == "waiting", 60, "waiting")
            # The live context of the last call (6 + 120 + 13,000) from Claude's JSON; the threshold from the record.
            run.wait(lambda: "ctx 13,126/200k" in run.screen.text(), 30, "the status line after the last call")
            line = next(t for t in run.screen.text().splitlines() if "ctx 13,126/200k" in t)
            assert "USER-OWN-LINE │ ctx 13,126/200k (6.6%) · 153,874 to compaction · $0.0123 · cache warm" in line
        finally:
            run.finish()
    got = calls(run.items)
    assert [(c.call_id, c.usage.input, c.usage.cache_write, c.usage.cache_read, c.usage.output) for c in got] == [
        ("msg_fake_0001", 15, 2000, 11000, 40),
        ("msg_fake_0002", 6, 120, 13000, 4),
    ]
    states = run.states()
    assert states[0] == "waiting" and "thinking" in states and "tool" in states
    assert states.index("asking") < len(states) - 1 - states[::-1].index("thinking")  # answered, then it went on
    assert states[-1] == "exited"
    sessions = [i for i in run.items if isinstance(i, SessionStarted)]
    assert len(sessions) == 1 and sessions[0].cli_version == "2.1.332" and sessions[0].model == "claude-sonnet-4-5"
    first_call = next(n for n, i in enumerate(run.items) if isinstance(i, CallUsage))
    assert run.items.index(sessions[0]) < first_call
    assert ContextWindow(200_000, "claude-sonnet-4-5") in run.items
    meter = Meter()
    for item in run.items:
        if not isinstance(item, StateChanged):
            meter.add(item)
    assert meter.calls == 2 and meter.total.output == 44


def test_refused_tool_ends_the_turn_waiting_and_compact_is_reported_once(claude_bin: Path, short_tmp: Path) -> None:
    api = FakeAnthropic(
        [
            tool_reply("Bash", {"command": "rm -rf build", "description": "Remove build"}, ApiUsage(21, 1000, 9000, 25)),
            text_reply("Summary so far.", ApiUsage(500, 0, 0, 80)),
        ]
    )
    with api.serve():
        run = start(claude_bin, api, short_tmp, "clean the build", None)
        try:
            run.wait(lambda: run.states()[-1:] == ["asking"], 60, "asking")
            run.screen.child.send("\x1b")  # refuse: no Stop hook runs, the transcript says the turn ended
            run.wait(lambda: run.states()[-1:] == ["waiting"], 30, "waiting after the refusal")
            run.screen.child.send("/compact")
            time.sleep(0.5)
            run.screen.child.send("\r")
            run.wait(lambda: any(isinstance(i, Compaction) for i in run.items), 60, "the compaction")
            run.wait(lambda: run.states()[-1:] == ["waiting"], 30, "waiting after the compaction")
            assert "ctx " in run.screen.text()  # agentlaunch's line alone: no status record, no user line
        finally:
            run.finish()
    # The refused call, then the compaction's summary calls (no assistant lines): their sum from cost-state, once.
    got = [(c.call_id, c.usage.input, c.usage.output) for c in calls(run.items)]
    assert got[0] == ("msg_fake_0001", 21, 25)
    summaries = [(r.body.get("max_tokens"), r) for r in api.message_requests()[1:]]
    assert len(got) == 2 and got[1][0] == "side-calls-1"
    assert got[1][1:] == (500 + 10 * (len(summaries) - 1), 80 + 5 * (len(summaries) - 1))  # scripted, then the default
    (compaction,) = [i for i in run.items if isinstance(i, Compaction)]
    assert compaction.trigger == "manual" and compaction.pre_tokens and compaction.post_tokens
