"""Claude Code agents share a repository: each gets its own instructions as a system-prompt file, the repo's CLAUDE.md as usual.

The real Claude Code against the fake Anthropic API on 127.0.0.1, two agents at
once in one git repository that commits its own CLAUDE.md.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentlaunch.fakeapi.anthropic import FakeAnthropic, claude_env, first_user_text, system_text, text_reply
from testbed.agent_files import write_agent
from tests.support.git_repo import git, make_repo, run_at_once

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

REPO_OWN = "REPO-OWN: the team's committed CLAUDE.md\n"


def test_two_agents_at_once_in_one_repository_each_get_only_their_own_instructions(
    anthropic: FakeAnthropic, agents_dir: Path, isolated_home: Path, claude_bin: Path, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "shared-repo", {"CLAUDE.md": REPO_OWN})
    for name in ("alpha", "beta"):
        write_agent(
            agents_dir,
            name,
            {"provider": "claude", "model": "claude-sonnet-4-5", "command": str(claude_bin), "working_dir": str(repo)},
            {"soul.md": f"{name.upper()}-SOUL: you are {name.title()}.\n"},
        )  # the default delivery: system-prompt
    anthropic.push(text_reply("one"), text_reply("two"))
    assert anthropic.server is not None
    env = {**os.environ, **claude_env(anthropic.server.url, isolated_home, {"CLAUDE_CODE_MAX_RETRIES": "0"})}
    env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
    for code, out, err in run_at_once(["alpha", "beta"], "hello", repo, env):
        assert code == 0, err
        assert out.strip() in ("one", "two")
    requests = anthropic.message_requests()
    assert len(requests) == 2
    by_agent = {("alpha" if "ALPHA-SOUL" in system_text(r.body) else "beta"): r for r in requests}
    assert set(by_agent) == {"alpha", "beta"}
    for mine, other in (("alpha", "BETA-SOUL"), ("beta", "ALPHA-SOUL")):
        body = by_agent[mine].body
        assert system_text(body).count(f"{mine.upper()}-SOUL") == 1  # in the system prompt, once
        assert other not in str(body)
        assert f"Contents of {repo}/CLAUDE.md" in first_user_text(body) and "REPO-OWN" in first_user_text(body)
    assert (repo / "CLAUDE.md").read_text() == REPO_OWN
    assert git(repo, "status", "--porcelain", "--ignored") == ""
