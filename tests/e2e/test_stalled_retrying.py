"""`retrying`, `stalled` and `done` with the real Claude Code, in a private tmux server and headless.

The fake Anthropic API fails with 529 (Claude Code retries by itself, 10 times by default) or holds a response
open (Claude Code waits, its spinner turning, reporting nothing). The states are read with `status --json`,
the panes with `capture-pane`; `stall_timeout` comes from the config directory's `config.yaml`. Every wait is
for a state or a screen, never a fixed sleep.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.fakeapi.anthropic import FakeAnthropic, claude_env, error_reply, text_reply
from agentlaunch.fakeapi.server import FakeServer, Recorded, Reply
from agentlaunch.launch.native.interrupt_watch import RETRY_INTERRUPTED
from testbed.agent_files import write_agent
from testbed.claude_tui import seed_home
from tests.e2e.test_tmux_ready_states import pane_of, screen, tmux
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.required import need
from tests.support.waits import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

need("tmux")

OVERLOADED = error_reply(529, "overloaded now")


class HeldApi:
    """The fake Anthropic API, with a switch: the next model call is held open (no byte of a reply) until released."""

    def __init__(self) -> None:
        self.api = FakeAnthropic()
        self.hold_next = False
        self.held = threading.Event()
        self.release = threading.Event()
        self.server = FakeServer(self.respond)

    def respond(self, req: Recorded) -> Reply:
        if req.method == "POST" and req.path.split("?")[0].rstrip("/") == "/v1/messages" and self.hold_next:
            self.hold_next = False
            self.held.set()
            self.release.wait(240)
        return self.api.respond(req)


@pytest.fixture
def held() -> Iterator[HeldApi]:
    api = HeldApi()
    with api.server:
        yield api
        api.release.set()


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "config"
    folder.mkdir()
    return folder


def team_env(url: str, home: Path, agents_dir: Path, config_dir: Path, workdir: Path) -> dict[str, str]:
    """Claude Code pointed at the fake API with its own retries (10 by default), a set-up user's home."""
    env = claude_env(url, home)
    seed_home(home, [workdir], key=env["ANTHROPIC_API_KEY"])
    env.update(AGENTLAUNCH_AGENTS_DIR=str(agents_dir), AGENTLAUNCH_CONFIG_DIR=str(config_dir))
    return env


def pane_option(socket: str, pane: str, fmt: str) -> str:
    return tmux(socket, "display-message", "-p", "-t", pane, fmt).strip()


def record(env: dict[str, str], cwd: Path, agent: str) -> dict[str, Any]:
    records = json.loads(run_cli_inprocess("status", "--json", env=env, cwd=cwd).stdout)
    return next((r for r in records if r.get("agent") == agent), {})


def wait_state(
    env: dict[str, str], cwd: Path, agent: str, socket: str, test: Any, what: str, timeout: float = 90
) -> dict[str, Any]:
    """Wait until the agent's record passes ``test``; fail with the record and the pane's screen."""
    try:
        return dict(wait_for(lambda: (r := record(env, cwd, agent)) and test(r) and r, timeout=timeout, what=what))
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {record(env, cwd, agent)}\n{screen(socket, pane_of(socket, agent))}") from None


