"""Driving `agentlaunch deck` in process with Textual's own harness (``App.run_test``, pilot keys): the status
records a test writes, the deck's sources, and reading its table and message line (test_deck*.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Static

from agentlaunch import paths
from agentlaunch.deck.agent_list import AgentList
from agentlaunch.deck.app import Deck
from agentlaunch.deck.rows import COLUMNS, Sources
from agentlaunch.live.status import process_start, status_dir
from agentlaunch.worktrees import git_worktree as worktree

Script = Callable[[Deck, Pilot[None]], Awaitable[None]]


def record(name: str, state: str, ago: float = 0, **extra: Any) -> Path:
    """A status record of a live launch (this test's own process stands for it)."""
    now = datetime.now(UTC)
    data = {
        "version": 1,
        "agent": name,
        "provider": "claude",
        "model": "claude-sonnet-4-5",
        "pid": os.getpid(),
        "pid_start": process_start(os.getpid()),
        "state": state,
        "state_since": (now - timedelta(seconds=ago)).isoformat(timespec="seconds"),
        "working_dir": str(Path.cwd()),
        "percent": 41.2,
        "context": 82_000,
        "to_compaction": 80_210,
        "cost": "$0.1234",
        "session_id": f"{name}-session",
        "cache": {"expires_at": (now + timedelta(seconds=200)).isoformat(timespec="seconds"), "ttl_s": 300},
        **extra,
    }
    folder = status_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


def sources(agents_dir: Path | None) -> Sources:
    state = paths.state_dir()
    return Sources(status_dir(state), state, agents_dir, paths.store_path(), None)


def drive(app: Deck, script: Script, size: tuple[int, int] = (140, 30)) -> None:
    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await script(app, pilot)

    asyncio.run(main())


async def settle(pilot: Pilot[None], condition: Callable[[], object], app: Deck, what: str, timeout: float = 30.0) -> None:
    """Let the deck run until ``condition`` holds (its watch and timers do the reading); fail saying what it shows."""
    for _ in range(int(timeout / 0.05)):
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out waiting for {what}; rows: {table_rows(app)}; message: {message(app)!r}")


def table_rows(app: Deck) -> list[list[str]]:
    table = app.query_one(AgentList)
    return [list(table.get_row_at(i)) for i in range(table.row_count)]


def message(app: Deck) -> str:
    return str(app.query_one("#message", Static).render())


BRANCH, REPO = COLUMNS.index("branch"), COLUMNS.index("repo")


def run_git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


def repo_with_worktree(tmp_path: Path) -> tuple[Path, Path]:
    """A repository with one commit on main, and demo's worktree of it (registered as agentlaunch registers one)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "main")
    run_git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "first")
    path, _ = worktree.ensure("demo", repo, tmp_path / "trees", paths.state_dir())
    return repo, path
