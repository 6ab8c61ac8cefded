"""`agentlaunch run AGENT` in native mode on the real Codex and Gemini TUIs, against the fake APIs, offline.

agentlaunch runs on a PTY (pexpect), the CLI's own interface relayed; pyte
reads the screen. Pinned: the store holds the fake API's exact figures for a
tool turn, each call once (the same a headless run records); ``status --json``
shows ``waiting`` after the turn (``asking`` while Codex's permission prompt
waits); ``-c`` continues the same session and records only its own calls, a headless
turn (``run -c PROMPT``) between two interface runs too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.fakeapi import gemini as gfake
from agentlaunch.fakeapi import responses as cfake
from agentlaunch.launch.early.early_appserver import ROUTE_ENV
from agentlaunch.usage.store import Store
from testbed.agent_files import write_agent
from testbed.clis import ensure_cli
from testbed.native_tui import TitledResponsesFake, seed_codex_home
from testbed.pty_screen import Screen, spawn
from tests.support.cli_runs import run_cli_inprocess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

STARTUP = "STARTUP-7781 begin with the newest file."


@pytest.fixture
def short_root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="alcg-") as folder:
        yield Path(folder)


class Agent:
    """One native agent: its environment, and `agentlaunch run|status|sessions` in it."""

    def __init__(self, env: dict[str, str], agents_dir: Path, work: Path, name: str) -> None:
        self.env, self.agents_dir, self.work, self.name = env, agents_dir, work, name

    def run(self, *args: str) -> Screen:
        argv = [sys.executable, "-m", "agentlaunch", "run", self.name, "--agents-dir", str(self.agents_dir), *args]
        return spawn(argv, self.env, self.work)

    def cli(self, *args: str) -> Any:
        done = run_cli_inprocess(*args, env=self.env, cwd=self.work)  # polled: no Python start per look
        assert done.returncode == 0, done.stderr.decode()
        return json.loads(done.stdout)

    def state(self) -> str | None:
        return str(self.record().get("state")) if self.record() else None

    def record(self) -> dict[str, Any]:
        records = [r for r in self.cli("status", "--json") if r.get("agent") == self.name]
        return dict(records[-1]) if records else {}

    def cli_report(self) -> dict[str, Any]:
        """The CLI's own latest OSC 7501 report, as the status record keeps it ({} when none came)."""
        return dict(self.record().get("cli_report") or {})

    def session(self) -> dict[str, Any]:
        sessions = self.cli("sessions", "--json")
        assert len(sessions) == 1, sessions
        return dict(sessions[0])

    def calls(self) -> list[dict[str, int]]:
        with Store.open(Path(self.env["AGENTLAUNCH_STATE_DIR"]) / "usage.sqlite3") as store:
            return [c.usage.as_dict() for c in store.calls_for_session(self.session()["session_id"])]


