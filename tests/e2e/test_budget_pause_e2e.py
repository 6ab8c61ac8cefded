"""``budget.on_spent: pause`` on the real Claude Code against the fake API: the call that crosses the budget pauses
the headless run (its CLI and session kept, ``paused: budget``, `send` refused), and it goes on in the same session
once the limit is raised in agent.yaml or the person runs ``agentlaunch resume-budget``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import pytest
import yaml

from agentlaunch.fakeapi import gemini as gfake
from agentlaunch.fakeapi import responses as cfake
from agentlaunch.fakeapi.anthropic import ApiUsage, FakeAnthropic, claude_env, text_reply, tool_reply
from agentlaunch.launch.budget_pause import CONTINUE_PROMPT
from agentlaunch.usage.store import Store
from testbed.agent_files import write_agent
from testbed.clis import ensure_cli
from tests.e2e.test_agent_life_codex_gemini import codex_team, typed
from tests.e2e.test_tmux_claude import claude_agent, cli, pane_of, say, screen, settled, state_of
from tests.e2e.test_tmux_claude import env as tmux_env
from tests.e2e.test_tmux_ready_states import config_dir, gemini_team
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.waits import wait_for

__all__ = ["codex_team", "config_dir", "gemini_team", "tmux_env"]  # the fixtures, used by name

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


def _agent(agents_dir: Path, workdir: Path, claude_bin: Path, session_usd: float) -> Path:
    return write_agent(
        agents_dir,
        "spender",
        {
            "provider": "claude",
            "model": "claude-sonnet-4-5",
            "command": str(claude_bin),
            "working_dir": str(workdir),
            "allowed_tools": ["Bash"],
            "budget": {"session_usd": session_usd, "on_spent": "pause"},
        },
    )


def _start(
    anthropic: FakeAnthropic, agents_dir: Path, isolated_home: Path, workdir: Path
) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    assert anthropic.server is not None
    env = {**os.environ, **claude_env(anthropic.server.url, isolated_home, {"CLAUDE_CODE_MAX_RETRIES": "0"})}
    env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
    argv = [sys.executable, "-m", "agentlaunch", "run", "spender", "run echo hi"]
    proc = subprocess.Popen(argv, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return proc, env


def _record(env: dict[str, str], workdir: Path) -> dict[str, Any] | None:
    done = run_cli_inprocess("status", "--json", cwd=workdir, env=env)
    rows = [r for r in json.loads(done.stdout or b"[]") if r.get("agent") == "spender"]
    return rows[0] if rows else None


def _wait_paused(proc: subprocess.Popen[bytes], env: dict[str, str], workdir: Path) -> dict[str, Any]:
    """The launch's status record once it says paused (an event we wait for, however long the CLI takes)."""

    def paused() -> dict[str, Any] | None:
        assert proc.poll() is None, proc.communicate()[1].decode()
        record = _record(env, workdir)
        return record if record is not None and record.get("state") == "paused" and record.get("control") else None

    return wait_for(paused, 180, "the launch to report paused", every=0.2)  # type: ignore[no-any-return]


@contextmanager
def _ended(proc: subprocess.Popen[bytes]) -> Iterator[None]:
    """The run is killed on the way out if it still runs (a failed assertion, say)."""
    try:
        yield
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _raised_then_ended(proc: subprocess.Popen[bytes], folder: Path, key: str, value: float) -> tuple[str, str]:
    """Raise the budget's ``key`` in agent.yaml; the paused run's stdout and stderr once it went on and ended."""
    conf = yaml.safe_load((folder / "agent.yaml").read_text())
    conf["budget"][key] = value
    (folder / "agent.yaml").write_text(yaml.safe_dump(conf))
    out, err = proc.communicate(timeout=180)
    return out.decode(), err.decode()


def _push_crossing_turn(anthropic: FakeAnthropic) -> None:
    # The first call costs 100,000 x $3/M = $0.30, past the $0.05 budget, and asks for an instant tool: the pause
    # refuses it (the tool gate) and ends the turn. Then the answer of the turn that goes on after the pause.
    anthropic.push(
        tool_reply("Bash", {"command": "echo hi", "description": "Print hi"}, ApiUsage(100_000, 0, 0, 30)),
        text_reply("Went on after the pause.", ApiUsage(8, 0, 0, 9)),
    )


