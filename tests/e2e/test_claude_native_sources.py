"""Claude Code's native sources on the real TUI: ``native_extras`` drives the real ``claude`` on a PTY.

These run the TUI directly (not through ``agentlaunch run``): the settings,
hooks, status line and transcript reader of ``providers/native/claude.py``
against the pinned Claude Code and the fake API, with a temp HOME seeded as a
set-up user's. The same checks through ``agentlaunch run`` live in
``test_native_claude_run.py`` once the relay calls ``native_extras``.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch.events import CallUsage, Compaction, ContextWindow, SessionStarted, Text, Warning
from agentlaunch.fakeapi.anthropic import ApiUsage, FakeAnthropic, text_reply, tool_reply
from agentlaunch.providers.native.claude import native_extras
from agentlaunch.providers.native.source import NativeContext, NativeItem, NativeSource
from agentlaunch.sinks import StateChanged
from agentlaunch.usage.meter import Meter
from testbed.claude_tui import quit_with_ctrl_c, seed_home, tui_env
from testbed.pty_screen import Screen, spawn

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]


class Run:
    """The TUI on a PTY and the source of its launch, pumped together (as the relay loop would)."""

    def __init__(self, screen: Screen, source: NativeSource) -> None:
        self.screen, self.source = screen, source
        self.items: list[NativeItem] = []

    def pump(self, timeout: float = 0.1) -> None:
        fds = self.source.filenos()
        deadline = self.source.deadline()
        wait = timeout if deadline is None else max(min(timeout, deadline - time.monotonic()), 0)
        if fds:
            select.select(fds, [], [], wait)
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

    def settle(self, seconds: float) -> None:
        """Pump for ``seconds`` (the screen must be read, or the TUI blocks on its output)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.pump()

    def finish(self) -> None:
        quit_with_ctrl_c(self.screen, self.pump)
        self.items += self.source.read()
        self.source.close()


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    # The runtime folder holds a unix socket: its path must stay under 108 bytes.
    with tempfile.TemporaryDirectory(prefix="alcn-") as folder:
        yield Path(folder)


def start(
    claude_bin: Path,
    api: FakeAnthropic,
    root: Path,
    prompt: str,
    status: dict[str, object] | None,
    user_line: str | None = None,
    more_argv: tuple[str, ...] = (),
) -> Run:
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
    argv = [str(claude_bin), "--session-id", session, "--model", "claude-sonnet-4-5", *more_argv, *extras.argv, prompt]
    (source,) = extras.sources
    return Run(spawn(argv, {**env, **extras.env}, work), source)  # as the launch: the hook server's key


def answer_prompt(run: Run, key: str) -> None:
    """Answer the permission dialog: Claude Code ignores keys in its first moments (typed-ahead guard), so
    the key is sent again until the dialog is gone."""
    for _ in range(10):
        run.settle(1.0)
        run.screen.child.send(key)
        run.settle(1.0)
        if "Do you want" not in run.screen.text():
            return
    raise AssertionError(f"the permission dialog never took {key!r}:\n{run.screen.text()}")


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
    status = {"window": 200_000, "window_source": "provider", "context": 13_015, "to_compaction": 153_985, "cost": "$0.0123"}
    with api.serve():
        run = start(claude_bin, api, short_tmp, "write out.txt", status, user_line="echo USER-OWN-LINE")
        try:
            # The hook reports as the dialog opens: the screen shows it a moment later.
            run.wait(
                lambda: "asking" in run.states() and "Do you want to create" in run.screen.text(),
                60,
                "asking while the permission prompt waits",
            )
            assert run.states()[-1] == "asking"
            answer_prompt(run, "1")
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
    # The text before the tool call and the answer after it; the prompt, the tool's input and result are none.
    assert [i.text for i in run.items if isinstance(i, Text)] == ["Writing.", "Done writing."]


