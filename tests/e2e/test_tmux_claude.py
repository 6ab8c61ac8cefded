"""`tmux up` / `down` / `up --resume` with the real Claude Code (its own interface) against a fake Anthropic API.

A private tmux server per test; the server is started by `tmux up` itself, so its panes inherit the
environment that points claude at the fake API (HOME, ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agentlaunch.fakeapi.anthropic import FakeAnthropic, claude_env, error_reply, text_reply, tool_reply
from testbed.agent_files import write_agent
from testbed.claude_tui import seed_home
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.required import need
from tests.support.waits import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

need("tmux")


def tmux(socket: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True, check=True).stdout


def pane_of(socket: str, agent: str, session: str = "agentlaunch") -> str:
    for line in tmux(socket, "list-panes", "-s", "-t", f"={session}", "-F", "#{@agentlaunch_agent}\t#{pane_id}").splitlines():
        name, pane = line.split("\t")
        if name == agent:
            return pane
    raise AssertionError(f"no pane for {agent}")


def screen(socket: str, pane: str) -> str:
    return tmux(socket, "capture-pane", "-p", "-J", "-S", "-", "-t", pane)


def say(socket: str, pane: str, text: str) -> None:
    tmux(socket, "send-keys", "-t", pane, "-l", text)
    tmux(socket, "send-keys", "-t", pane, "Enter")


def claude_agent(agents_dir: Path, name: str, claude_bin: Path, workdir: Path, **extra: object) -> str:
    write_agent(
        agents_dir,
        name,
        {"provider": "claude", "model": "claude-sonnet-4-5", "command": str(claude_bin), "working_dir": str(workdir), **extra},
    )
    return name


@pytest.fixture
def env(anthropic: FakeAnthropic, isolated_home: Path, agents_dir: Path, workdir: Path) -> dict[str, str]:
    assert anthropic.server is not None
    values = claude_env(anthropic.server.url, isolated_home, {"CLAUDE_CODE_MAX_RETRIES": "0"})
    seed_home(isolated_home, [workdir], key=values["ANTHROPIC_API_KEY"])  # a set-up user's: the interface runs offline
    values["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
    return values


def cli(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return run_cli(*args, env=env, cwd=cwd, timeout=180)


def state_of(env: dict[str, str], cwd: Path, agent: str) -> str | None:
    records = json.loads(run_cli_inprocess("status", "--json", env=env, cwd=cwd).stdout)
    return next((str(r.get("state")) for r in records if r.get("agent") == agent), None)


def settled(env: dict[str, str], cwd: Path, agent: str) -> bool:
    """The agent waits after its first turn (the startup message's): a prompt typed now is a turn of its own."""
    records = json.loads(run_cli_inprocess("status", "--json", env=env, cwd=cwd).stdout)
    return any(r.get("agent") == agent and r.get("state") == "waiting" and r.get("turns") for r in records)


def test_a_claude_that_exits_at_once_fails_up_by_name_while_the_others_run_and_sends_get_their_exit_codes(
    socket: str, env: dict[str, str], anthropic: FakeAnthropic, agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    """One tmux server, one running and one dead Claude Code: `up`'s report, then what `send` says to each."""
    good = claude_agent(agents_dir, "steady", claude_bin, workdir)
    bad = claude_agent(agents_dir, "flaky", claude_bin, workdir, provider_flags=["--no-such-flag-at-all"])
    result = cli(env, workdir, "tmux", "up", good, bad, "demo", "--socket", socket, "--no-attach", "--wait", "60")
    err = result.stderr.decode()
    assert result.returncode == 1, err
    lines = {line.split()[0]: line for line in err.splitlines() if line.startswith("  ")}
    assert "started" in lines["steady"] and "started" in lines["demo"]
    assert "failed" in lines["flaky"] and "exited with code 1" in lines["flaky"]
    assert "no-such-flag-at-all" in lines["flaky"]  # Claude Code's own words, read back from the kept pane
    assert "failed flaky" in err
    assert "no-such-flag-at-all" in screen(socket, pane_of(socket, bad))
    # `up` counts an agent whose startup turn is still running (thinking) as started; under a loaded machine
    # (xdist workers) that turn may not have ended yet when `up` returns. It must end, and then wait: waiting with a
    # turn counted (Claude Code's SessionStart says waiting before the startup turn begins).
    wait_for(lambda: settled(env, workdir, good), timeout=60, what="steady's startup turn over")
    records = {r["agent"]: r for r in json.loads(cli(env, workdir, "status", "--json", "--socket", socket).stdout)}
    assert records["steady"]["state"] == "waiting" and records["flaky"]["state"] == "dead"
    # A send to the agent whose pane died is refused with exit 7, nothing printed.
    sent = cli(env, workdir, "send", bad, "are you there?", "--wait")
    assert sent.returncode == 7, sent.stderr
    assert b"flaky is not running" in sent.stderr and sent.stdout == b""
    # A turn whose API call failed: `send --wait` exits 1 with the reason.
    # Claude Code tries a refused call again in its own ways (measured: a 400 once more): every try fails.
    anthropic.push(*[error_reply(500, "the fake API fails this one")] * 4)
    sent = cli(env, workdir, "send", good, "This will fail.", "--wait", "--timeout", "90")
    assert sent.returncode == 1, sent.stderr
    assert b"error: the turn failed: the API call failed" in sent.stderr
    assert cli(env, workdir, "tmux", "down", "--socket", socket, "--timeout", "60").returncode == 0


def test_down_then_up_resume_brings_back_the_same_claude_session_with_its_history(
    socket: str, env: dict[str, str], anthropic: FakeAnthropic, agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    name = claude_agent(agents_dir, "keeper", claude_bin, workdir)
    # The interface's first prompt is the startup message (a turn of its own), then the person's two.
    anthropic.push(text_reply("Ready."), text_reply("Noted: PLUM."), text_reply("The codeword was PLUM."))
    assert cli(env, workdir, "tmux", "up", name, "--socket", socket, "--no-attach", "--wait", "60").returncode == 0
    pane = pane_of(socket, name)
    # After its startup message's turn: "waiting" alone may be the interface's start, before that turn began, and
    # a prompt typed then joins it (once under load: "(1 turn)").
    wait_for(lambda: settled(env, workdir, name), timeout=60, what="the interface waiting after its first turn")
    say(socket, pane, "remember the codeword PLUM")
    wait_for(lambda: "Noted: PLUM." in screen(socket, pane), timeout=90, what="the first answer")
    wait_for(lambda: state_of(env, workdir, name) == "waiting", timeout=60, what="waiting after it")
    (first,) = json.loads(cli(env, workdir, "sessions", "--json").stdout)

    down = cli(env, workdir, "tmux", "down", "--socket", socket, "--timeout", "60")
    assert down.returncode == 0, down.stderr
    assert f"resume them with: agentlaunch tmux up --resume {name} --socket {socket}".encode() in down.stderr

    again = cli(env, workdir, "tmux", "up", "--resume", name, "--socket", socket, "--no-attach", "--wait", "60")
    said = again.stderr.decode()
    assert again.returncode == 0, said
    # The title is the first prompt typed into the interface (the startup message is never one).
    assert first["title"] == "remember the codeword PLUM"
    assert f"{name}: resuming session {first['session_id'][:8]} “remember the codeword PLUM” (2 turns)" in said
    pane = pane_of(socket, name)
    wait_for(lambda: state_of(env, workdir, name) == "waiting", timeout=60, what="the resumed interface waiting")
    say(socket, pane, "what was the codeword?")
    wait_for(lambda: "The codeword was PLUM." in screen(socket, pane), timeout=90, what="the answer after resuming")
    earlier, later = anthropic.message_requests()[-2:]
    assert "remember the codeword PLUM" in json.dumps(later.body["messages"])  # the history came back with the session
    assert "Noted: PLUM." in json.dumps(later.body["messages"])
    assert later.headers.get("x-claude-code-session-id") == first["session_id"]
    assert cli(env, workdir, "tmux", "down", "--socket", socket, "--timeout", "60").returncode == 0
    (row,) = json.loads(cli(env, workdir, "sessions", "--json").stdout)
    assert row["session_id"] == first["session_id"] and row["turns"] == 3


def test_send_wait_types_into_claude_codes_interface_and_prints_the_answer_from_its_transcript(
    socket: str, env: dict[str, str], anthropic: FakeAnthropic, agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    name = claude_agent(agents_dir, "courier", claude_bin, workdir)
    anthropic.push(
        text_reply("Ready."),
        text_reply("The capital of France is Paris.\nIt has been since 508."),
        text_reply("Slowly, as asked.", delay=2.0),  # before each of its 7 chunks: a turn of 14 s
        tool_reply("Write", {"file_path": "out.txt", "content": "hi\n"}, text="Writing."),
    )
    assert cli(env, workdir, "tmux", "up", name, "--socket", socket, "--no-attach", "--wait", "60").returncode == 0
    pane = pane_of(socket, name)
    # Sent at once, as a script would after `up`: the startup message's turn is waited for, then the prompt typed.
    sent = cli(env, workdir, "send", name, "What is the capital of France?\nAnswer in two lines.", "--wait", "--timeout", "90")
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.decode() == "The capital of France is Paris.\nIt has been since 508.\n"
    assert b"tokens in" in sent.stderr
    last = anthropic.message_requests()[-1]
    assert "What is the capital of France?\\nAnswer in two lines." in json.dumps(last.body["messages"][-1])  # one prompt
    assert "The capital of France is Paris." in screen(socket, pane)  # typed into the interface: the person sees it
    (row,) = json.loads(cli(env, workdir, "sessions", "--json").stdout)
    assert row["title"] == "What is the capital of France? Answer in two lines."  # the first prompt, not the startup's

    # Without --wait it returns once typed; a second prompt while the turn runs is refused, nothing typed.
    requests = len(anthropic.message_requests())
    quick = cli(env, workdir, "send", name, "Take your time.")
    assert quick.returncode == 0, quick.stderr
    wait_for(lambda: state_of(env, workdir, name) == "thinking", timeout=30, what="the slow turn running")
    busy = cli(env, workdir, "send", name, "Me too?", "--wait")
    assert busy.returncode == 7 and b"in a turn" in busy.stderr, busy.stderr
    wait_for(lambda: state_of(env, workdir, name) == "waiting", timeout=60, what="the slow turn over")
    assert len(anthropic.message_requests()) == requests + 1
    assert "Me too?" not in json.dumps(anthropic.message_requests()[-1].body)

    # A permission prompt: asking refuses a prompt (exit 7) and says why.
    asked = cli(env, workdir, "send", name, "Write hi to out.txt", "--json")
    assert asked.returncode == 0 and json.loads(asked.stdout)["sent"] is True
    wait_for(lambda: state_of(env, workdir, name) == "asking", timeout=60, what="the permission prompt")
    refused = cli(env, workdir, "send", name, "hello?", "--wait")
    assert refused.returncode == 7 and b"is asking" in refused.stderr, refused.stderr
    assert cli(env, workdir, "tmux", "down", "--socket", socket, "--timeout", "60").returncode == 0
