"""`agentlaunch fork AGENT` with the real CLIs in a private tmux server: a new session from the conversation, beside it.

Claude Code 2.1.332 (`--resume ID --fork-session --session-id NEW`) against the fake Anthropic API; the panes are
read with capture-pane, the states with `status --json`, what the fork's model saw from the fake's requests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentlaunch import paths
from agentlaunch.fakeapi.anthropic import FakeAnthropic, system_text, text_reply
from testbed.agent_files import write_agent
from tests.e2e.test_tmux_claude import cli, env, pane_of, say, screen, tmux
from tests.support.cli_runs import run_cli_inprocess
from tests.support.waits import wait_for

__all__ = ["env"]  # the fixture, used by name

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
OLD, NEW = "You are the OLD-SOUL-7731 brancher.", "You are the NEW-SOUL-7732 brancher."


def records(env: dict[str, str], cwd: Path, agent: str) -> list[dict[str, Any]]:
    return [r for r in json.loads(run_cli_inprocess("status", "--json", env=env, cwd=cwd).stdout) if r.get("agent") == agent]


def waiting(env: dict[str, str], cwd: Path, agent: str, session: str | None = None) -> dict[str, Any] | None:
    return next(
        (
            r
            for r in records(env, cwd, agent)
            if r.get("state") == "waiting" and r.get("turns") and (session is None or r.get("session_id") == session)
        ),
        None,
    )


def fork_pane(socket: str) -> str:
    rows = tmux(socket, "list-panes", "-a", "-F", "#{pane_id}\t#{@agentlaunch_fork}\t#{window_name}").splitlines()
    found = [row.split("\t") for row in rows if row.split("\t")[1]]
    assert len(found) == 1, rows
    return found[0][0]


def soul(agents_dir: Path, workdir: Path, claude_bin: Path, text: str) -> None:
    write_agent(
        agents_dir,
        "brancher",
        {"provider": "claude", "model": "claude-sonnet-4-5", "command": str(claude_bin), "working_dir": str(workdir)},
        {"soul.md": text},
    )


def test_fork_of_a_claude_agent_runs_beside_it_with_the_conversation_and_the_recorded_prompt(
    socket: str, env: dict[str, str], anthropic: FakeAnthropic, agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    soul(agents_dir, workdir, claude_bin, OLD)
    anthropic.push(
        text_reply("Ready."), text_reply("Noted: KIWI."), text_reply("The fork says KIWI."), text_reply("The original is here.")
    )
    assert cli(env, workdir, "tmux", "up", "brancher", "--socket", socket, "--no-attach", "--wait", "60").returncode == 0
    pane = pane_of(socket, "brancher")
    wait_for(lambda: waiting(env, workdir, "brancher"), timeout=90, what="the interface waiting")
    say(socket, pane, "remember the codeword KIWI")
    wait_for(lambda: "Noted: KIWI." in screen(socket, pane), timeout=90, what="the first answer")
    first = wait_for(lambda: waiting(env, workdir, "brancher"), timeout=60, what="waiting after it")
    soul(agents_dir, workdir, claude_bin, NEW)  # edited: a fork still carries the recorded system prompt

    forked = cli(env, workdir, "fork", "brancher", "--socket", socket, "--wait", "60")
    said = forked.stderr.decode()
    assert forked.returncode == 0, said
    assert f"brancher: forking session {str(first['session_id'])[:8]} (2 turns) in window brancher-fork" in said
    new_pane = fork_pane(socket)
    assert new_pane != pane
    assert tmux(socket, "display-message", "-p", "-t", new_pane, "#{window_name}").strip() == "brancher-fork"
    assert tmux(socket, "display-message", "-p", "-t", pane, "#{pane_dead}").strip() == "0"  # the agent keeps running
    fork = wait_for(
        lambda: next(
            (
                r
                for r in records(env, workdir, "brancher")
                if r["session_id"] != first["session_id"] and r.get("state") == "waiting"
            ),
            None,
        ),
        timeout=90,
        what="the fork waiting",
    )
    assert f"the fork is session {fork['session_id']}" in said
    # What the fork's launch keeps as the instructions its session carries (the cache-miss causes and the "prefix
    # changed" notice compare against it): the recorded prompt of the session it forked, not the edit.
    recorded = json.loads((paths.state_dir() / "prefix" / "brancher.sessions.json").read_text())
    assert recorded[fork["session_id"]] == recorded[first["session_id"]]

    # Two sessions of one agent: `send` and `stop` name them and want one; --session picks the fork.
    both = cli(env, workdir, "send", "brancher", "hello")
    assert both.returncode == 2 and b"runs 2 sessions" in both.stderr, both.stderr
    answered = cli(
        env,
        workdir,
        "send",
        "brancher",
        "what was the codeword?",
        "--session",
        fork["session_id"][:8],
        "--wait",
        "--timeout",
        "90",
    )
    assert answered.returncode == 0 and answered.stdout == b"The fork says KIWI.\n", answered.stderr
    last = anthropic.message_requests()[-1]
    assert last.headers.get("x-claude-code-session-id") == fork["session_id"]
    assert "remember the codeword KIWI" in json.dumps(last.body["messages"])  # the conversation came with it
    assert OLD in system_text(last.body) and NEW not in system_text(last.body)  # measured: the recorded prompt too
    assert "The fork says KIWI." in screen(socket, new_pane) and "The fork says KIWI." not in screen(socket, pane)
    # The copied history is not the fork's: its session counts its own turn and call only.
    rows = {r["session_id"]: r for r in json.loads(cli(env, workdir, "sessions", "brancher", "--json").stdout)}
    assert rows[fork["session_id"]]["turns"] == 1 and rows[fork["session_id"]]["calls"] == 1, rows[fork["session_id"]]
    assert rows[first["session_id"]]["turns"] == 2

    # The original is untouched: its own session answers in its own pane.
    original = cli(
        env, workdir, "send", "brancher", "still there?", "--session", first["session_id"], "--wait", "--timeout", "90"
    )
    assert original.returncode == 0 and original.stdout == b"The original is here.\n", original.stderr
    assert anthropic.message_requests()[-1].headers.get("x-claude-code-session-id") == first["session_id"]

    ambiguous = cli(env, workdir, "stop", "brancher", "--socket", socket)
    assert ambiguous.returncode == 2 and b"name one with --session" in ambiguous.stderr, ambiguous.stderr
    stopped = cli(env, workdir, "stop", "brancher", "--session", fork["session_id"][:8], "--socket", socket, "--timeout", "60")
    assert stopped.returncode == 0, stopped.stderr
    assert tmux(socket, "display-message", "-p", "-t", new_pane, "#{pane_dead}").strip() == "1"
    title = tmux(socket, "display-message", "-p", "-t", new_pane, "#{pane_title}")
    assert f"agentlaunch restart brancher --session {fork['session_id'][:8]}" in title
    assert tmux(socket, "display-message", "-p", "-t", pane, "#{pane_dead}").strip() == "0"
    # `tmux up` never takes the fork's dead pane for the agent's own: the agent runs, nothing is started.
    again = cli(env, workdir, "tmux", "up", "brancher", "--socket", socket, "--no-attach", "--wait", "60")
    assert again.returncode == 0 and b"already running brancher" in again.stderr, again.stderr
    assert cli(env, workdir, "tmux", "down", "--socket", socket, "--timeout", "60").returncode == 0