def test_tools_run_together_are_one_tool_state_until_the_last_ends(claude_bin: Path, short_tmp: Path) -> None:
    """Two tools of one message run together: the state is ``tool`` until both ended (Claude Code's PostToolBatch),
    not ``thinking`` when the first one ends (its PostToolUse) while the other still runs."""
    api = FakeAnthropic(
        [
            tool_reply(
                "Bash",
                {"command": "cat slow.fifo", "description": "Wait for the pipe"},
                ApiUsage(12, 900, 9000, 30),
                more=(("Read", {"file_path": "README.md"}),),
            ),
            text_reply("Both done.", ApiUsage(5, 100, 10000, 4)),
        ]
    )
    os.mkfifo(short_tmp / "work-fifo")
    with api.serve():
        run = start(claude_bin, api, short_tmp, "look at both", None, more_argv=("--allowedTools", "Bash(cat:*)"))
        work = short_tmp / "work"
        os.replace(short_tmp / "work-fifo", work / "slow.fifo")
        try:
            run.wait(lambda: "tool" in run.states(), 60, "the tools running")
            run.settle(3.0)  # the Read is long over (its PostToolUse ran); the cat still waits on the pipe
            assert run.states()[-1] == "tool", run.states()
            assert len(api.message_requests()) == 1  # the model was not called again meanwhile
            with open(work / "slow.fifo", "w") as pipe:
                pipe.write("now\n")
            run.wait(lambda: "Both done." in run.screen.text() and run.states()[-1] == "waiting", 60, "the answer")
            assert "PostToolBatch" not in run.screen.text()  # the hook's run is not shown on the person's screen
        finally:
            with contextlib.suppress(OSError):  # a failed check left the cat waiting: let it end
                os.close(os.open(work / "slow.fifo", os.O_WRONLY | os.O_NONBLOCK))
            run.finish()
    states = [s for n, s in enumerate(run.states()) if n == 0 or run.states()[n - 1] != s]  # one tool per PreToolUse
    assert states[states.index("tool") :] == ["tool", "thinking", "waiting", "exited"], states  # thinking after the batch


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
            run.wait(lambda: run.states()[-1:] == ["asking"] and "Do you want" in run.screen.text(), 60, "asking")
            answer_prompt(run, "\x1b")  # refuse: no Stop hook runs, the transcript says the turn ended
            run.wait(lambda: run.states()[-1:] == ["waiting"], 30, "waiting after the refusal")
            shown = run.screen.text().count("/compact")
            run.screen.child.send("/compact")
            # Enter once the interface took the command (it shows it), not after a guess of how long that takes.
            run.wait(lambda: run.screen.text().count("/compact") > shown, 30, "the typed /compact")
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


def test_a_resumed_session_counts_only_its_new_calls(claude_bin: Path, short_tmp: Path) -> None:
    # --resume appends to the same transcript, and its cost-state totals carry the earlier launch's calls.
    api = FakeAnthropic(
        [text_reply("first answer", ApiUsage(12, 5000, 9000, 7)), text_reply("second answer", ApiUsage(10, 300, 14000, 5))]
    )
    home, work = short_tmp / "home", short_tmp / "work"
    for folder in (home, work):
        folder.mkdir()
    seed_home(home, [work])
    session = str(uuid.uuid4())
    got: list[list[NativeItem]] = []
    with api.serve():
        assert api.server is not None
        env = tui_env(api.server.url, home)
        for n, (flag, prompt, answer) in enumerate(
            [("--session-id", "hello", "first answer"), ("--resume", "again", "second answer")]
        ):
            runtime = short_tmp / f"rt{n}"
            runtime.mkdir(mode=0o700)
            ctx = NativeContext("reviewer", session, n == 1, work, env, runtime, time.time(), sys.executable)
            extras = native_extras(ctx)
            argv = [str(claude_bin), flag, session, "--model", "claude-sonnet-4-5", *extras.argv, prompt]
            run = Run(spawn(argv, {**env, **extras.env}, work), extras.sources[0])
            try:
                run.wait(lambda r=run, a=answer: a in r.screen.text() and r.states()[-1:] == ["waiting"], 60, answer)
            finally:
                run.finish()
            got.append(run.items)
    assert [(c.call_id, c.usage.output) for c in calls(got[0])] == [("msg_fake_0001", 7)]
    assert [(c.call_id, c.usage.output) for c in calls(got[1])] == [("msg_fake_0002", 5)]  # no history, no side sum
    # The fake API's answer text, once per launch: the resumed launch's transcript holds the first answer as history.
    assert [[i.text for i in items if isinstance(i, Text)] for items in got] == [["first answer"], ["second answer"]]


