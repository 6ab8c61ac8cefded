"""The deck's keys reach the agent the person chose: the selection follows the agent (its name and session) through
a re-sort, a refresh, a filter and a record's change; a key that ends or restarts something names the agent and,
on y, acts on that agent as the list stands then, or says why it does nothing. Forks are marked; a broken
definition keeps the table's columns. Driven with Textual's harness; the commands the keys run are recorded."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from agentlaunch.deck import actions
from agentlaunch.deck.agent_list import AgentList
from agentlaunch.deck.app import Deck
from agentlaunch.deck.rows import gather
from agentlaunch.deck.screens import Confirm
from agentlaunch.live.status import process_start, status_dir
from tests.support.deck_pilot import drive, message, record, settle, sources, table_rows

Ran = list[list[str]]


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> Ran:
    """The `agentlaunch` commands the deck's keys run, recorded instead of run."""
    commands: Ran = []
    monkeypatch.setattr(actions, "agentlaunch", lambda args, socket, cwd=None: commands.append(args) or actions.Outcome(0, "ok"))
    return commands


def select(app: Deck, label: str) -> None:
    app.query_one(AgentList).move_cursor(row=[r[0] for r in table_rows(app)].index(label))


def chosen(app: Deck) -> str:
    row = app.selected()
    return getattr(row, "label", row.agent) if row is not None else ""  # (label: the fork mark)


def question(app: Deck) -> str:
    assert isinstance(app.screen, Confirm), type(app.screen)
    return app.screen.question


def test_the_selection_stays_on_its_agent_through_a_re_sort_a_record_gone_and_a_filter(agents_dir: Path) -> None:
    record("alpha", "waiting", 5)
    record("reviewer", "thinking", 5)  # a defined agent, running

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        select(app, "reviewer")
        await pilot.pause()
        record("reviewer", "asking", 0)  # it sorts first now
        await settle(pilot, lambda: table_rows(app)[0][0] == "reviewer", app, "reviewer asking, on top")
        assert chosen(app) == "reviewer"
        record("zeta", "asking", 0)  # a row comes before it
        await settle(pilot, lambda: any(r[0] == "zeta" for r in table_rows(app)), app, "zeta")
        assert chosen(app) == "reviewer"
        (status_dir() / "reviewer.json").unlink()  # its launch ended: the row is its definition's now, lower down
        await settle(pilot, lambda: any(r[0] == "reviewer" and r[1] == "not running" for r in table_rows(app)), app, "gone")
        assert chosen(app) == "reviewer"
        await pilot.press("slash", *"view", "enter")
        assert [r[0] for r in table_rows(app)] == ["reviewer"] and chosen(app) == "reviewer"
        await pilot.press("slash", "ctrl+a", "ctrl+k", "enter")
        assert len(table_rows(app)) > 1 and chosen(app) == "reviewer"

    drive(Deck(sources(agents_dir), watch=True), script)


def test_r_names_the_agent_and_restarts_it_even_when_the_list_re_sorts_under_the_question(agents_dir: Path, ran: Ran) -> None:
    record("alpha", "waiting", 5)
    record("reviewer", "waiting", 5)

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        select(app, "reviewer")
        await pilot.press("r")
        assert question(app) == "restart reviewer?" and ran == []  # nothing before y
        record("alpha", "asking", 0)  # alpha jumps to the top, reviewer moves down, under the open question
        await settle(pilot, lambda: app.rows[0].agent == "alpha", app, "the list re-sorted")
        await pilot.press("y")
        await settle(pilot, lambda: ran, app, "the restart")
        assert ran == [["restart", "reviewer", "--agents-dir", str(agents_dir)]]
        assert chosen(app) == "reviewer"
        await pilot.press("r", "n")  # n: nothing
        await pilot.press("x", "escape")
        await pilot.pause()
        assert len(ran) == 1

    drive(Deck(sources(agents_dir), watch=True), script)


def test_stop_refuses_saying_why_when_the_record_went_away_between_the_question_and_y(agents_dir: Path, ran: Ran) -> None:
    record("alpha", "waiting", 5)
    record("loner", "waiting", 5)  # no definition: without its record it has no row at all
    record("reviewer", "waiting", 5, session_id="first-session")

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        select(app, "loner")
        await pilot.press("x")
        assert question(app) == "stop loner?"
        (status_dir() / "loner.json").unlink()
        await settle(pilot, lambda: all(r.agent != "loner" for r in app.rows), app, "loner gone")
        await pilot.press("y")
        said = "loner (session loner-se) left the list since you chose it (its status record is gone): nothing done"
        assert message(app) == said

        select(app, "reviewer")
        await pilot.press("r")
        assert question(app) == "restart reviewer?"
        record("reviewer", "waiting", 0, session_id="second-session")  # restarted meanwhile, in a new session
        await settle(pilot, lambda: any(r.session_id == "second-session" for r in app.rows), app, "the new session")
        await pilot.press("y")
        assert message(app) == (
            "reviewer (session first-se) changed since you chose it (now waiting, session second-s): "
            "nothing done; choose it again"
        )
        await pilot.pause()
        assert ran == []

        await pilot.press("x", "y")  # asked again, about the session it runs now
        await settle(pilot, lambda: ran, app, "the stop")
        assert ran == [["stop", "reviewer"]]

    drive(Deck(sources(agents_dir), watch=True), script)


