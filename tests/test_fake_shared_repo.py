"""Fake agents share a repository as Claude agents do: a system-prompt file each, the repo's CLAUDE.md untouched."""

from __future__ import annotations

import os
from pathlib import Path

from testbed.agent_files import write_agent
from tests.support.git_repo import git, make_repo, run_at_once

REPO_OWN = "REPO-OWN: the team's committed CLAUDE.md\n"


def test_two_fake_agents_at_once_in_one_repository_each_read_only_their_own_instructions(
    agents_dir: Path, isolated_home: Path, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "shared-repo", {"CLAUDE.md": REPO_OWN})
    for name in ("alpha", "beta"):
        write_agent(agents_dir, name, {"provider": "fake", "working_dir": str(repo)}, {"soul.md": f"{name.upper()}-SOUL\n"})
    env = {**os.environ, "HOME": str(isolated_home), "AGENTLAUNCH_AGENTS_DIR": str(agents_dir)}
    answers = run_at_once(["alpha", "beta"], "hello", repo, env)
    for (code, out, err), mine, other in zip(answers, ("ALPHA", "BETA"), ("BETA", "ALPHA"), strict=True):
        assert code == 0, err
        assert "I read the system prompt file (" in out and f'its first line is: "{mine}-SOUL"' in out
        assert f"{other}-SOUL" not in out
        assert "I read CLAUDE.md (" in out and '"REPO-OWN: the team' in out  # the repository's file, as the CLI reads it
    assert (repo / "CLAUDE.md").read_text() == REPO_OWN
    assert git(repo, "status", "--porcelain", "--ignored") == ""
