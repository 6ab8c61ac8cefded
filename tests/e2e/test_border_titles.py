"""The pane border keeps agentlaunch's meters whatever title the CLI inside sets for itself.

Codex 0.171.0 and Gemini 0.61.0 set the terminal's title (an OSC 2: tmux's #{pane_title}) as they go: "[ ! ] Action
Required | …", "◇ Ready (repo)". The border read #{pane_title}, so their title replaced the meters until the next
status record was written. Now the border reads agentlaunch's line from a pane option no CLI can set, with the CLI's
title beside it. The border is read as tmux draws it: ``#{E:pane-border-format}`` expanded for the pane.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.fakeapi import gemini as gfake
from agentlaunch.fakeapi import responses as cfake
from agentlaunch.live.status import LINE_OPTION
from testbed.agent_files import write_agent
from testbed.clis import ensure_cli
from tests.e2e.test_tmux_ready_states import config_dir, gemini_team, pane_of, record, screen, tmux
from tests.support.cli_runs import run_cli
from tests.support.codex_tui_home import codex_tui_env
from tests.support.waits import turn_over, wait_for

__all__ = ["config_dir", "gemini_team"]  # the fixtures, used by name

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


@pytest.fixture
def codex_team(isolated_home: Path, agents_dir: Path, config_dir: Path) -> Iterator[tuple[Any, dict[str, str], Path]]:
    binary = ensure_cli("codex")
    with tempfile.TemporaryDirectory(prefix="albt-") as folder, cfake.ResponsesFake() as api:
        home, work = Path(folder) / "home", Path(folder) / "work"
        home.mkdir()
        work.mkdir()
        env = codex_tui_env(home, api.server.url, [work], agents_dir, config_dir)
        write_agent(
            agents_dir,
            "cdx",
            {"provider": "codex", "model": "gpt-5.5", "command": str(binary), "working_dir": str(work), "startup": "say hello"},
        )
        usage = cfake.ResponsesUsage(input_tokens=900, cached_tokens=0, output_tokens=7)
        for _ in range(4):  # the startup turn, and a call Codex makes of its own (the thread's title)
            api.script.push(cfake.TextReply("Hello from Codex.", usage))
        yield api, env, work


def border(socket: str, pane: str) -> str:
    return tmux(socket, "display-message", "-p", "-t", pane, "#{E:pane-border-format}")


def own_title(socket: str, pane: str, agent: str) -> str | None:
    """The title the CLI set for itself, once it did (not agentlaunch's line, the agent's name or the host's)."""
    title, line, host = (
        tmux(socket, "display-message", "-p", "-t", pane, "#{pane_title}\t#{" + LINE_OPTION + "}\t#{host}")
        .rstrip("\n")
        .split("\t")
    )
    return title if title not in (line, host, agent) and not title.startswith(f"{agent} · ") else None


def meters_kept(socket: str, env: dict[str, str], work: Path, agent: str) -> None:
    pane = pane_of(socket, agent)
    wait_for(lambda: turn_over(record(env, work, agent)), timeout=90, what="the startup turn over")
    try:
        title = wait_for(lambda: own_title(socket, pane, agent), timeout=60, what="the CLI's own title")
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {border(socket, pane)!r}\n{screen(socket, pane)}") from None
    shown = border(socket, pane)
    # Before: the border was the CLI's title alone ("[ ! ] Action Required | …", "◇ Ready (repo)").
    assert f" {agent} · " in shown and " · ctx " in shown and "to compaction" in shown, shown  # the meters
    assert f" │ {title}" in shown, shown  # the CLI's title beside the meters, never instead of them
    assert shown.index(f"{agent} · ") < shown.index(" · ctx ") < shown.index(title)
    assert run_cli("tmux", "down", "--socket", socket, env=env, cwd=work, timeout=120).returncode == 0


def test_codex_sets_its_own_title_and_the_border_keeps_the_meters(
    socket: str, codex_team: tuple[Any, dict[str, str], Path]
) -> None:
    _, env, work = codex_team
    up = run_cli("tmux", "up", "cdx", "--socket", socket, "--no-attach", "--wait", "90", env=env, cwd=work, timeout=150)
    assert up.returncode == 0, up.stderr.decode()
    meters_kept(socket, env, work, "cdx")


def test_gemini_sets_its_own_title_and_the_border_keeps_the_meters(
    socket: str, gemini_team: tuple[gfake.GeminiFake, dict[str, str], Path]
) -> None:
    api, env, work = gemini_team
    api.script.push(gfake.TextReply("Hello, ready.", gfake.GeminiUsage(prompt=900, output=7)))
    up = run_cli("tmux", "up", "gem", "--socket", socket, "--no-attach", "--wait", "90", env=env, cwd=work, timeout=150)
    assert up.returncode == 0, up.stderr.decode()
    meters_kept(socket, env, work, "gem")
