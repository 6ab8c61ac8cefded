"""The list of retired models (agentlaunch/providers/claude_retired.py) against the real Claude Code's banner.

Claude Code 2.1.332 shows "⚠ Claude Sonnet 4.5 was retired on November 30, 2026. Consider switching to a
newer model." in the pane of an agent on that model; the bundled reviewer's model gets no such banner.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agentlaunch.fakeapi.anthropic import FakeAnthropic, text_reply
from agentlaunch.providers.claude_retired import retirement
from tests.conftest import EXAMPLE_AGENTS
from tests.e2e.test_tmux_claude import claude_agent, cli, env, pane_of, screen, settled  # noqa: F401  (fixtures)
from tests.support.waits import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]


def test_claude_code_calls_the_listed_model_retired_and_the_examples_model_current(
    socket: str,
    env: dict[str, str],  # noqa: F811
    anthropic: FakeAnthropic,
    agents_dir: Path,
    workdir: Path,
    claude_bin: Path,  # noqa: F811
) -> None:
    current = yaml.safe_load((EXAMPLE_AGENTS / "reviewer" / "agent.yaml").read_text())["model"]
    listed = retirement("claude", "claude-sonnet-4-5")
    assert listed is not None and retirement("claude", current) is None
    old = claude_agent(agents_dir, "old", claude_bin, workdir, model="claude-sonnet-4-5")
    new = claude_agent(agents_dir, "new", claude_bin, workdir, model=current)
    anthropic.push(text_reply("Ready."), text_reply("Ready."))
    up = cli(env, workdir, "tmux", "up", old, new, "--socket", socket, "--no-attach", "--wait", "60")
    assert up.returncode == 0, up.stderr
    for name in (old, new):
        wait_for(lambda name=name: settled(env, workdir, name), timeout=90, what=f"{name} waiting after its first turn")
    banner = f"{listed.name} was retired on November 30, 2026"
    wait_for(lambda: banner in " ".join(screen(socket, pane_of(socket, old)).split()), timeout=30, what="the banner")
    assert "retired" not in screen(socket, pane_of(socket, new))
    assert cli(env, workdir, "tmux", "down", "--socket", socket, "--timeout", "60").returncode == 0