def _sessions(home: Path) -> list[str | None]:
    with Store.open(home / "state" / "usage.sqlite3") as store:
        return [c.session_id for s in store.list_sessions() for c in store.calls_for_session(s.session_id)]


def _assert_went_on_in_the_same_session(anthropic: FakeAnthropic, isolated_home: Path, record: dict[str, Any]) -> None:
    requests = anthropic.message_requests()
    assert len(requests) == 2, "one call paused, one after the resume"
    second = json.dumps(requests[1].body)
    assert CONTINUE_PROMPT[:40] in second, "the turn goes on with the continuation message"
    assert "echo hi" in second, "the second call carries the first turn's conversation: the same session"
    assert _sessions(isolated_home) == [record["session_id"]] * 2


def test_headless_pause_resumes_in_the_same_session_when_agent_yaml_raises_the_limit(
    anthropic: FakeAnthropic, agents_dir: Path, isolated_home: Path, workdir: Path, claude_bin: Path
) -> None:
    folder = _agent(agents_dir, workdir, claude_bin, 0.05)
    _push_crossing_turn(anthropic)
    proc, env = _start(anthropic, agents_dir, isolated_home, workdir)
    with _ended(proc):
        record = _wait_paused(proc, env, workdir)
        assert record["state_reason"] == "budget"
        line = run_cli("status", "--line", "spender", cwd=workdir, env=env, timeout=60)
        assert "paused: budget" in line.stdout.decode(), line
        table = run_cli("status", cwd=workdir, env=env, timeout=60)
        assert "paused: budget" in table.stdout.decode(), table
        assert len(anthropic.message_requests()) == 1, "no call while paused"
        sent = run_cli("send", "spender", "more work", cwd=workdir, env=env, timeout=60)
        assert sent.returncode == 7, sent
        assert "spender is paused: its budget is spent" in sent.stderr.decode()
        assert "resume-budget spender" in sent.stderr.decode()
        out, said = _raised_then_ended(proc, folder, "session_usd", 5)
    assert proc.returncode == 0, said
    assert "budget: paused the agent: the session budget of agent 'spender' ($0.05) is spent" in said
    assert "budget: resumed the agent: the limit was raised" in said
    assert "Went on after the pause." in out
    _assert_went_on_in_the_same_session(anthropic, isolated_home, record)


def test_headless_pause_resume_budget_confirms_one_more_turn_over_the_limit(
    anthropic: FakeAnthropic, agents_dir: Path, isolated_home: Path, workdir: Path, claude_bin: Path
) -> None:
    _agent(agents_dir, workdir, claude_bin, 0.05)
    _push_crossing_turn(anthropic)
    proc, env = _start(anthropic, agents_dir, isolated_home, workdir)
    with _ended(proc):
        record = _wait_paused(proc, env, workdir)
        resumed = run_cli("resume-budget", "spender", cwd=workdir, env=env, timeout=60)
        assert resumed.returncode == 0, resumed
        assert "for one more turn although the session budget of agent 'spender' ($0.05) is spent" in resumed.stderr.decode()
        out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err.decode()
    assert "Went on after the pause." in out.decode()
    _assert_went_on_in_the_same_session(anthropic, isolated_home, record)
    gone = run_cli("resume-budget", "spender", cwd=workdir, env=env, timeout=60)
    assert gone.returncode == 7 and "spender is not running" in gone.stderr.decode(), gone