def headless_while_retrying(env: dict[str, str], cwd: Path, agent: str, timeout: float = 120) -> tuple[dict[str, Any], list[Any]]:
    """Run ``agentlaunch run AGENT "Say hello." --json`` headless; its record once it says retrying, and its JSON lines."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentlaunch", "run", agent, "Say hello.", "--json"],
        env={**os.environ, **env},
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        shown = wait_for(
            lambda: (r := record(env, cwd, agent)).get("state") == "retrying" and r, timeout=timeout, what="retrying"
        )
        out, err = proc.communicate(timeout=150)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err.decode()
    return shown, [json.loads(line) for line in out.decode().splitlines()]


def retries_of(lines: list[Any]) -> list[str]:
    return [line["retry"] for line in lines if line["event"] == "warning" and line.get("retry")]


def start(env: dict[str, str], cwd: Path, agents_dir: Path, socket: str, agent: str) -> str:
    write_agent(
        agents_dir,
        agent,
        {"provider": "claude", "model": "claude-sonnet-4-5", "command": str(claude_cli()), "working_dir": str(cwd)},
    )
    up = run_cli("tmux", "up", agent, "--socket", socket, "--no-attach", "--wait", "90", env=env, cwd=cwd, timeout=150)
    assert up.returncode == 0, up.stderr.decode()
    # The startup message's turn ended: waiting, not done (no one has given it a task yet).
    settled = wait_state(
        env, cwd, agent, socket, lambda r: r.get("state") == "waiting" and r.get("turns"), "the startup turn over"
    )
    assert settled["done"] is False
    return pane_of(socket, agent)


def claude_cli() -> Path:
    from testbed.clis import ensure_cli

    return ensure_cli("claude")


def test_an_api_failure_loop_in_claude_codes_interface_is_retrying_then_done_once_it_answers(
    socket: str, anthropic: FakeAnthropic, isolated_home: Path, agents_dir: Path, workdir: Path, config_dir: Path
) -> None:
    assert anthropic.server is not None
    env = team_env(anthropic.server.url, isolated_home, agents_dir, config_dir, workdir)
    pane = start(env, workdir, agents_dir, socket, "flaky")
    anthropic.default = OVERLOADED  # from now on every call fails with 529, and Claude Code tries again by itself
    sent = run_cli("send", "flaky", "Say hello once the API is back.", env=env, cwd=workdir, timeout=60)
    assert sent.returncode == 0, sent.stderr.decode()
    # Before: "thinking" for as long as the loop lasted (ten tries, minutes). Now: retrying, with what is known.
    shown = wait_state(env, workdir, "flaky", socket, lambda r: r.get("state") == "retrying", "retrying")
    assert "the same API request sent" in shown["state_reason"], shown
    assert "does not say why" in shown["state_reason"]  # the cause is on Claude Code's screen only
    wait_for(
        lambda: "529 overloaded now" in screen(socket, pane) and "retrying" in screen(socket, pane),
        timeout=60,
        what="Claude Code's own screen in its retry loop",
    )
    assert "· retrying (the same API request sent" in pane_option(socket, pane, "#{@agentlaunch_line}")
    assert len(anthropic.message_requests()) >= 3  # the first call and at least one retry, before any answer
    anthropic.default = text_reply("Hello, the API is back.")
    done = wait_state(env, workdir, "flaky", socket, lambda r: r.get("state") == "waiting" and r.get("done"), "done")
    assert done["state_reason"] is None
    assert "Hello, the API is back." in screen(socket, pane)
    assert run_cli("tmux", "down", "--socket", socket, env=env, cwd=workdir, timeout=120).returncode == 0


def test_esc_out_of_claude_codes_retry_loop_is_waiting_not_retrying_then_stalled(
    socket: str, anthropic: FakeAnthropic, isolated_home: Path, agents_dir: Path, workdir: Path, config_dir: Path
) -> None:
    # Measured: after Esc in the retry loop Claude Code runs no hook and no status line and writes no transcript line;
    # it sits at its prompt, the prompt put back in its input box. Before: `retrying`, then `stalled` (needs you).
    # Its own OSC 7501 report says so (`state=idle`): it reports only to a terminal that answered its probe, and tmux
    # does not answer it; agentlaunch's relay does.
    (config_dir / "config.yaml").write_text("stall_timeout: 10\nnotify_after: 600\nbell: false\n")
    assert anthropic.server is not None
    env = team_env(anthropic.server.url, isolated_home, agents_dir, config_dir, workdir)
    pane = start(env, workdir, agents_dir, socket, "escaped")
    anthropic.default = OVERLOADED
    sent = run_cli("send", "escaped", "Say hello once the API is back.", env=env, cwd=workdir, timeout=60)
    assert sent.returncode == 0, sent.stderr.decode()
    wait_state(env, workdir, "escaped", socket, lambda r: r.get("state") == "retrying", "retrying")
    tmux(socket, "send-keys", "-t", pane, "Escape")
    shown = wait_state(env, workdir, "escaped", socket, lambda r: r.get("state") != "retrying", "out of retrying", 60)
    assert shown["state"] == "waiting" and shown["state_source"] == "cli", shown  # no hook: the CLI's own word
    assert shown["state_reason"] == RETRY_INTERRUPTED and not shown["done"], shown  # idle, not done: Esc cut the turn
    assert shown["cli_report"]["state"] == "idle" and shown["cli_report"]["app"] == "claude-code", shown
    assert shown["disagreement"]["cli"] == "idle" and shown["disagreement"]["state"] == "retrying", shown
    assert "7501" not in screen(socket, pane)  # the probe and the reports are taken out of what the pane shows
    # The merged report is passed on to the pane's tmux options (tmux does not speak OSC 7501: no escape sent to it).
    wait_for(
        lambda: pane_option(socket, pane, "#{@agentlaunch_state}") == "state=waiting:source=cli:cli=idle",
        timeout=30,
        what="the merged report in the pane's @agentlaunch_state",
    )
    calls = len(anthropic.message_requests())
    # It is idle: the prompt is back in the box, and Enter sends it (the API answers now): a turn of its own, done.
    wait_for(
        lambda: "❯ Say hello once the API is back." in screen(socket, pane).replace("\xa0", " "),
        timeout=30,
        what="the prompt put back",
    )
    anthropic.default = text_reply("Hello, the API is back.")
    tmux(socket, "send-keys", "-t", pane, "Enter")
    done = wait_state(env, workdir, "escaped", socket, lambda r: r.get("state") == "waiting" and r.get("done"), "done")
    assert done["state_reason"] is None and len(anthropic.message_requests()) == calls + 1
    assert "Hello, the API is back." in screen(socket, pane)
    assert run_cli("tmux", "down", "--socket", socket, env=env, cwd=workdir, timeout=120).returncode == 0


def test_a_headless_turn_in_an_api_failure_loop_is_retrying_with_its_cause(
    anthropic: FakeAnthropic, isolated_home: Path, agents_dir: Path, workdir: Path, config_dir: Path
) -> None:
    assert anthropic.server is not None
    env = team_env(anthropic.server.url, isolated_home, agents_dir, config_dir, workdir)
    write_agent(
        agents_dir,
        "batch",
        {"provider": "claude", "model": "claude-sonnet-4-5", "command": str(claude_cli()), "working_dir": str(workdir)},
    )
    anthropic.push(*[OVERLOADED] * 5, text_reply("Answered after five failures."))
    shown, lines = headless_while_retrying(env, workdir, "batch", timeout=90)
    assert shown["state_reason"].startswith("529 overloaded, attempt "), shown
    assert shown["state_reason"].endswith("/10")
    assert retries_of(lines) == [f"529 overloaded, attempt {n}/10" for n in range(1, 6)]
    assert any(line["event"] == "text_delta" and "five failures" in line["text"] for line in lines)


def test_a_claude_turn_that_hears_nothing_is_stalled_with_the_flag_and_send_wait_still_answers(
    socket: str, held: HeldApi, isolated_home: Path, agents_dir: Path, workdir: Path, config_dir: Path
) -> None:
    (config_dir / "config.yaml").write_text("stall_timeout: 3\nnotify_after: 600\nbell: false\n")
    env = team_env(held.server.url, isolated_home, agents_dir, config_dir, workdir)
    pane = start(env, workdir, agents_dir, socket, "stuck")
    held.hold_next = True
    waiter = subprocess.Popen(
        [sys.executable, "-m", "agentlaunch", "send", "stuck", "Tell me when you are back.", "--wait"],
        env={**os.environ, **env},
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert held.held.wait(60), "the model call never came"
        held.api.push(text_reply("Back again."))
        # Before: "thinking" for as long as the call hung. Now: stalled once stall_timeout (3 s) passed silently.
        shown = wait_state(env, workdir, "stuck", socket, lambda r: r.get("state") == "stalled", "stalled", timeout=60)
        assert "no report from the CLI for" in shown["state_reason"] and "while thinking" in shown["state_reason"]
        assert pane_option(socket, pane, "#{@agentlaunch_pane_needs_you}") == "stuck stalled"
        assert "stuck stalled" in pane_option(socket, pane, "#{@agentlaunch_needs_you}")
        assert "STALLED: needs you" in pane_option(socket, pane, "#{@agentlaunch_line}")
        assert "esc to interrupt" in screen(socket, pane)  # Claude Code's screen still looks busy (its spinner turns)
        table = run_cli("status", env=env, cwd=workdir, timeout=60).stdout.decode()
        assert "STALLED" in table  # the table wraps its cells to the terminal's width: "STALLED: needs" / "you"
        held.release.set()  # the call answers: the stall is over, the turn ends, send --wait gets its answer
        out, err = waiter.communicate(timeout=120)
    finally:
        held.release.set()
        if waiter.poll() is None:
            waiter.kill()
            waiter.communicate()
    assert waiter.returncode == 0, err.decode()
    assert out.decode().strip() == "Back again."
    done = wait_state(env, workdir, "stuck", socket, lambda r: r.get("state") == "waiting" and r.get("done"), "done")
    assert done["state_reason"] is None
    assert pane_option(socket, pane, "#{@agentlaunch_pane_needs_you}") == ""
    table = run_cli("status", env=env, cwd=workdir, timeout=60).stdout.decode()
    row = next(line for line in table.splitlines() if line.startswith("stuck"))
    assert row.split()[1] == "done", table  # the state column (the table fitted to the width: no cell borders)
    assert run_cli("tmux", "down", "--socket", socket, env=env, cwd=workdir, timeout=120).returncode == 0


def test_a_headless_codex_turn_that_reconnects_is_retrying_with_its_cause(
    isolated_home: Path, agents_dir: Path, workdir: Path, config_dir: Path
) -> None:
    from agentlaunch.fakeapi import responses as cfake
    from testbed.clis import ensure_cli

    with cfake.ResponsesFake() as api:
        env = cfake.prepare_codex_home(isolated_home, api.base_url)  # Codex's own retries at their defaults
        env.update(AGENTLAUNCH_AGENTS_DIR=str(agents_dir), AGENTLAUNCH_CONFIG_DIR=str(config_dir))
        write_agent(
            agents_dir,
            "cdx",
            {"provider": "codex", "model": "gpt-5.5", "command": str(ensure_cli("codex")), "working_dir": str(workdir)},
        )
        # Five requests per stream attempt (measured): two attempts fail whole, the third is answered.
        api.script.push(*[cfake.ErrorReply(status=500, message="fake outage")] * 14)
        api.script.push(cfake.TextReply("Answered after reconnecting."))
        shown, lines = headless_while_retrying(env, workdir, "cdx", timeout=90)
    assert shown["state_reason"].endswith((", attempt 1/5", ", attempt 2/5")), shown
    retries = retries_of(lines)
    assert retries and all(r.endswith(f"attempt {n}/5") for n, r in enumerate(retries, 1)), retries
    assert any(line["event"] == "text" and "reconnecting" in line["text"] for line in lines)


def test_a_headless_gemini_turn_that_retries_is_retrying_with_its_cause(
    isolated_home: Path, agents_dir: Path, workdir: Path, config_dir: Path
) -> None:
    from agentlaunch.fakeapi import gemini as gfake
    from testbed.clis import ensure_cli

    with gfake.GeminiFake() as api:
        # Gemini's own retries at their defaults; one node process (no relaunch): the tree is not what this test checks.
        env = gfake.prepare_gemini_home(isolated_home, api.base_url, no_relaunch=True)
        env.update(AGENTLAUNCH_AGENTS_DIR=str(agents_dir), AGENTLAUNCH_CONFIG_DIR=str(config_dir))
        write_agent(
            agents_dir,
            "gem",
            {"provider": "gemini", "model": "gemini-2.5-pro", "command": str(ensure_cli("gemini")), "working_dir": str(workdir)},
        )
        api.script.push(*[gfake.ErrorReply(status=503, message="The model is overloaded.")] * 2)
        api.script.push(gfake.TextReply("Back after the outage.", gfake.GeminiUsage(prompt=900, output=7)))
        shown, lines = headless_while_retrying(env, workdir, "gem")
    assert shown["state_reason"].startswith("503 The model is overloaded., attempt "), shown
    assert retries_of(lines) == ["503 The model is overloaded., attempt 1", "503 The model is overloaded., attempt 2"]
    assert any(line["event"] == "text_delta" for line in lines)
