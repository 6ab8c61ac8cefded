"""What Claude Code 2.1.332 sends on a resume after the agent was edited, and what agentlaunch says about it.

Claude Code records a conversation's system prompt and re-sends the record on every resume
(``--system-prompt-snapshot``, on by default): an edit reaches a resumed session only with the flag off.
The fake Anthropic API records each request's system prompt.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentlaunch.fakeapi.anthropic import ApiUsage, FakeAnthropic, system_text, text_reply
from testbed.agent_files import write_agent
from tests.e2e.conftest import RunCli

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]
OLD, NEW = "You are the OLD-SOUL-MARKER editor.", "You are the NEW-SOUL-MARKER editor."


def _agent(agents_dir: Path, workdir: Path, claude_bin: Path, soul: str, flags: list[str]) -> None:
    write_agent(
        agents_dir,
        "editor",
        {
            "display": "Editor",
            "provider": "claude",
            "model": "claude-sonnet-4-5",
            "command": str(claude_bin),
            "working_dir": str(workdir),
            "provider_flags": flags,
        },
        {"soul.md": soul},
    )


def test_a_resume_after_an_edit_gets_the_recorded_prompt_and_says_so(
    anthropic: FakeAnthropic, run_claude: RunCli, agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    anthropic.push(text_reply("one", ApiUsage(10, 6000, 0, 5)), text_reply("two", ApiUsage(10, 0, 6000, 5)))
    _agent(agents_dir, workdir, claude_bin, OLD, [])
    assert run_claude("run", "editor", "first").returncode == 0
    _agent(agents_dir, workdir, claude_bin, NEW, [])
    second = run_claude("run", "editor", "-c", "second")
    err = second.stderr.decode()
    assert second.returncode == 0, err
    first_req, second_req = anthropic.message_requests()
    assert OLD in system_text(second_req.body) and NEW not in system_text(second_req.body)
    assert system_text(second_req.body) == system_text(first_req.body)
    # Nothing the resume sends changed: no "prefix changed" notice, no cache-miss cause on record.
    assert "prefix changed" not in err
    assert "resumes with the instructions it recorded when it started: your edit (soul) reaches new sessions only" in err
    assert "--system-prompt-snapshot off" in err and "~6,010 tokens to the cache again" in err


def test_with_the_snapshot_off_the_resume_sends_the_edit_and_says_the_prefix_changed(
    anthropic: FakeAnthropic, run_claude: RunCli, agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    anthropic.push(text_reply("one"), text_reply("two"), text_reply("three"))
    _agent(agents_dir, workdir, claude_bin, OLD, [])
    assert run_claude("run", "editor", "first").returncode == 0
    _agent(agents_dir, workdir, claude_bin, NEW, ["--system-prompt-snapshot", "off"])
    second = run_claude("run", "editor", "-c", "second")
    err = second.stderr.decode()
    assert second.returncode == 0, err
    assert "prefix changed since the last launch (soul, flags)" in err and "resumes with the instructions" not in err
    # Back to the default: the resume sends the first launch's record again (a launch with the snapshot off
    # does not record its text), so the request changed back, and the edit is held once more.
    _agent(agents_dir, workdir, claude_bin, NEW, [])
    third = run_claude("run", "editor", "-c", "third")
    err = third.stderr.decode()
    assert third.returncode == 0, err
    assert "prefix changed since the last launch (soul, flags)" in err and "your edit (soul) reaches new sessions only" in err
    first_req, second_req, third_req = anthropic.message_requests()
    assert OLD in system_text(first_req.body) and NEW not in system_text(first_req.body)
    assert NEW in system_text(second_req.body) and OLD not in system_text(second_req.body)
    assert system_text(third_req.body) == system_text(first_req.body)


def test_a_fork_of_the_session_keeps_the_recorded_prompt_too(
    anthropic: FakeAnthropic, run_claude: RunCli, agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    anthropic.push(text_reply("one"), text_reply("two"))
    _agent(agents_dir, workdir, claude_bin, OLD, [])
    assert run_claude("run", "editor", "first").returncode == 0
    _agent(agents_dir, workdir, claude_bin, NEW, ["--fork-session"])
    forked = run_claude("run", "editor", "-c", "second")
    assert forked.returncode == 0, forked.stderr.decode()
    first_req, second_req = anthropic.message_requests()
    assert first_req.headers.get("x-claude-code-session-id") != second_req.headers.get("x-claude-code-session-id")
    assert OLD in system_text(second_req.body) and NEW not in system_text(second_req.body)  # measured on 2.1.332