class FakePanes:
    """A tmux server that lists the panes a test gives it (``list-panes -a``), in the fleet's format."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        out = "\n".join(self.lines) + "\n" if args[0] == "list-panes" else ""
        return subprocess.CompletedProcess(args, 0 if args[0] == "list-panes" else 1, out, "")

    def command(self, *args: str) -> list[str]:
        return ["true"]  # the preview's capture: an empty screen


@pytest.fixture
def fork_processes() -> Iterator[list[int]]:
    """Two processes standing for forks' launches (a record's pid must be alive and its own)."""
    procs = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"]) for _ in range(2)]
    try:
        yield [p.pid for p in procs]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def pane(pane_id: str, pid: int, agent: str, sid: str, fork: str = "", dead: bool = False, stopped: bool = False) -> str:
    """A row of the fleet's listing (agentlaunch.fleet.panes.FIELDS, in its order)."""
    return "\t".join(
        (
            agent,
            "team",
            pane_id,
            "1" if dead else "0",
            "143" if dead else "",
            str(pid),
            "1" if stopped else "",
            sid,
            fork,
            "",
            "@1",
            agent,
            agent,
        )
    )


def test_a_fork_is_marked_and_its_keys_reach_its_own_session(agents_dir: Path, ran: Ran, fork_processes: list[int]) -> None:
    """Marked as `agentlaunch status` marks it: its place among its agent's running sessions by start."""
    fork, outside = fork_processes
    record("reviewer", "waiting", 5, session_id="main-session", started="2026-12-06T10:00:00+00:00")
    record(
        "reviewer-fork",
        "waiting",
        5,
        agent="reviewer",
        session_id="fork-session",
        pid=fork,
        pid_start=process_start(fork),
        started="2026-12-06T10:05:00+00:00",
    )  # its pane says it is a fork
    record(
        "reviewer-out",
        "waiting",
        5,
        agent="reviewer",
        session_id="out-session",
        pid=outside,
        pid_start=process_start(outside),
        started="2026-12-06T10:09:00+00:00",
        fork_of="main-session",
    )
    src = sources(agents_dir)
    src.tmux = FakePanes(
        [
            pane("%3", os.getpid(), "reviewer", "main-session"),  # type: ignore[assignment]
            pane("%7", fork, "reviewer", "fork-session", fork="main-session"),
            pane("%9", 1, "reviewer", "old-fork", fork="main-session", dead=True, stopped=True),
        ]
    )
    rows = {r.label: r for r in gather(src)}
    assert set(rows) >= {"reviewer", "reviewer ⑂ 2", "reviewer ⑂ 3", "reviewer ⑂ 4"}, set(rows)
    assert rows["reviewer ⑂ 2"].session_id == "fork-session" and rows["reviewer ⑂ 3"].session_id == "out-session"
    assert rows["reviewer ⑂ 4"].state == "stopped"  # a fork that does not run: after the running ones

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        labels = [r[0] for r in table_rows(app)]
        assert labels.count("reviewer") == 1 and "reviewer ⑂ 2" in labels  # the fork: a row of its own, marked
        select(app, "reviewer ⑂ 2")
        await pilot.press("x")
        assert question(app) == "stop reviewer ⑂ 2?"
        await pilot.press("y")
        select(app, "reviewer ⑂ 4")
        await pilot.press("r", "y")
        select(app, "reviewer")
        await pilot.press("x", "y")  # the agent's own, beside its running fork: its session named too
        await settle(pilot, lambda: len(ran) == 3, app, "three commands")
        assert ran == [
            ["stop", "reviewer", "--session", "fork-session"],
            ["restart", "reviewer", "--session", "old-fork", "--agents-dir", str(agents_dir)],
            ["stop", "reviewer", "--session", "main-session"],
        ]

    drive(Deck(src, watch=False), script)


