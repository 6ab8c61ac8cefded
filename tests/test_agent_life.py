"""`agentlaunch stop` / `restart` of one agent in tmux, and `send` to a stopped one, on the offline fake provider.

A private tmux server per test (the ``socket`` fixture of test_tmux.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from agentlaunch import paths
from agentlaunch.usage.store import Store
from testbed.agent_files import write_agent
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.required import need
from tests.support.waits import wait_for
from tests.test_tmux import add_agent_copies, panes, screen, send_line, status_records, tmux, up

need("tmux")


def waiting(agent: str) -> dict[str, object] | None:
    return next((r for r in status_records() if r["agent"] == agent and r.get("state") == "waiting"), None)


def test_stop_keeps_the_pane_with_the_reason_send_names_it_and_restart_resumes_the_same_session(
    socket: str, agents_dir: Path, workdir: Path
) -> None:
    add_agent_copies(agents_dir, ["other"])
    assert up(socket, agents_dir, workdir, "demo", "other").returncode == 0
    pane = panes(socket)["demo"]["pane"]
    wait_for(lambda: "›" in screen(socket, pane), what="the prompt")
    send_line(socket, pane, "remember the blue door")
    wait_for(lambda: 'You said: "remember the blue door"' in screen(socket, pane), what="the first answer")
    first = wait_for(lambda: waiting("demo"), what="demo waiting")

    stopped = run_cli_inprocess("stop", "demo", "--socket", socket, "--json")
    assert stopped.returncode == 0, stopped.stderr
    said = json.loads(stopped.stdout)
    assert said == {
        "agent": "demo",
        "session_id": first["session_id"],
        "ended": True,
        "pane": pane,
        "tmux_session": "agentlaunch",
    }
    facts = panes(socket)["demo"]
    assert facts["dead"] == "1" and "stopped (agentlaunch stop)" in facts["title"]  # the pane kept, with the reason
    assert waiting("other") is not None  # the rest of the team untouched
    records = json.loads(run_cli_inprocess("status", "--json", "--socket", socket).stdout)
    assert [(r["state"], r["dead"]) for r in records if r["agent"] == "demo"] == [("stopped", False)]

    sent = run_cli_inprocess("send", "demo", "are you there?")
    assert sent.returncode == 7, sent.stderr
    assert b"demo was stopped (agentlaunch stop at" in sent.stderr
    assert f"its session {str(first['session_id'])[:8]} is resumable".encode() in sent.stderr
    again = run_cli_inprocess("stop", "demo", "--socket", socket)
    assert again.returncode == 7 and b"demo was stopped" in again.stderr, again.stderr

    back = run_cli_inprocess("restart", "demo", "--socket", socket, "--agents-dir", str(agents_dir), cwd=workdir)
    assert back.returncode == 0, back.stderr
    assert f"demo: restarting in its session {str(first['session_id'])[:8]}".encode() in back.stderr
    record = wait_for(lambda: waiting("demo"), what="demo waiting again")
    assert record["session_id"] == first["session_id"]
    send_line(socket, pane, "which door?")
    wait_for(lambda: "Fake provider here, turn 2." in screen(socket, pane), what="the second turn of the same session")
    assert len(panes(socket)) == 2
    assert run_cli("tmux", "down", "--socket", socket).returncode == 0


def test_stop_of_an_agent_that_is_not_running_is_exit_7(socket: str) -> None:
    result = run_cli_inprocess("stop", "demo", "--socket", socket)
    assert result.returncode == 7 and b"demo is not running: nothing to stop" in result.stderr, result.stderr


def test_restart_with_another_agents_session_is_refused_before_anything_is_stopped(
    socket: str, agents_dir: Path, workdir: Path
) -> None:
    with Store.open(paths.store_path()) as store:
        store.start_session("s-of-other", agent="other", provider="fake", working_dir=workdir)
        store.touch_session("s-of-other")
        store.start_session("s-no-turn", agent="demo", provider="fake", working_dir=workdir)
    assert up(socket, agents_dir, workdir, "demo").returncode == 0
    wait_for(lambda: waiting("demo"), what="demo waiting")
    pid = panes(socket)["demo"]["pid"]
    for given, words in [
        ("s-of-other", b"is other's, not demo's"),
        ("s-no-turn", b"never had a turn"),
        ("nope", b"no session 'nope'"),
    ]:
        result = run_cli_inprocess("restart", "demo", "--session", given, "--socket", socket, "--agents-dir", str(agents_dir))
        assert result.returncode == 2 and words in result.stderr, result.stderr
    assert panes(socket)["demo"]["pid"] == pid and panes(socket)["demo"]["dead"] == "0"  # nothing was stopped
    assert run_cli("tmux", "down", "--socket", socket).returncode == 0


def test_restart_of_an_agent_without_a_pane_says_how_to_start_it(socket: str, agents_dir: Path) -> None:
    result = run_cli_inprocess("restart", "demo", "--socket", socket, "--agents-dir", str(agents_dir))
    assert result.returncode == 1 and b"demo has no pane on this tmux server" in result.stderr, result.stderr
    assert b"agentlaunch tmux up --resume demo" in result.stderr


def test_send_to_an_agent_its_budget_stopped_names_the_budget_and_what_was_spent(
    socket: str, agents_dir: Path, workdir: Path
) -> None:
    (agents_dir / "pricing.yaml").write_text("fake-1: {input: 1000, output: 1000, cache_read: 1000, cache_write: 1000}\n")
    path = agents_dir / "demo" / "agent.yaml"
    conf = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**conf, "budget": {"session_usd": 1}}))
    assert up(socket, agents_dir, workdir, "demo").returncode == 0
    pane = panes(socket)["demo"]["pane"]
    wait_for(lambda: "›" in screen(socket, pane), what="the prompt")
    send_line(socket, pane, "spend it all")  # one fake call costs a few dollars at these rates
    wait_for(lambda: panes(socket)["demo"]["dead"] == "1", what="the pane dead: the budget ended the session")
    assert "budget: stopped the agent" in screen(socket, pane)
    sent = run_cli_inprocess("send", "demo", "are you there?")
    said = sent.stderr.decode()
    # Before: "demo is not running (its last session ended without closing…)", or "runs one headless turn (exited)".
    assert sent.returncode == 7, said
    assert "demo was stopped by its budget at " in said and " UTC: the session budget of agent 'demo' ($1.00) is spent: $" in said
    assert "raise the budget" in said and "agentlaunch restart demo" in said
    stopped = run_cli_inprocess("stop", "demo", "--socket", socket)
    assert stopped.returncode == 7 and b"demo was stopped by its budget" in stopped.stderr, stopped.stderr
    assert run_cli("tmux", "down", "--socket", socket).returncode == 0


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["fork", "ghost"], b"agents/ghost/agent.yaml: agent 'ghost' not found (agents here: "),
        (["fork", "claudy", "--session", "s-of-other"], b"session s-of-other is other's, not claudy's"),
        (["fork", "claudy", "--session", "s-no-turn"], b"session s-no-turn never had a turn: there is nothing to fork"),
        (["fork", "claudy"], b"claudy's session s-no-tur never had a turn: there is no conversation to fork"),
        (["fork", "gem"], b"gem cannot be forked: Gemini CLI 0.61 has no fork"),
        (["fork", "demo"], b"demo cannot be forked: it has no interface of its own to fork a session in"),
        (["run", "claudy", "--fork", "s-no-turn", "hello"], b"--fork starts the CLI's own interface: no PROMPT"),
        (["run", "claudy", "--fork", "s-no-turn", "-c"], b"--fork starts a new session: not with --resume or --continue"),
    ],
)
def test_bad_inputs_to_fork_are_usage_errors_before_anything_starts(
    socket: str, agents_dir: Path, workdir: Path, args: list[str], words: bytes
) -> None:
    write_agent(agents_dir, "gem", {"provider": "gemini", "model": "gemini-2.5-pro"})
    write_agent(agents_dir, "claudy", {"provider": "claude", "model": "claude-sonnet-4-5", "command": sys.executable})
    with Store.open(paths.store_path()) as store:
        store.start_session("s-of-other", agent="other", provider="claude", working_dir=workdir)
        store.touch_session("s-of-other")
        store.start_session("s-no-turn", agent="claudy", provider="claude", working_dir=workdir)
    where = ["--socket", socket] if args[0] == "fork" else []
    result = run_cli(*args, "--agents-dir", str(agents_dir), *where, cwd=workdir)
    assert result.returncode == 2 and words in result.stderr, result.stderr
    assert b"Traceback" not in result.stderr
    assert tmux(socket, "list-sessions", check=False) == ""  # nothing was started: no tmux server


def test_stop_of_a_session_the_agent_does_not_run_is_exit_7(socket: str) -> None:
    result = run_cli_inprocess("stop", "demo", "--session", "nope", "--socket", socket)
    assert result.returncode == 7 and b"demo is not running in a session starting 'nope'" in result.stderr, result.stderr


def test_a_stop_that_returns_before_the_agent_ended_is_still_stopped_once_it_has(
    socket: str, agents_dir: Path, workdir: Path
) -> None:
    # Before: the pane was marked only when the stop saw the end within --timeout; one that ended later
    # (or while a reader looked, before the mark) read `dead (exit 143)` for good.
    assert up(socket, agents_dir, workdir, "demo").returncode == 0
    pane = panes(socket)["demo"]["pane"]
    wait_for(lambda: waiting("demo"), what="demo waiting")
    stopped = run_cli_inprocess("stop", "demo", "--socket", socket, "--timeout", "0")
    assert stopped.returncode in (0, 1), stopped.stderr  # 1: it had not ended yet when the stop returned
    wait_for(lambda: panes(socket)["demo"]["dead"] == "1", what="the pane dead")
    records = json.loads(run_cli_inprocess("status", "--json", "--socket", socket).stdout)
    assert [(r["state"], r["dead"], r["pane"]) for r in records if r["agent"] == "demo"] == [("stopped", False, pane)]
    line = run_cli_inprocess("status", "--line", "demo", "--socket", socket).stdout.decode()
    assert line.startswith("demo · stopped (agentlaunch stop) · agentlaunch restart demo brings it back"), line
    assert run_cli("tmux", "down", "--socket", socket).returncode == 0
