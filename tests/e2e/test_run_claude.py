"""`agentlaunch run` end to end: the real Claude Code against a fake Anthropic API on 127.0.0.1."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pexpect
import pytest

from agentlaunch.datarecord import replace
from agentlaunch.fakeapi.anthropic import (
    ApiUsage,
    FakeAnthropic,
    claude_env,
    error_reply,
    first_user_text,
    text_reply,
    tool_reply,
)
from agentlaunch.usage.pricing import genai_price
from agentlaunch.usage.store import Store
from testbed.agent_files import write_agent
from tests.conftest import REPO
from tests.e2e.conftest import RunCli
from tests.support.cli_runs import run_cli, run_cli_inprocess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]
STARTUP = "<agentlaunch-startup>"


def last_user_text(body: dict) -> str:  # type: ignore[type-arg]
    """The newest user message's own text: its last text block (Claude Code puts reminders before it)."""
    users = [m for m in body["messages"] if m.get("role") == "user"]
    content = users[-1]["content"]
    if isinstance(content, str):
        return content
    texts = [b.get("text", "") for b in content if b.get("type") == "text"]
    return texts[-1] if texts else ""  # a tool result carries no text of the user's


def events_of(stdout: bytes) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in stdout.decode().splitlines()]


def test_headless_turn_delivers_instructions_and_startup_prints_only_the_answer_and_warns_of_compaction(
    anthropic: FakeAnthropic, run_claude: RunCli, claude_agent: str, workdir: Path
) -> None:
    # claude-sonnet-4-5: window 200,000 (reported by the CLI), threshold 167,000; this call's context is past it.
    anthropic.push(text_reply("Hello from the fake API", ApiUsage(12, 5000, 180_000, 7)))
    result = run_claude("run", claude_agent, "review please")
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b"Hello from the fake API\n"
    err = result.stderr.decode()
    assert "tokens in 12 · out 7 · cache r 180,000/w 5,000 · $" in err
    assert err.count("passed the compaction threshold 167,000") == 1
    assert "context 185,012 of 200,000" in err
    assert "167,000 by 18,012: the CLI may compact the conversation at any call" in err

    (request,) = anthropic.message_requests()
    text = first_user_text(request.body)
    instructions = (REPO / "tests" / "golden" / "reviewer.CLAUDE.md").read_text()
    assert (workdir / "CLAUDE.md").read_text() == instructions
    assert instructions.strip() in text, "the rendered CLAUDE.md must reach the request"
    assert f"Contents of {workdir}/CLAUDE.md" in text
    user_turn = last_user_text(request.body)
    assert user_turn.startswith(STARTUP) and user_turn.rstrip().endswith("review please")
    assert "Review the most recent commit first." in user_turn and "Accounts assigned to you: github:review-bot" in user_turn


def test_startup_message_is_absent_after_continue_and_resume(
    anthropic: FakeAnthropic, run_claude: RunCli, claude_agent: str
) -> None:
    anthropic.push(text_reply("one"), text_reply("two"), text_reply("three"))
    assert run_claude("run", claude_agent, "first").returncode == 0
    second = run_claude("run", claude_agent, "-c", "second")
    assert second.returncode == 0, second.stderr.decode()
    sessions = json.loads(run_claude("sessions", "--json").stdout)
    assert len(sessions) == 1 and sessions[0]["turns"] == 2
    third = run_claude("run", claude_agent, "-r", sessions[0]["session_id"], "third")
    assert third.returncode == 0, third.stderr.decode()
    assert third.stdout == b"three\n"

    first_req, second_req, third_req = anthropic.message_requests()
    assert STARTUP in last_user_text(first_req.body)
    for req, prompt in ((second_req, "second"), (third_req, "third")):
        assert STARTUP not in last_user_text(req.body) and last_user_text(req.body).strip() == prompt
        # The CLI's history holds the first message once; agentlaunch never sends the startup again.
        assert req.raw.decode().count(STARTUP) == 1
    session_ids = {r.headers.get("x-claude-code-session-id") for r in anthropic.message_requests()}
    assert session_ids == {sessions[0]["session_id"]}