def test_a_definition_that_breaks_while_the_deck_is_open_keeps_the_tables_columns_and_says_why(agents_dir: Path) -> None:
    record("fine", "waiting", 5)
    yaml = agents_dir / "reviewer" / "agent.yaml"
    good = yaml.read_text()

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        await settle(pilot, lambda: app.sources.definitions.get("reviewer"), app, "the definitions loaded")
        yaml.write_text("provider: claude\n" + "".join(f"an_unknown_field_number_{i}: 1\n" for i in range(6)))
        app.read_slow()
        await settle(pilot, lambda: "⚠" in next(r[1] for r in table_rows(app) if r[0] == "reviewer"), app, "broken")
        assert next(r[1] for r in table_rows(app) if r[0] == "reviewer") == "not running ⚠ broken definition"
        assert message(app).startswith("reviewer: definition: ") and "an_unknown_field_number_0" in message(app)
        table = app.query_one(AgentList)
        drawn = [table.render_line(y).text for y in range(1, table.size.height)]
        fine = next(line for line in drawn if line.startswith("fine"))
        assert "$0.1234" in fine and "claude/claude-sonnet-4-5" in fine, fine  # the row keeps its columns
        assert table.widths[1] <= 40, table.widths

        yaml.write_text(good)
        app.read_slow()
        await settle(pilot, lambda: next(r[1] for r in table_rows(app) if r[0] == "reviewer") == "not running", app, "fixed")
        assert message(app) == "reviewer: its definition loads again"

    drive(Deck(sources(agents_dir), watch=False), script)


def test_the_confirmations_of_the_diff_page_name_the_agent(agents_dir: Path, tmp_path: Path, ran: Any) -> None:
    from agentlaunch.deck.screens import Page
    from tests.support.deck_pilot import BRANCH, repo_with_worktree

    repo, path = repo_with_worktree(tmp_path)

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        await settle(pilot, lambda: any(r[0] == "demo" and r[BRANCH] for r in table_rows(app)), app, "demo's worktree")
        select(app, "demo")
        await pilot.press("d")
        assert isinstance(app.screen, Page)
        await pilot.press("D")
        assert question(app) == f"remove demo's worktree {path}?"
        await pilot.press("n", "d", "M")
        assert question(app) == "merge demo's worktree (agentlaunch/demo) into main and remove it?"
        await pilot.press("n")

    drive(Deck(sources(agents_dir), watch=False), script)


def test_the_branch_column_follows_a_records_change_and_a_merge_at_once(
    agents_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not in up to 15 s (the round of the slow reads, made an hour here): a record's change and the deck's own merge
    read the worktrees again."""
    from agentlaunch.deck import watching
    from tests.support.deck_pilot import BRANCH, repo_with_worktree, run_git

    monkeypatch.setattr(watching, "SLOW_EVERY", 3600.0)
    repo, path = repo_with_worktree(tmp_path)
    record("demo", "thinking", 5, working_dir=str(path))

    def branch() -> str:
        return next((r[BRANCH] for r in table_rows(app_box[0]) if r[0] == "demo"), "?")

    app_box: list[Deck] = []

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        app_box.append(app)
        await settle(pilot, lambda: branch() == "agentlaunch/demo +0 −0", app, "demo's worktree")
        (path / "made.txt").write_text("the agent's work\n")
        record("demo", "waiting", 0, working_dir=str(path), done=True)  # its turn ended
        await settle(pilot, lambda: branch() == "agentlaunch/demo +0 −0 dirty 1", app, "the worktree dirty")

        run_git(path, "add", "made.txt")
        run_git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "the work")
        (status_dir() / "demo.json").unlink()  # it ended: merging is allowed
        await settle(pilot, lambda: branch() == "agentlaunch/demo +1 −0", app, "demo ended, its commit counted")
        select(app, "demo")
        await pilot.press("d", "M", "y")
        await settle(pilot, lambda: "worktree removed" in message(app), app, "the merge")
        await settle(pilot, lambda: branch() == "", app, "the branch column cleared")
        assert (repo / "made.txt").is_file()

    drive(Deck(sources(agents_dir), watch=True), script)


def test_a_row_chosen_before_its_session_was_known_is_its_agents_only_row_once_the_session_comes() -> None:
    """CI: `x` marks the pane stopped before the CLI ends; the row chosen then had no session, the dead pane's row
    that followed had one, and the confirmed `M` said "changed since you chose it"."""
    from agentlaunch.deck.follow import current
    from agentlaunch.deck.rows import Row

    chosen = Row("pane:%3", "builder", "stopped", pane="%3")
    later = Row("pane:%3", "builder", "stopped", pane="%3", session_id="bb01fb6b-0000")
    assert current([later], chosen) is later
    other = Row("rec:x", "builder", "waiting", session_id="cc02")
    assert current([later, other], chosen) is None  # two sessions of the agent: which one is not known
    assert current([Row("rec:y", "helper", "waiting", session_id="dd")], chosen) is None
