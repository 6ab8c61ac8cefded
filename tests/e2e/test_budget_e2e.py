"""Budgets on the real CLIs against the fake APIs: the call that crosses stops the agent with exit 6."""

from __future__ import annotations

import os
import sqlite3
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from agentlaunch.fakeapi import gemini as gfake
from agentlaunch.fakeapi import responses as cfake
from agentlaunch.fakeapi.anthropic import ApiUsage, FakeAnthropic, claude_env, text_reply, tool_reply
from agentlaunch.usage.store import Store
from testbed.agent_files import write_agent
from testbed.clis import ensure_cli
from testbed.pty_screen import run_to_exit
from tests.e2e.test_native_claude_run import setup as native_setup
from tests.support.cli_runs import run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


def _calls(home: Path) -> list[tuple[int, float | None]]:
    with Store.open(home / "state" / "usage.sqlite3") as store:
        return [(c.usage.total_input, c.cost_usd) for s in store.list_sessions() for c in store.calls_for_session(s.session_id)]


def test_claude_a_tool_turn_whose_first_call_crosses_the_budget_stops_before_the_second(
    anthropic: FakeAnthropic, agents_dir: Path, isolated_home: Path, workdir: Path, claude_bin: Path
) -> None:
    write_agent(
        agents_dir,
        "spender",
        {
            "provider": "claude",
            "model": "claude-sonnet-4-5",
            "command": str(claude_bin),
            "working_dir": str(workdir),
            "allowed_tools": ["Bash"],
            "budget": {"session_usd": 0.05},
        },
    )
    # The first call costs 100,000 x $3/M = $0.30: past the $0.05 budget.
    anthropic.push(
        # The tool lasts until the interrupt ends it: agentlaunch's interrupt races Claude Code's next call, and
        # under a loaded CI an instant `echo` lost that race once, a one-second `sleep 1` could under parallel
        # workers (the known limit in the closing note of #15's stop). 30 s is past the interrupt's own 10 s
        # grace, so the second call is made only if the stop did not work at all. (Claude Code refuses a bare
        # `sleep 30` at once, which would answer the tool before the interrupt: hence `timeout` over `tail -f`.)
        tool_reply(
            "Bash", {"command": "timeout 30 tail -f /dev/null; echo hi", "description": "Print hi"}, ApiUsage(100_000, 0, 0, 30)
        ),
        text_reply("It printed hi.", ApiUsage(8, 0, 0, 9)),
    )
    assert anthropic.server is not None
    env = {**os.environ, **claude_env(anthropic.server.url, isolated_home, {"CLAUDE_CODE_MAX_RETRIES": "0"})}
    env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
    done = run_cli("run", "spender", "run echo hi", cwd=workdir, env=env, timeout=240)
    err = done.stderr.decode()
    assert done.returncode == 6, err
    assert "budget: stopped the agent: the session budget of agent 'spender' ($0.05) is spent: $0.3" in err
    assert len(anthropic.message_requests()) == 1, "the second call of the turn must not be made"
    assert [cost for _, cost in _calls(isolated_home)] == [pytest.approx(0.30045, abs=1e-9)]
    again = run_cli("run", "spender", "-c", "go on", cwd=workdir, env=env, timeout=240)
    assert again.returncode == 6 and "budget: not starting" in again.stderr.decode()
    assert len(anthropic.message_requests()) == 1


@contextmanager
def _store_locked(home: Path) -> Iterator[None]:
    """Another process's write lock on the store for the whole block: the launch journals its writes, late.

    Without the tool gate this made agentlaunch's interrupt lose the race with Claude Code's next call every
    time: each write waits out the lock (1 s, then 0.25 s) before the budget guard runs, and an instant tool
    has long answered by then. With the gate the tool cannot run before the guard has answered.
    """
    path = home / "state" / "usage.sqlite3"
    from agentlaunch.usage.store import Store

    Store.open(path).close()  # made, with its tables
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_claude_headless_no_call_follows_the_crossing_call_and_every_request_is_stored(
    anthropic: FakeAnthropic, agents_dir: Path, isolated_home: Path, workdir: Path, claude_bin: Path
) -> None:
    write_agent(
        agents_dir,
        "spender",
        {
            "provider": "claude",
            "model": "claude-sonnet-4-5",
            "command": str(claude_bin),
            "working_dir": str(workdir),
            "allowed_tools": ["Bash"],
            "budget": {"session_usd": 0.05},
        },
    )
    # An instant tool after the crossing call ($0.30 of a $0.05 budget), twice over: nothing but the tool gate
    # keeps Claude Code from answering it and making the next call.
    anthropic.push(
        tool_reply("Bash", {"command": "echo hi", "description": "Print hi"}, ApiUsage(100_000, 0, 0, 30)),
        tool_reply("Bash", {"command": "echo again", "description": "Print again"}, ApiUsage(8, 0, 0, 9)),
        text_reply("It printed hi.", ApiUsage(8, 0, 0, 9)),
    )
    assert anthropic.server is not None
    env = {**os.environ, **claude_env(anthropic.server.url, isolated_home, {"CLAUDE_CODE_MAX_RETRIES": "0"})}
    env.update(AGENTLAUNCH_AGENTS_DIR=str(agents_dir), AGENTLAUNCH_STORE_BUSY_TIMEOUT="1")
    with _store_locked(isolated_home):
        done = run_cli("run", "spender", "run echo hi", cwd=workdir, env=env, timeout=240)
    err = done.stderr.decode()
    assert done.returncode == 6, err
    assert "budget: stopped the agent" in err
    assert len(anthropic.message_requests()) == 1, "no call may follow the one that crossed the budget"
    assert len(_calls(isolated_home)) == len(anthropic.message_requests())


