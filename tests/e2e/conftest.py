"""Fixtures for running agentlaunch against the real provider CLIs and fake APIs on 127.0.0.1."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentlaunch.fakeapi.anthropic import FakeAnthropic, claude_env
from testbed.agent_files import write_agent
from testbed.clis import ensure_cli
from tests.support.cli_runs import run_cli

RunCli = Callable[..., subprocess.CompletedProcess[bytes]]


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    return ensure_cli("claude")


@pytest.fixture
def anthropic() -> Iterator[FakeAnthropic]:
    api = FakeAnthropic()
    with api.serve():
        yield api


@pytest.fixture
def claude_agent(agents_dir: Path, workdir: Path, claude_bin: Path) -> str:
    """The example reviewer, pointed at the pinned claude binary, working in ``workdir``."""
    write_agent(
        agents_dir,
        "reviewer",
        {
            "display": "Reviewer",
            "provider": "claude",
            "model": "claude-sonnet-4-5",
            "bundles": ["house-style", "security-basics"],
            "skills": ["git-hygiene", "code-review"],
            "accounts": ["github:review-bot"],
            "startup": "Review the most recent commit first.",
            "command": str(claude_bin),
            "working_dir": str(workdir),
            "delivery": "file",  # these tests pin the CLAUDE.md path; test_doctor_live covers the default
        },
    )
    return "reviewer"


@pytest.fixture
def run_claude(anthropic: FakeAnthropic, agents_dir: Path, isolated_home: Path, workdir: Path) -> RunCli:
    """Run ``agentlaunch ARGS`` with claude pointed at the fake API (no retries, so errors are quick)."""
    assert anthropic.server is not None
    env = claude_env(anthropic.server.url, isolated_home, {"CLAUDE_CODE_MAX_RETRIES": "0"})
    env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)

    def run(*args: str, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        return run_cli(*args, env=env, cwd=workdir, input=input)

    return run
