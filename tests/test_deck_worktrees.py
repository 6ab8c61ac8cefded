"""`agentlaunch deck` with an agent's worktree, driven in process with Textual's pilot: a repository deleted under
it, and merging from the diff page.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from textual.pilot import Pilot

from agentlaunch.deck.agent_list import AgentList
from agentlaunch.deck.app import Deck
from agentlaunch.deck.screens import Page
from tests.support.deck_pilot import (
    BRANCH,
    REPO,
    drive,
    message,
    record,
    repo_with_worktree,
    run_git,
    settle,
    sources,
    table_rows,
)


def test_a_repository_deleted_under_a_worktree_is_said_on_the_row_and_the_others_show(agents_dir: Path, tmp_path: Path) -> None:
    repo, path = repo_with_worktree(tmp_path)
    (path / "new.txt").write_text("x\n")
    record("reviewer", "waiting", 2, working_dir=str(path))

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        # the worktrees are read in a worker thread
        await settle(pilot, lambda: any("agentlaunch/demo" in r[BRANCH] for r in table_rows(app)), app, "the worktree")
        rows = {r[0]: r for r in table_rows(app)}
        assert rows["reviewer"][BRANCH] == "agentlaunch/demo +0 −0 dirty 1" and rows["reviewer"][REPO] == "repo"
        shutil.rmtree(repo)
        app.read_slow()
        await settle(pilot, lambda: "broken" in {r[0]: r for r in table_rows(app)}["reviewer"][BRANCH], app, "broken")
        rows = {r[0]: r for r in table_rows(app)}
        assert rows["reviewer"][BRANCH].startswith("broken: ") and rows["reviewer"][1].startswith("waiting")
        assert rows["planner"][1] == "not running"  # the others still show
        await pilot.press("d")  # the diff page of a broken worktree says what git said
        assert isinstance(app.screen, Page)
        body = str(app.screen.body)
        assert body.startswith("git cannot read this worktree: ") and rows["reviewer"][BRANCH].removeprefix("broken: ") in body

    drive(Deck(sources(agents_dir)), script)


def test_merge_from_the_diff_page_is_refused_while_dirty_then_merges_and_removes_the_worktree(
    agents_dir: Path, tmp_path: Path
) -> None:
    repo, path = repo_with_worktree(tmp_path)
    (path / "done.txt").write_text("the agent's work\n")

    async def open_diff(app: Deck, pilot: Pilot[None]) -> None:
        app.read_slow()
        shown = lambda: any(r[0] == "demo" and r[BRANCH].startswith("agentlaunch/demo") for r in table_rows(app))  # noqa: E731
        await settle(pilot, shown, app, "demo's worktree")
        app.query_one(AgentList).move_cursor(row=[r[0] for r in table_rows(app)].index("demo"))
        await pilot.press("d")
        assert isinstance(app.screen, Page) and "done.txt" in str(app.screen.body)
        assert "+the agent's work" in str(app.screen.body).splitlines()  # the new file's text, on lines of their own

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        await open_diff(app, pilot)
        await pilot.press("M", "y")
        await settle(pilot, lambda: "uncommitted changes" in message(app), app, "the refusal")
        assert message(app).startswith("failed (exit 4): ") and not (repo / "done.txt").exists() and path.is_dir()

        run_git(path, "add", "done.txt")
        run_git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "the work")
        await open_diff(app, pilot)
        await pilot.press("M", "y")
        await settle(pilot, lambda: "worktree removed" in message(app), app, "the merge")
        assert message(app) == "merged agentlaunch/demo into main; worktree removed"
        assert (repo / "done.txt").read_text() == "the agent's work\n" and not path.exists()

    drive(Deck(sources(agents_dir)), script)
