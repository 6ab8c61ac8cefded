"""`stalled`, `retrying` and `done`, in process: a Launch on an injected clock, its loop's timers run by hand.

No real 5-minute wait and no timing assertion: the clock is moved, the loop runs the timers that fell due, and
the states, the status record and the needs-you announcements are read.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.definitions.settings import load_settings
from agentlaunch.definitions.spec import load_agent, resolve_working_dir
from agentlaunch.errors import DefinitionError
from agentlaunch.events import Diagnostic, TextDelta, ToolUse, Warning
from agentlaunch.launch.options import LaunchOptions
from agentlaunch.launch.reaper import Reaper
from agentlaunch.launch.session import Launch, spawn_child
from agentlaunch.live.needs_you import NeedsYou
from agentlaunch.live.status import StatusWriter, duration, one_line, shown_state
from agentlaunch.providers import get_adapter
from agentlaunch.providers.claude_parser import ClaudeParser
from agentlaunch.providers.native.claude_transcript import CallsFromTranscript
from agentlaunch.sinks import PromptSent, StateChanged, TurnDone
from agentlaunch.usage.meter import Meter
from agentlaunch.usage.pricing import Pricer
from agentlaunch.usage.store import Store
from testbed.agent_files import write_agent
from tests.support.cli_runs import run_cli
from tests.test_launch_inprocess import Collect


class ManualClock:
    """The launch's clock: monotonic time moves only when the test says so."""

    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t

    def now(self) -> datetime:
        return datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


class Harness:
    def __init__(self, agents_dir: Path, tmp_path: Path, stall_timeout: float | None = 300.0) -> None:
        state = tmp_path / "state"
        spec = load_agent(agents_dir, "demo", state)
        self.clock = ManualClock()
        self.collected = Collect()
        self.status = StatusWriter(tmp_path / "status", pid=None, interval=0.0, clock=self.clock.monotonic, pane_title=False)
        self.needs = NeedsYou(bell=False, pane=None, tmux=None, after=30.0, clock=self.clock.monotonic)
        self.store = Store.open(tmp_path / "usage.sqlite3")
        self.launch = Launch(
            LaunchOptions(agent="demo", agents_dir=agents_dir, stall_timeout=stall_timeout),
            spec=spec,
            adapter=get_adapter(spec.provider),
            store=self.store,
            pricer=Pricer(agents_dir=spec.agents_dir),
            meter=Meter(model=spec.model),
            sinks=[self.collected, self.status, self.needs],  # type: ignore[list-item]
            state_dir=state,
            working_dir=resolve_working_dir(spec, None, state),
            clock=self.clock,
            child_factory=spawn_child,
            reaper=Reaper(subreaper=False),
        )

    def after(self, seconds: float) -> None:
        """Move the clock on and let the loop run every timer that fell due (nothing else waits on it)."""
        self.clock.t += seconds
        loop = self.launch.loop
        loop.call_later(0.0, loop.stop)
        loop.run()

    def record(self) -> dict[str, Any]:
        self.status.flush()
        data: dict[str, Any] = json.loads(self.status.path.read_text())
        return data

    def close(self) -> None:
        self.status.close()
        self.store.close()
        self.launch.loop.close()


@pytest.fixture
def h(agents_dir: Path, tmp_path: Path) -> Any:
    harness = Harness(agents_dir, tmp_path)
    yield harness
    harness.close()


def states(h: Harness) -> list[str]:
    return [e.state for e in h.collected.events if isinstance(e, StateChanged)]  # type: ignore[attr-defined]


def test_a_turn_that_hears_nothing_for_stall_timeout_is_stalled_with_the_needs_you_signals(h: Harness) -> None:
    h.launch.set_state("thinking")
    h.after(299)
    assert h.launch.state == "thinking"
    h.after(1)
    assert h.launch.state == "stalled"
    record = h.record()
    assert record["state"] == "stalled"
    assert "no report from the CLI for 5m00s while thinking" in record["state_reason"]
    assert one_line(record).startswith("demo · STALLED: needs you")
    (announced,) = h.needs.announced
    assert announced["state"] == "stalled" and "5m00s" in announced["reason"]


def test_progress_ends_a_stall_back_in_the_state_the_cli_last_reported(h: Harness) -> None:
    h.launch.set_state("tool")
    h.after(300)
    assert h.launch.state == "stalled"
    assert "while a tool running" in str(h.record()["state_reason"])
    h.launch.handle(Diagnostic("the tool printed a line"))  # any line the CLI writes is a report
    assert h.launch.state == "tool"
    assert h.record()["state_reason"] is None
    assert states(h)[-3:] == ["tool", "stalled", "tool"]
    # The watch goes on: silence again is a stall again.
    h.after(300)
    assert h.launch.state == "stalled"


def test_a_native_source_item_is_progress(h: Harness) -> None:
    h.launch.set_state("thinking")
    h.after(300)
    h.launch.liveness.progress()  # what NativeRun.on_items does for every hook, transcript line or record
    assert h.launch.state == "thinking"