def test_claude_interface_in_tmux_pauses_refuses_send_and_goes_on_in_the_same_session(
    socket: str, tmux_env: dict[str, str], anthropic: FakeAnthropic, agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    env = tmux_env
    name = claude_agent(
        agents_dir, "spender", claude_bin, workdir, allowed_tools=["Bash"], budget={"session_usd": 0.05, "on_spent": "pause"}
    )
    anthropic.push(
        text_reply("Ready.", ApiUsage(10, 0, 0, 5)),
        # $0.30 of a $0.05 budget, asking for an instant tool: the pause refuses it and ends the turn.
        tool_reply("Bash", {"command": "echo hi", "description": "Print hi"}, ApiUsage(100_000, 0, 0, 30)),
        text_reply("One more turn, confirmed.", ApiUsage(8, 0, 0, 9)),
        text_reply("After the raise.", ApiUsage(8, 0, 0, 9)),
    )
    assert cli(env, workdir, "tmux", "up", name, "--socket", socket, "--no-attach", "--wait", "60").returncode == 0
    pane = pane_of(socket, name)
    wait_for(lambda: settled(env, workdir, name), timeout=90, what="the interface waiting after its startup turn")
    say(socket, pane, "run echo hi")
    paused = wait_for(lambda: _paused(env, workdir), timeout=90, what="paused: budget")
    assert paused["state_reason"] == "budget"
    assert len(anthropic.message_requests()) == 2, "the crossing call, and none after it"
    line = cli(env, workdir, "status", "--line", name)
    assert "paused: budget" in line.stdout.decode(), line

    refused = cli(env, workdir, "send", name, "go on", "--wait")
    assert refused.returncode == 7 and b"spender is paused: its budget is spent" in refused.stderr, refused

    # Confirmed once with the limit still spent: one more turn, then paused again before the next prompt is typed.
    resumed = cli(env, workdir, "resume-budget", name)
    assert resumed.returncode == 0, resumed
    assert b"for one more turn although" in resumed.stderr
    sent = cli(env, workdir, "send", name, "go on", "--wait", "--timeout", "120")
    assert sent.returncode == 0, sent
    assert "One more turn, confirmed." in sent.stdout.decode()
    again = cli(env, workdir, "send", name, "and more", "--wait")
    assert again.returncode == 7 and b"paused" in again.stderr, again
    wait_for(lambda: _paused(env, workdir), timeout=30, what="paused again after the confirmed turn")
    not_now = cli(env, workdir, "send", name, "x")
    assert not_now.returncode == 7

    # The limit raised in agent.yaml: the interface resumes by itself, and the next call is in the same session.
    conf = yaml.safe_load((agents_dir / name / "agent.yaml").read_text())
    conf["budget"]["session_usd"] = 5
    (agents_dir / name / "agent.yaml").write_text(yaml.safe_dump(conf))
    wait_for(lambda: state_of(env, workdir, name) == "waiting", timeout=30, what="resumed after the raise")
    after = cli(env, workdir, "send", name, "last one", "--wait", "--timeout", "120")
    assert after.returncode == 0 and "After the raise." in after.stdout.decode(), after
    requests = anthropic.message_requests()
    assert len(requests) == 4
    assert "run echo hi" in json.dumps(requests[-1].body["messages"])  # the whole conversation: the same session
    assert requests[-1].headers.get("x-claude-code-session-id") == paused["session_id"]
    assert screen(socket, pane)  # the pane still shows the interface
    assert cli(env, workdir, "tmux", "down", "--socket", socket, "--timeout", "60").returncode == 0


def _paused(env: dict[str, str], workdir: Path) -> dict[str, Any] | None:
    record = _record(env, workdir)
    return record if record is not None and record.get("state") == "paused" else None


def _per_turn_pause(agents_dir: Path, provider: Literal["codex", "gemini"], model: str, workdir: Path) -> Path:
    return write_agent(
        agents_dir,
        "spender",
        {
            "provider": provider,
            "model": model,
            "command": str(ensure_cli(provider)),
            "working_dir": str(workdir),
            "budget": {"daily_usd": 0.01, "on_spent": "pause"},
        },
    )


def _run_paused_then_raised(env: dict[str, str], workdir: Path, folder: Path) -> tuple[int, str, str, dict[str, Any]]:
    argv = [sys.executable, "-m", "agentlaunch", "run", "spender", "hello"]
    proc = subprocess.Popen(argv, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with _ended(proc):
        record = _wait_paused(proc, env, workdir)
        out, err = _raised_then_ended(proc, folder, "daily_usd", 50)
    return proc.returncode, out, err, record


def _went_on_per_turn(ran: tuple[int, str, str, dict[str, Any]], requests: list[Any], home: Path) -> None:
    """The crossing turn paused the run; after the raise the next turn resumed the same thread or session."""
    code, out, err, record = ran
    assert code == 0, err
    assert "budget: paused the agent: today's budget of agent 'spender' ($0.01) is spent" in err
    assert "went on" in out
    assert len(requests) == 2
    assert CONTINUE_PROMPT[:40] in json.dumps(requests[1].body)
    assert "hello" in json.dumps(requests[1].body), "the second turn resumes the first one's thread or session"
    assert set(_sessions(home)) == {record["session_id"]}


def test_codex_headless_pause_resumes_its_thread_when_the_limit_is_raised(
    agents_dir: Path, isolated_home: Path, workdir: Path
) -> None:
    with cfake.ResponsesFake() as api:
        env = cfake.prepare_codex_home(isolated_home, api.server.url + "/v1", request_max_retries=0, stream_max_retries=0)
        env = {**os.environ, **env, "AGENTLAUNCH_AGENTS_DIR": str(agents_dir)}
        folder = _per_turn_pause(agents_dir, "codex", "gpt-5.5", workdir)
        api.script.push(cfake.TextReply("first", cfake.ResponsesUsage(input_tokens=200_000, output_tokens=5)))
        api.script.push(cfake.TextReply("went on", cfake.ResponsesUsage(input_tokens=300, output_tokens=5)))
        _went_on_per_turn(_run_paused_then_raised(env, workdir, folder), api.model_requests, isolated_home)


def test_gemini_headless_pause_resumes_its_session_when_the_limit_is_raised(
    agents_dir: Path, isolated_home: Path, workdir: Path
) -> None:
    with gfake.GeminiFake() as api:
        env = gfake.prepare_gemini_home(isolated_home, api.base_url, max_attempts=1, no_relaunch=True)  # one node process
        env = {**os.environ, **env, "AGENTLAUNCH_AGENTS_DIR": str(agents_dir)}
        folder = _per_turn_pause(agents_dir, "gemini", "gemini-2.5-pro", workdir)
        api.script.push(gfake.TextReply("first", gfake.GeminiUsage(prompt=200_000, output=5, cached=0, thoughts=0)))
        api.script.push(gfake.TextReply("went on", gfake.GeminiUsage(prompt=300, output=5, cached=0, thoughts=0)))
        _went_on_per_turn(_run_paused_then_raised(env, workdir, folder), api.model_requests, isolated_home)


def test_codex_interface_in_tmux_pauses_after_the_crossing_turn_and_resumes_its_thread_on_the_raise(
    socket: str, codex_team: tuple[Any, dict[str, str], Path], agents_dir: Path
) -> None:
    # Codex's interface has no tool gate: the turn whose call crosses the budget runs to its end (as with `stop`),
    # then the session is paused, refuses `send`, and goes on once agent.yaml raises the limit.
    api, env, work = codex_team
    _daily_budget(agents_dir, "cdx", 0.01)
    api.script.push(cfake.TextReply("Hello from Codex.", cfake.ResponsesUsage(input_tokens=900, output_tokens=7)))
    api.script.push(cfake.TextReply("Expensive.", cfake.ResponsesUsage(input_tokens=200_000, output_tokens=7)))
    api.script.push(cfake.TextReply("After the raise.", cfake.ResponsesUsage(input_tokens=900, output_tokens=7)))
    up = cli(env, work, "tmux", "up", "cdx", "--socket", socket, "--no-attach", "--wait", "90")
    assert up.returncode == 0, up.stderr.decode()
    wait_for(lambda: settled(env, work, "cdx"), timeout=90, what="the startup turn over")
    spent = cli(env, work, "send", "cdx", "spend it", "--wait", "--timeout", "120")
    assert spent.returncode == 0 and b"Expensive." in spent.stdout, spent
    paused = _paused_and_refusing(env, work, "cdx")
    _daily_budget(agents_dir, "cdx", 50)
    wait_for(lambda: state_of(env, work, "cdx") == "waiting", timeout=30, what="resumed after the raise")
    after = cli(env, work, "send", "cdx", "go on", "--wait", "--timeout", "120")
    assert after.returncode == 0 and b"After the raise." in after.stdout, after
    assert "spend it" in cfake.user_texts(api.turn_requests[-1].body), "the same thread"
    assert [r["session_id"] for r in json.loads(cli(env, work, "status", "--json").stdout)] == [paused["session_id"]]
    assert cli(env, work, "tmux", "down", "--socket", socket, "--timeout", "60").returncode == 0


def _daily_budget(agents_dir: Path, agent: str, usd: float) -> dict[str, Any]:
    """Set ``agent``'s daily budget to ``usd`` with ``on_spent: pause``; its agent.yaml as written."""
    conf: dict[str, Any] = yaml.safe_load((agents_dir / agent / "agent.yaml").read_text())
    conf["budget"] = {"daily_usd": usd, "on_spent": "pause"}
    (agents_dir / agent / "agent.yaml").write_text(yaml.safe_dump(conf))
    return conf


def _paused_agent(env: dict[str, str], workdir: Path, agent: str) -> dict[str, Any] | None:
    records = json.loads(run_cli_inprocess("status", "--json", env=env, cwd=workdir).stdout)
    return next((r for r in records if r.get("agent") == agent and r.get("state") == "paused"), None)


def _paused_and_refusing(env: dict[str, str], workdir: Path, agent: str) -> dict[str, Any]:
    """The agent's record once it is paused, after checking that `send` is refused naming the budget."""
    paused: dict[str, Any] = wait_for(lambda: _paused_agent(env, workdir, agent), timeout=60, what="paused: budget")
    refused = cli(env, workdir, "send", agent, "more")
    assert refused.returncode == 7 and f"{agent} is paused: its budget is spent".encode() in refused.stderr, refused
    return paused


def test_gemini_interface_in_tmux_pauses_after_the_crossing_turn_and_resumes_its_session_on_resume_budget(
    socket: str, gemini_team: tuple[Any, dict[str, str], Path], agents_dir: Path, config_dir: Path
) -> None:
    # As Codex's: no tool gate, the crossing turn ends by itself; then paused until the person confirms.
    api, env, work = gemini_team
    (config_dir / "config.yaml").write_text("ready_timeout: 25\n")
    _daily_budget(agents_dir, "gem", 0.01)
    api.script.push(gfake.TextReply("Hello, ready.", gfake.GeminiUsage(prompt=900, output=7)))
    api.script.push(gfake.TextReply("Expensive.", gfake.GeminiUsage(prompt=200_000, output=7)))
    api.script.push(gfake.TextReply("After the confirmation.", gfake.GeminiUsage(prompt=900, output=7)))
    up = cli(env, work, "tmux", "up", "gem", "--socket", socket, "--no-attach", "--wait", "90")
    assert up.returncode == 0, up.stderr.decode()
    wait_for(lambda: settled(env, work, "gem"), timeout=90, what="the startup turn over")
    pane = pane_of(socket, "gem")
    typed(socket, pane, "spend it", "Expensive.")
    paused = _paused_and_refusing(env, work, "gem")
    resumed = cli(env, work, "resume-budget", "gem")
    assert resumed.returncode == 0 and b"for one more turn although today's budget" in resumed.stderr, resumed
    wait_for(lambda: state_of(env, work, "gem") == "waiting", timeout=30, what="resumed")
    typed(socket, pane, "go on please", "After the confirmation.")
    assert "spend it" in gfake.user_texts(api.model_requests[-1].body), "the same session"
    assert [r["session_id"] for r in json.loads(cli(env, work, "status", "--json").stdout)] == [paused["session_id"]]
    assert cli(env, work, "tmux", "down", "--socket", socket, "--timeout", "60").returncode == 0


def test_claude_line_chat_pauses_refuses_a_typed_line_and_goes_on_after_resume_budget(
    anthropic: FakeAnthropic, agents_dir: Path, isolated_home: Path, workdir: Path, claude_bin: Path
) -> None:
    import pexpect

    _agent(agents_dir, workdir, claude_bin, 0.05)
    _push_crossing_turn(anthropic)
    assert anthropic.server is not None
    env = {**os.environ, **claude_env(anthropic.server.url, isolated_home, {"CLAUDE_CODE_MAX_RETRIES": "0"})}
    env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "agentlaunch", "run", "spender", "--line"],
        cwd=str(workdir),
        env=env,
        encoding="utf-8",
        timeout=120,
        dimensions=(40, 200),
    )
    try:
        chat.expect("› ")
        chat.sendline("run echo hi")
        chat.expect("budget: paused the agent")
        chat.expect("› ")
        record = wait_for(lambda: _paused(env, workdir), timeout=30, what="paused: budget")
        assert record["state_reason"] == "budget"
        chat.sendline("are you there?")
        chat.expect("not sent")
        assert len(anthropic.message_requests()) == 1
        resumed = run_cli("resume-budget", "spender", cwd=workdir, env=env, timeout=60)
        assert resumed.returncode == 0, resumed
        chat.expect("budget: resumed the agent")
        chat.sendline("go on")
        chat.expect("Went on after the pause.")
        chat.expect("› ")
        chat.sendcontrol("d")
        chat.expect(pexpect.EOF)
    finally:
        if chat.isalive():
            chat.terminate(force=True)
        chat.close()
    requests = anthropic.message_requests()
    assert len(requests) == 2 and "echo hi" in json.dumps(requests[1].body), "the same session"
    assert _sessions(isolated_home) == [record["session_id"]] * 2