def test_claude_native_no_call_follows_the_crossing_call_and_every_request_is_stored(claude_bin: Path, agents_dir: Path) -> None:
    # The startup message's first call asks for an instant tool and costs $0.30 of a $0.05 budget: before the
    # gate, Claude Code's interface ran the tool and made its next call before agentlaunch ended it (7 of 7).
    api = FakeAnthropic(
        [
            tool_reply("Bash", {"command": "echo hi", "description": "Print hi"}, ApiUsage(100_000, 0, 0, 30)),
            tool_reply("Bash", {"command": "echo again", "description": "Print again"}, ApiUsage(8, 0, 0, 9)),
            text_reply("never", ApiUsage(1, 0, 0, 1)),
        ]
    )
    with tempfile.TemporaryDirectory(prefix="albn-") as folder, api.serve():
        root = Path(folder)
        env, work = native_setup(root, agents_dir, claude_bin, api, "Spend.")
        conf = agents_dir / "native" / "agent.yaml"
        conf.write_text(conf.read_text() + "allowed_tools: [Bash]\nbudget: {session_usd: 0.05}\n")
        env["AGENTLAUNCH_STORE_BUSY_TIMEOUT"] = "1"
        with _store_locked(root):  # the guard runs 0.25-1 s late: only the gate keeps the tool from answering first
            argv = [sys.executable, "-m", "agentlaunch", "run", "native", "--agents-dir", str(agents_dir)]
            screen = run_to_exit(argv, env, work)
        assert screen.child.exitstatus == 6, screen.text()
        assert "budget: stopped the agent" in screen.text()
        assert len(api.message_requests()) == 1, "no call may follow the one that crossed the budget"
        with Store.open(root / "state" / "usage.sqlite3") as store:
            stored = [c for s in store.list_sessions() for c in store.calls_for_session(s.session_id)]
        assert len(stored) == len(api.message_requests())


def _per_turn_agent(agents_dir: Path, provider: str, model: str, workdir: Path) -> None:
    write_agent(
        agents_dir,
        "spender",
        {
            "provider": provider,
            "model": model,
            "command": str(ensure_cli(provider)),
            "working_dir": str(workdir),
            "budget": {"daily_usd": 0.01},
        },
    )


@contextmanager
def _per_turn_home(provider: str, home: Path) -> Iterator[tuple[cfake.ResponsesFake | gfake.GeminiFake, dict[str, str]]]:
    """The provider's fake API with one call scripted ($0.01 of a daily budget is spent by its 200,000 input
    tokens), and the CLI's home pointed at it."""
    if provider == "codex":
        with cfake.ResponsesFake() as codex:
            codex.script.push(cfake.TextReply("done", cfake.ResponsesUsage(input_tokens=200_000, output_tokens=5)))
            yield codex, cfake.prepare_codex_home(home, codex.server.url + "/v1", request_max_retries=0, stream_max_retries=0)
    else:
        with gfake.GeminiFake() as gemini:
            gemini.script.push(gfake.TextReply("done", gfake.GeminiUsage(prompt=200_000, output=5, cached=0, thoughts=0)))
            yield gemini, gfake.prepare_gemini_home(home, gemini.base_url, max_attempts=1, no_relaunch=True)  # one node


@pytest.mark.parametrize(("provider", "model"), [("codex", "gpt-5.5"), ("gemini", "gemini-2.5-pro")])
def test_the_turn_that_crosses_ends_with_exit_6_and_the_next_launch_is_refused(
    agents_dir: Path, isolated_home: Path, workdir: Path, provider: str, model: str
) -> None:
    with _per_turn_home(provider, isolated_home) as (api, env):
        env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
        _per_turn_agent(agents_dir, provider, model, workdir)
        done = run_cli("run", "spender", "hello", cwd=workdir, env=env, timeout=240)
        assert done.returncode == 6, done.stderr.decode()
        assert "today's budget of agent 'spender' ($0.01) is spent" in done.stderr.decode()
        assert len(_calls(isolated_home)) == 1
        again = run_cli("run", "spender", "more", cwd=workdir, env=env, timeout=240)
        assert again.returncode == 6 and "budget: not starting" in again.stderr.decode()
        assert len(api.model_requests) == 1