def test_usage_counted_per_call_on_a_tool_turn_and_one_hour_cache_writes_priced_as_claude_code_prices_them(
    anthropic: FakeAnthropic, run_claude: RunCli, claude_agent: str, isolated_home: Path
) -> None:
    # A tool turn: the first call writes 20,000 of its 23,456 cache tokens with the 1-hour lifetime, the
    # second writes only 5-minute ones. Claude Code's own total_cost_usd is the oracle.
    anthropic.push(
        tool_reply(
            "Bash",
            {"command": "echo hi", "description": "Print hi"},
            ApiUsage(100, 23_456, 0, 30, cache_creation_1h=20_000),
            text="Running it.",
        ),
        text_reply("It printed hi.", ApiUsage(8, 1_500, 23_456, 9)),
    )
    result = run_claude("run", claude_agent, "run echo hi", "--json")
    assert result.returncode == 0, result.stderr.decode()
    events = events_of(result.stdout)
    usages = [e["usage"] for e in events if e["event"] == "usage"]
    assert usages == [
        {"input": 100, "cache_write": 23_456, "cache_read": 0, "output": 30, "reasoning": 0, "cache_write_1h": 20_000},
        {"input": 8, "cache_write": 1_500, "cache_read": 23_456, "output": 9, "reasoning": 0, "cache_write_1h": 0},
    ]
    assert [e["name"] for e in events if e["event"] == "tool_use"] == ["Bash"]
    (end,) = [e for e in events if e["event"] == "turn_end"]
    session_id = next(e["session_id"] for e in events if e["event"] == "session")
    with Store.open(isolated_home / "state" / "usage.sqlite3") as store:
        calls = store.calls_for_session(session_id)
    assert [(c.usage.input, c.usage.cache_write, c.usage.cache_read, c.usage.output) for c in calls] == [
        (100, 23_456, 0, 30),
        (8, 1_500, 23_456, 9),
    ]
    assert [(c.usage.cache_write, c.usage.cache_write_1h) for c in calls] == [(23_456, 20_000), (1_500, 0)]
    assert all(c.cost_usd is not None for c in calls)
    ours = sum(c.cost_usd or 0 for c in calls)
    assert end["provider_cost_usd"] == pytest.approx(ours, abs=1e-9), "our price must equal Claude Code's total_cost_usd"
    # the oracle tells the lifetimes apart: priced all at the 5-minute rate, the turn would not match
    as_5m = genai_price(replace(calls[0].usage, cache_write_1h=0), "claude", calls[0].model or "")
    assert as_5m is not None and calls[0].cost_usd is not None
    assert end["provider_cost_usd"] != pytest.approx(ours - calls[0].cost_usd + as_5m.cost_usd, abs=1e-6)


def test_missing_binary_gives_127_with_an_install_hint(run_claude: RunCli, agents_dir: Path, workdir: Path) -> None:
    write_agent(
        agents_dir, "ghost", {"provider": "claude", "command": str(workdir / "no-such-claude"), "working_dir": str(workdir)}
    )
    result = run_claude("run", "ghost", "hi")
    assert result.returncode == 127
    err = result.stderr.decode()
    assert "no-such-claude: provider CLI not found" in err and "npm install -g @anthropic-ai/claude-code" in err


def test_unknown_resume_id_fails_clearly_without_starting_a_session(
    run_claude: RunCli, claude_agent: str, anthropic: FakeAnthropic
) -> None:
    result = run_claude("run", claude_agent, "-r", "00000000-0000-4000-8000-000000000000", "hi")
    assert result.returncode == 1
    assert "No conversation found with session ID: 00000000-0000-4000-8000-000000000000" in result.stderr.decode()
    assert anthropic.message_requests() == []
    assert json.loads(run_claude("sessions", "--json").stdout) == []


def test_chat_two_turns_in_one_process_permission_prompt_interrupt_and_exit(
    anthropic: FakeAnthropic, claude_agent: str, agents_dir: Path, workdir: Path, isolated_home: Path
) -> None:
    """A person's session on the real Claude Code, through a real terminal."""
    assert anthropic.server is not None
    anthropic.push(
        text_reply("First answer", ApiUsage(12, 5000, 9000, 7)),
        tool_reply("Write", {"file_path": "out.txt", "content": "hello\n"}, ApiUsage(15, 2000, 11000, 40)),
        text_reply("Done writing.", ApiUsage(6, 120, 13000, 4)),
        text_reply("This is a slow answer that will be interrupted", ApiUsage(11, 0, 14000, 50), delay=1.0),
        text_reply("After the interrupt", ApiUsage(9, 0, 14100, 6)),
    )
    env = dict(os.environ)
    env.update(claude_env(anthropic.server.url, isolated_home, {"CLAUDE_CODE_MAX_RETRIES": "0"}))
    env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
    log = io.StringIO()
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agentlaunch", "run", claude_agent, "--line"],  # the line chat (the native mode is the default)
        cwd=str(workdir),
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 160),
    )
    child.logfile_read = log
    try:
        child.expect("› ")
        child.sendline("first question")
        child.expect("First answer")
        child.expect(r"context 14,012/200,000 \(7\.0%\)")
        child.expect("› ")
        child.sendline("please write out.txt")
        child.expect("Allow Write")
        child.sendline("y")
        child.expect("Done writing.")
        child.expect("› ")
        assert (workdir / "out.txt").read_text() == "hello\n"
        child.sendline("tell me slowly")
        child.expect("This is")
        child.sendintr()
        child.expect("turn interrupted; the session goes on")
        child.expect("› ")
        child.sendline("still there?")
        child.expect("After the interrupt")
        child.expect("› ")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, log.getvalue()
    requests = anthropic.message_requests()
    assert len({r.headers.get("x-claude-code-session-id") for r in requests}) == 1
    assert STARTUP in last_user_text(requests[0].body)
    assert all(STARTUP not in last_user_text(r.body) for r in requests[1:])
    assert "[Request interrupted by user]" in requests[-1].raw.decode()