def test_a_transcript_folder_claude_cannot_create_leaves_the_tui_running_and_says_so(claude_bin: Path, short_tmp: Path) -> None:
    api = FakeAnthropic([text_reply("unmetered answer", ApiUsage(12, 5000, 9000, 7))])
    home, work, runtime = short_tmp / "home", short_tmp / "work", short_tmp / "rt"
    for folder in (home, work, runtime):
        folder.mkdir(mode=0o700)
    seed_home(home, [work])
    (home / ".claude").mkdir()
    (home / ".claude" / "projects").write_text("a file where Claude Code's folder should be")
    with api.serve():
        assert api.server is not None
        env = tui_env(api.server.url, home)
        session = str(uuid.uuid4())
        ctx = NativeContext("reviewer", session, False, work, env, runtime, time.time(), sys.executable)
        extras = native_extras(ctx)
        assert len(extras.notices) == 1 and "not a folder" in extras.notices[0]
        argv = [str(claude_bin), "--session-id", session, "--model", "claude-sonnet-4-5", *extras.argv, "hello"]
        run = Run(spawn(argv, {**env, **extras.env}, work), extras.sources[0])
        try:
            run.wait(lambda: "unmetered answer" in run.screen.text() and run.states()[-1:] == ["waiting"], 60, "the answer")
        finally:
            run.finish()
    assert calls(run.items) == []
    assert [i.message for i in run.items if isinstance(i, Warning)][0].startswith("Claude Code wrote no transcript at ")


def test_clear_moves_to_a_new_transcript_and_every_call_is_still_counted_once_beside_a_failing_status_line(
    claude_bin: Path, short_tmp: Path
) -> None:
    """A user's status line that fails leaves agentlaunch's line on Claude's screen (with a note), and the calls
    are counted as ever; then /clear moves to a new transcript and every call is still counted once."""
    api = FakeAnthropic(
        [text_reply("before clear", ApiUsage(12, 5000, 9000, 7)), text_reply("after clear", ApiUsage(9, 100, 0, 3))]
    )
    with api.serve():
        run = start(claude_bin, api, short_tmp, "hello", None, user_line="exit 4")
        try:
            run.wait(lambda: "before clear" in run.screen.text() and run.states()[-1:] == ["waiting"], 60, "the first answer")
            shown = "(your status line failed: exit 4) │ ctx 14,012/200k"
            run.wait(lambda: shown in run.screen.text(), 30, "agentlaunch's line beside the note")
            run.screen.child.send("/clear")
            run.settle(0.5)
            run.screen.child.send("\r")
            run.settle(2.0)
            run.screen.child.send("next question")
            run.settle(0.5)
            run.screen.child.send("\r")
            run.wait(lambda: "after clear" in run.screen.text() and run.states()[-1:] == ["waiting"], 60, "the second answer")
        finally:
            run.finish()
    got = [(c.call_id, c.usage.input, c.usage.output) for c in calls(run.items)]
    assert got[:2] == [("msg_fake_0001", 12, 7), ("msg_fake_0002", 9, 3)]
    assert all(c[0].startswith("side-calls-") for c in got[2:])  # only calls without assistant lines, if any
    # Every request the API answered is in the figures once: the rest were the fake's default (10 in, 5 out).
    extra = len(api.message_requests()) - 2
    assert (sum(c[1] for c in got), sum(c[2] for c in got)) == (12 + 9 + 10 * extra, 7 + 3 + 5 * extra)


def test_a_question_from_the_model_is_asking_until_the_person_answers_beside_a_hanging_status_line(
    claude_bin: Path, short_tmp: Path
) -> None:
    """A user's status line that hangs leaves agentlaunch's line on Claude's screen (with a note)."""
    question = {
        "questions": [
            {
                "question": "Which colour should the button be?",
                "header": "Colour",
                "multiSelect": False,
                "options": [{"label": "Red", "description": "a red one"}, {"label": "Blue", "description": "a blue one"}],
            }
        ]
    }
    api = FakeAnthropic(
        [
            tool_reply("AskUserQuestion", question, ApiUsage(30, 1000, 9000, 20)),
            text_reply("Blue it is.", ApiUsage(5, 50, 10000, 4)),
        ]
    )
    with api.serve():
        run = start(claude_bin, api, short_tmp, "make a button", None, user_line="sleep 30")
        try:
            run.wait(
                lambda: "Which colour" in run.screen.text() and run.states()[-1:] == ["asking"], 60, "asking with the question"
            )
            for _ in range(10):
                run.settle(1.0)
                run.screen.child.send("2")
                run.settle(1.0)
                if "Which colour" not in run.screen.text() or "Blue it is." in run.screen.text():
                    break
            run.wait(lambda: "Blue it is." in run.screen.text() and run.states()[-1:] == ["waiting"], 60, "the answer")
            shown = "(your status line timed out after 1.5s) │ ctx 10,055/200k"  # the last call's 5 + 50 + 10,000
            run.wait(lambda: shown in run.screen.text(), 30, "agentlaunch's line beside the note")
        finally:
            run.finish()
    states = run.states()
    assert states.index("asking") < states.index("thinking", states.index("asking"))
    assert [(c.call_id, c.usage.output) for c in calls(run.items)][:2] == [("msg_fake_0001", 20), ("msg_fake_0002", 4)]