def until(tui: Screen, check: Callable[[], bool], what: str, timeout: float = 60) -> None:
    """Pump the screen, checking now and then (status and the store are read by subprocesses)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        tui.within(lambda: False, 0.5)
        if check():
            return
    raise AssertionError(f"timed out waiting for {what}; screen:\n{tui.text()}")


def type_prompt(tui: Screen, text: str, answer: str) -> None:
    """Type ``text`` once the CLI shows it in its input box (keys sent while it still loads are dropped), then Enter,
    and Enter again, as a person would, while ``answer`` has not come: Gemini 0.61 under load left a typed prompt in
    its box now and then (the Enter read with the typed keys as one burst: taken as part of a paste)."""
    for _ in range(5):
        tui.within(lambda: False, 1.0)
        tui.child.send(text)
        if tui.within(lambda: text in tui.text(), 5):
            break
        tui.child.send("\x7f" * len(text))
    assert text in tui.text(), tui.text()
    for _ in range(3):
        tui.within(lambda: False, 0.3)
        tui.child.send("\r")
        if tui.within(lambda: answer in tui.text(), 20):
            return


def quit_tui(tui: Screen) -> None:
    for _ in range(3):
        if not tui.child.isalive():
            break
        tui.child.sendcontrol("c")  # both CLIs exit on a second Ctrl-C soon after the first
        tui.within(lambda: not tui.child.isalive(), 0.5)
        tui.child.sendcontrol("c")
        tui.within(lambda: not tui.child.isalive(), 5)
    tui.within(lambda: not tui.child.isalive(), 30)
    assert not tui.child.isalive(), tui.text()
    tui.child.close()


def environment(base: dict[str, str], agents_dir: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k.startswith(("AGENTLAUNCH_", "PYTHON"))}
    return {**base, **keep, "AGENTLAUNCH_AGENTS_DIR": str(agents_dir), "AGENTLAUNCH_TITLE": "0", "TERM": "xterm-256color"}


def headless_turn(agent: Agent, answer: str) -> None:
    """`agentlaunch run AGENT -c "a headless turn"` between two interface runs: the same session, its answer printed."""
    headless = subprocess.run(
        [sys.executable, "-m", "agentlaunch", "run", agent.name, "-c", "a headless turn"],
        env=agent.env,
        cwd=agent.work,
        capture_output=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert headless.returncode == 0, headless.stderr.decode()
    assert answer in headless.stdout.decode()


def usage(input: int, cache_read: int, output: int, reasoning: int = 0) -> dict[str, int]:
    return {
        "input": input,
        "cache_write": 0,
        "cache_read": cache_read,
        "output": output,
        "reasoning": reasoning,
        "cache_write_1h": 0,
    }


def test_codex_native_run_meters_a_tool_turn_shows_states_and_a_headless_then_a_native_turn_resume(
    short_root: Path, agents_dir: Path
) -> None:
    codex = ensure_cli("codex")
    work = short_root / "work"
    work.mkdir()
    escalated = {"cmd": "touch made-by-tool", "sandbox_permissions": "require_escalated", "justification": "a test"}
    script = cfake.ResponsesScript(
        [
            cfake.ShellCallReply(arguments=escalated, usage=cfake.ResponsesUsage(9000, 8000, 7, 3)),
            cfake.TextReply("first answer done", cfake.ResponsesUsage(9100, 9000, 5, 0)),
            cfake.TextReply("headless two done", cfake.ResponsesUsage(9150, 9100, 6, 0)),
            cfake.TextReply("resumed answer done", cfake.ResponsesUsage(9200, 9100, 4, 0)),
        ]
    )
    write_agent(
        agents_dir,
        "coder",
        {
            "display": "Coder",
            "provider": "codex",
            "model": "gpt-5.5",
            "command": str(codex),
            "working_dir": str(work),
            "startup": STARTUP,
        },
    )
    with TitledResponsesFake(script) as api:
        base = seed_codex_home(short_root / "home", api.base_url, work, extra='approval_policy = "on-request"\n')
        agent = Agent(environment(base, agents_dir), agents_dir, work, "coder")
        tui = agent.run()
        try:
            until(tui, lambda: "Would you like to run" in tui.text() or "allow" in tui.text().lower(), "Codex's approval prompt")
            until(tui, lambda: agent.state() == "asking", "status 'asking' while the prompt waits")
            # Codex's own OSC 7501 report, read from its output by the relay (measured: `blocked`, `kind=permission`).
            until(tui, lambda: agent.cli_report().get("state") == "blocked", "Codex's own report: blocked")
            assert agent.cli_report()["kind"] == "permission" and agent.cli_report()["app"] == "codex"
            tui.child.send("y")
            until(tui, lambda: "first answer done" in tui.text(), "the startup turn's answer")
            until(tui, lambda: agent.state() == "waiting", "status 'waiting' after the turn")
            until(tui, lambda: agent.cli_report().get("state") in ("done", "idle"), "Codex's own report: done")
            assert (work / "made-by-tool").exists()
            assert STARTUP in "\n".join(cfake.user_texts(api.turn_requests[0].body))
        finally:
            quit_tui(tui)
        # Each call once, Codex's input less its cached part: what a headless run records for these calls.
        assert agent.calls() == [usage(1000, 8000, 7, 3), usage(100, 9000, 5)]
        first_thread = {r.body.get("prompt_cache_key") for r in api.turn_requests}
        assert len(first_thread) == 1

        # A headless turn of the same session between two interface runs: each call still counted once.
        headless_turn(agent, "headless two done")
        agent.env = {**agent.env, ROUTE_ENV: "direct"}  # the other route: Codex's interface with its own app-server
        tui = agent.run("-c")
        try:
            until(tui, lambda: "Ask Codex" in tui.text() or "›" in tui.text(), "the resumed interface")
            type_prompt(tui, "one more", "resumed answer done")
            until(tui, lambda: "resumed answer done" in tui.text(), "the resumed answer")
            until(tui, lambda: agent.state() == "waiting", "status 'waiting' after the resumed turn")
            # The direct route reports the same way (Codex never probes: it reports on any terminal).
            until(tui, lambda: agent.cli_report().get("state") in ("done", "idle"), "Codex's own report, direct route")
            assert agent.cli_report()["app"] == "codex" and agent.record()["resumed"] is True
            assert "7501" not in tui.text()  # its reports are taken out of what the person's terminal gets
        finally:
            quit_tui(tui)
        assert len(api.turn_requests) == 4
        assert {r.body.get("prompt_cache_key") for r in api.turn_requests} == first_thread  # the same thread
        assert STARTUP not in "\n".join(cfake.user_texts(api.turn_requests[-1].body)).split("one more")[-1]
        assert agent.calls() == [usage(1000, 8000, 7, 3), usage(100, 9000, 5), usage(50, 9100, 6), usage(100, 9100, 4)]
        assert agent.session()["provider"] == "codex"
        assert agent.session()["turns"] == 3  # interface, headless, interface
        # The startup message names no id of agentlaunch's: the session is known by Codex's thread id.
        first_text = "\n".join(cfake.user_texts(api.turn_requests[0].body))
        assert "Session: the id codex gives this conversation as it starts" in first_text
        assert first_thread == {agent.session()["session_id"]}


def test_gemini_native_run_meters_a_tool_turn_shows_waiting_and_a_headless_then_a_native_turn_resume(
    short_root: Path, agents_dir: Path
) -> None:
    gemini = ensure_cli("gemini")
    work = short_root / "work"
    work.mkdir()
    (work / "notes.txt").write_text("hello notes\n")
    script = gfake.GeminiScript(
        [
            gfake.FunctionCallReply("read_file", {"file_path": str(work / "notes.txt")}, gfake.GeminiUsage(9000, 7, 6000, 3)),
            gfake.TextReply("first answer done", gfake.GeminiUsage(9100, 5, 9000)),
            gfake.TextReply("headless two done", gfake.GeminiUsage(9150, 6, 9100)),
            gfake.TextReply("resumed answer done", gfake.GeminiUsage(9200, 4, 9100)),
        ]
    )
    write_agent(
        agents_dir,
        "helper",
        {
            "display": "Helper",
            "provider": "gemini",
            "model": "gemini-2.5-pro",
            "command": str(gemini),
            "working_dir": str(work),
            "startup": STARTUP,
        },
    )
    with gfake.GeminiFake(script) as api:
        base = gfake.prepare_gemini_home(short_root / "home", api.base_url, max_attempts=1, no_relaunch=True)  # one node
        agent = Agent(environment(base, agents_dir), agents_dir, work, "helper")
        tui = agent.run()
        try:
            until(tui, lambda: "first answer done" in tui.text(), "the startup turn's answer")
            until(tui, lambda: agent.state() == "waiting", "status 'waiting' after the turn")
            assert STARTUP in "\n".join(gfake.user_texts(api.model_requests[0].body))
            record = agent.record()  # Gemini 0.61 writes no OSC 7501: its hooks alone say the state
            assert record["cli_report"] is None and record["state_source"] == "hooks", record
        finally:
            quit_tui(tui)
        # thoughts are billed as output; input is the uncached part (as the headless split records them).
        assert agent.calls() == [usage(3000, 6000, 10, 3), usage(100, 9000, 5)]

        # A headless turn of the same session between two interface runs: each call still counted once.
        headless_turn(agent, "headless two done")
        tui = agent.run("-c")
        try:
            until(tui, lambda: "Type your message" in tui.text(), "the resumed interface")
            type_prompt(tui, "one more", "resumed answer done")
            until(tui, lambda: "resumed answer done" in tui.text(), "the resumed answer")
            until(tui, lambda: agent.state() == "waiting", "status 'waiting' after the resumed turn")
        finally:
            quit_tui(tui)
        assert len(api.model_requests) == 4
        last = json.dumps(api.model_requests[-1].body)
        assert "first answer done" in last and "headless two done" in last  # the same conversation
        assert agent.calls() == [usage(3000, 6000, 10, 3), usage(100, 9000, 5), usage(50, 9100, 6), usage(100, 9100, 4)]
        assert agent.session()["turns"] == 3  # interface, headless, interface