def test_an_api_error_exits_1_and_the_failed_first_turn_keeps_the_startup_message_never_resent(
    anthropic: FakeAnthropic, run_claude: RunCli, claude_agent: str
) -> None:
    """An API error gives exit 1 and the provider's message. Decision: the startup message counts as sent once
    written to the CLI. A failed first turn stays in Claude Code's transcript, so the retry (-c) carries it once."""
    anthropic.push(error_reply(500, "scripted outage"), text_reply("recovered"))
    failed_run = run_claude("run", claude_agent, "first try")
    assert failed_run.returncode == 1
    assert failed_run.stdout == b""
    assert "the turn failed: API Error: 500 scripted outage" in failed_run.stderr.decode()
    retry = run_claude("run", claude_agent, "-c", "try again")
    assert retry.returncode == 0, retry.stderr.decode()
    failed, recovered = anthropic.message_requests()
    assert failed.raw.decode().count(STARTUP) == 1
    assert recovered.raw.decode().count(STARTUP) == 1
    assert STARTUP not in last_user_text(recovered.body)


def test_a_miss_after_a_changed_soul_is_marked_with_its_cause_and_caching_savings_are_reported(
    anthropic: FakeAnthropic, agents_dir: Path, isolated_home: Path, workdir: Path, claude_bin: Path
) -> None:
    # With its snapshot off Claude Code sends the edited soul on resume (on by default it re-sends the first
    # launch's recorded prompt, and the edit is held, not a change: tests/e2e/test_resumed_prompt.py)
    write_agent(
        agents_dir,
        "keeper",
        {
            "provider": "claude",
            "model": "claude-sonnet-4-5",
            "command": str(claude_bin),
            "working_dir": str(workdir),
            "provider_flags": ["--system-prompt-snapshot", "off"],
        },
        {"soul.md": "You are Keeper.\n"},
    )
    assert anthropic.server is not None
    env = {**os.environ, **claude_env(anthropic.server.url, isolated_home, {"CLAUDE_CODE_MAX_RETRIES": "0"})}
    env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
    anthropic.push(text_reply("one", ApiUsage(10, 20_000, 0, 5)), text_reply("two", ApiUsage(10, 100, 20_000, 5)))
    for args in (("keeper", "one"), ("keeper", "-c", "two")):
        done = run_cli("run", *args, cwd=workdir, env=env, timeout=240)
        assert done.returncode == 0, done.stderr.decode()
    (agents_dir / "keeper" / "soul.md").write_text("You are Keeper, changed.\n")
    anthropic.push(text_reply("three", ApiUsage(10, 21_000, 0, 5)))
    done = run_cli("run", "keeper", "-c", "three", cwd=workdir, env=env, timeout=240)
    assert done.returncode == 0, done.stderr.decode()
    sessions = json.loads(run_cli_inprocess("sessions", "--json", env=env).stdout)
    (session,) = [s["session_id"] for s in sessions]
    calls = json.loads(run_cli_inprocess("usage", "--session", session, "--calls", "--json", env=env).stdout)
    assert [c["cache_miss"] for c in calls] == [None, None, "the instructions prefix changed (soul)"]
    assert all(c["full_price_usd"] > c["cost_usd"] for c in calls[1:2])  # the hit was cheaper than full price
    (row,) = json.loads(run_cli_inprocess("usage", "--by", "agent", "--json", env=env).stdout)
    assert row["saved_usd"] == pytest.approx(sum(c["full_price_usd"] - c["cost_usd"] for c in calls), abs=1e-12)
    table = run_cli_inprocess("usage", "--session", session, "--calls", env=env).stdout.decode()
    assert "instructions" in table and "(soul)" in table  # the miss column (wrapped to the width)