def test_progress_before_the_deadline_moves_it(h: Harness) -> None:
    h.launch.set_state("thinking")
    h.after(200)
    h.launch.handle(TextDelta("still streaming"))
    h.after(100)  # 300 s since the turn began, 100 s since the CLI last said something
    assert h.launch.state == "thinking"
    h.after(199)
    assert h.launch.state == "thinking"
    h.after(1)
    assert h.launch.state == "stalled"


@pytest.mark.parametrize("idle", ["waiting", "asking", "starting"])
def test_an_agent_that_owes_no_report_is_never_stalled(h: Harness, idle: str) -> None:
    h.launch.set_state("thinking")
    h.launch.set_state(idle)
    h.after(10_000)
    assert h.launch.state == idle


def test_stall_detection_off_without_a_timeout(agents_dir: Path, tmp_path: Path) -> None:
    h = Harness(agents_dir, tmp_path, stall_timeout=None)
    try:
        h.launch.set_state("thinking")
        h.after(10_000)
        assert h.launch.state == "thinking"
    finally:
        h.close()


def test_a_reported_retry_is_retrying_with_its_cause_until_the_call_answers(h: Harness) -> None:
    h.launch.set_state("thinking")
    h.launch.handle(Warning("API call failed; retry 3/10 in 4.0s", retry="529 overloaded, attempt 3/10"))
    assert h.launch.state == "retrying"
    record = h.record()
    assert record["state_reason"] == "529 overloaded, attempt 3/10"
    assert shown_state("retrying", record) == "retrying (529 overloaded, attempt 3/10)"
    h.launch.handle(Warning("API call failed; retry 4/10 in 8.0s", retry="529 overloaded, attempt 4/10"))
    assert h.record()["state_reason"] == "529 overloaded, attempt 4/10"  # each attempt is news
    assert h.needs.announced == []  # a retry loop usually recovers: no alarm
    h.launch.handle(ToolUse("t1", "Bash"))  # the retried call answered and asked for a tool
    assert h.launch.state == "tool"
    # A retry loop that stops reporting is stalled too.
    h.launch.handle(Warning("retry", retry="500 server_error, attempt 1/10"))
    h.after(300)
    assert h.launch.state == "stalled"
    assert "while retrying its API call" in str(h.record()["state_reason"])


def test_a_warning_that_is_no_retry_changes_no_state(h: Harness) -> None:
    h.launch.set_state("thinking")
    h.launch.handle(Warning("permission denied for Bash"))
    assert h.launch.state == "thinking"


def test_done_after_a_turn_ended_and_waiting_before_any(h: Harness) -> None:
    h.launch.set_state("waiting")
    record = h.record()
    assert record["state"] == "waiting" and record["done"] is False
    assert one_line(record).startswith("demo · waiting")
    h.launch.set_state("thinking")  # the startup message's turn: no one's task
    h.launch.emit(PromptSent(""))
    h.launch.set_state("waiting")
    h.launch.emit(TurnDone())
    assert h.record()["done"] is False
    h.launch.set_state("thinking")  # a prompt of the person's, or agentlaunch send's
    h.launch.emit(PromptSent("Review the last commit"))
    h.launch.set_state("waiting")
    h.launch.emit(TurnDone())
    record = h.record()
    assert record["state"] == "waiting" and record["done"] is True  # the state scripts match stays waiting
    assert one_line(record).startswith("demo · done")
    h.launch.set_state("thinking")  # the next prompt: no longer done
    assert h.record()["done"] is False


def test_claude_code_api_retry_message_is_a_warning_with_its_cause() -> None:
    parser = ClaudeParser()
    line = {
        "type": "system",
        "subtype": "api_retry",
        "attempt": 3,
        "max_retries": 10,
        "retry_delay_ms": 4200,
        "error_status": 529,
        "error": "overloaded",
    }
    (event,) = parser.feed(json.dumps(line))
    assert isinstance(event, Warning)
    assert event.retry == "529 overloaded, attempt 3/10"
    assert event.message == "API call failed; retry 3/10 in 4.2s"  # unchanged for the JSON lines' readers
    bare = {"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 2}
    (event,) = parser.feed(json.dumps(bare))
    assert isinstance(event, Warning) and event.retry == "an API error, attempt 1/2"


def test_the_same_request_sent_again_in_the_transcript_is_retrying() -> None:
    calls = CallsFromTranscript()
    request = {"type": "api-request", "querySource": "repl_main_thread", "requestDigest": "d1"}
    assert calls.line({"type": "user", "message": {"role": "user", "content": "hi"}}) == []
    assert calls.line(request) == []
    (first,) = calls.line(request)
    assert isinstance(first, StateChanged) and first.state == "retrying"
    assert first.reason is not None and "sent 2 times" in first.reason and "does not say why" in first.reason
    (second,) = calls.line(request)
    assert second.reason is not None and "sent 3 times" in second.reason  # type: ignore[attr-defined]
    # Another request (a tool's result went with it) is no retry; nor is one after an answer.
    assert calls.line({**request, "requestDigest": "d2"}) == []
    calls.line({"type": "assistant", "message": {"id": "m1", "content": [], "usage": {"input_tokens": 1, "output_tokens": 1}}})
    assert calls.line({**request, "requestDigest": "d2"}) == []


@pytest.mark.parametrize("value", ["0", "-3", "true", "soon", ".nan"])
def test_a_stall_timeout_that_is_no_positive_number_is_a_definition_error(tmp_path: Path, value: str) -> None:
    (tmp_path / "config.yaml").write_text(f"stall_timeout: {value}\n")
    with pytest.raises(DefinitionError, match="stall_timeout: expected seconds, a number above 0"):
        load_settings(tmp_path)


def test_a_stall_timeout_is_read_from_config_yaml(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("stall_timeout: 45\n")
    assert load_settings(tmp_path).stall_timeout == 45.0
    (tmp_path / "config.yaml").write_text("bell: true\n")
    assert load_settings(tmp_path).stall_timeout is None


def test_a_bad_stall_timeout_stops_run_with_a_clear_error(agents_dir: Path, tmp_path: Path, workdir: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.yaml").write_text("stall_timeout: -5\n")
    write_agent(agents_dir, "quick", {"provider": "fake", "working_dir": str(workdir)})
    env = {"AGENTLAUNCH_CONFIG_DIR": str(config), "AGENTLAUNCH_AGENTS_DIR": str(agents_dir)}
    done = run_cli("run", "quick", "hello", env=env)
    assert done.returncode == 3
    assert b"stall_timeout: expected seconds, a number above 0 (got -5)" in done.stderr
    assert b"Traceback" not in done.stderr


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (45.9, "45s"), (300, "5m00s"), (7500, "2h05m")])
def test_durations_read_as_in_status(seconds: float, text: str) -> None:
    assert duration(seconds) == text


def test_a_turn_that_failed_is_not_done(h: Harness) -> None:
    from agentlaunch.events import TurnEnd

    h.launch.set_state("thinking")  # headless and the line chat: the turn's TurnEnd says it failed
    h.launch.emit(PromptSent("Review the last commit"))
    h.launch.handle(TurnEnd(is_error=True, error="API Error: 529 overloaded"))
    h.launch.set_state("waiting")
    h.launch.emit(TurnDone())
    assert h.record()["done"] is False
    h.launch.set_state("thinking")  # a native interface: its waiting carries why (NativeRun's reason)
    h.launch.emit(PromptSent("Again"))
    h.launch.set_state("waiting", reason="its last turn failed: the API call failed (overloaded)")
    h.launch.emit(TurnDone())
    record = h.record()
    assert record["done"] is False
    assert one_line(record).startswith("demo · waiting (its last turn failed: the API call failed (overloaded))")


def test_codex_exec_reconnecting_is_a_warning_with_its_cause() -> None:
    from agentlaunch.providers.codex import reconnecting

    said = "Reconnecting... 2/5 (We’re currently experiencing high demand, which may cause temporary errors.)"
    assert reconnecting(said) == "We’re currently experiencing high demand, which may cause temporary errors., attempt 2/5"
    assert reconnecting("Reconnecting... 1/5") == "the stream failed, attempt 1/5"
    assert reconnecting("We’re currently experiencing high demand") is None  # the last error: the turn fails next


def test_gemini_retrying_line_is_a_warning_with_its_cause_beside_the_diagnostic() -> None:
    from agentlaunch.events import Diagnostic
    from agentlaunch.providers.gemini import GeminiParser

    line = (
        'Attempt 3 failed with status 503. Retrying with backoff... _ApiError: {"error":{"code":503,'
        '"message":"The model is overloaded.","status":"UNAVAILABLE"}}'
    )
    diagnostic, warning = GeminiParser().read_line(line)
    assert diagnostic == Diagnostic(line)  # the JSON lines keep the line as before
    assert isinstance(warning, Warning) and warning.retry == "503 The model is overloaded., attempt 3"
    _, bare = GeminiParser().read_line("Attempt 2 failed with status 429. Retrying with backoff... not json")
    assert isinstance(bare, Warning) and bare.retry == "429, attempt 2"
    assert GeminiParser().read_line("Attempt two failed") == [Diagnostic("Attempt two failed")]


def test_a_question_that_comes_after_asking_or_changes_while_asking_is_written_and_announced_once(h: Harness) -> None:
    h.launch.set_state("thinking")
    h.launch.set_state("asking", reason="Codex waits for an approval in its interface")
    h.launch.set_state("asking", reason="shell: touch x")  # the approval request, after the thread's status
    assert h.record()["state"] == "asking" and h.record()["state_reason"] == "shell: touch x"
    h.launch.set_state("asking")  # a later report that says no more (Claude Code's notification): the question stays
    assert h.record()["state_reason"] == "shell: touch x"
    asked = [e for e in h.collected.events if isinstance(e, StateChanged) and e.state == "asking"]
    assert [e.reason for e in asked] == ["Codex waits for an approval in its interface", "shell: touch x"]
    assert len([a for a in h.needs.announced if a["state"] == "asking"]) == 1  # one question waits: one alarm
