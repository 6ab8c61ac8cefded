"""The deck over a private tmux server with agents on the offline fake provider, driven with Textual's harness.

The preview shows the selected pane; `s` sends through `agentlaunch send` and the answer shows in the
preview; `x` stops and `r` restarts in the same pane; the tmux server dying under the deck leaves it
running and saying so. The run also takes the deck's screenshot; with ``AGENTLAUNCH_DOCS_SHOTS=1`` it is saved for the
docs (docs/deck.svg, when its substance changed), else in the test's own folder: a run never changes a tracked file.
"""

from __future__ import annotations

import io
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Static

from agentlaunch import paths
from agentlaunch.deck.app import Deck
from agentlaunch.deck.rows import Sources
from agentlaunch.deck.screens import Confirm, Page
from agentlaunch.live.status import status_dir
from agentlaunch.live.tmux import Tmux
from tests.support.deck_pilot import BRANCH, drive, message, record, table_rows
from tests.support.required import need
from tests.support.screenshot import save_if_changed
from tests.support.tmux_panes import die_with
from tests.test_tmux import add_agent_copies, panes, status_records, tmux, up

need("tmux")

DOCS_SHOT = Path(__file__).resolve().parent.parent / "docs" / "deck.svg"


def preview(app: Deck) -> str:
    return str(app.query_one("#preview", Static).render())


def answered(app: Deck, prompt: str) -> bool:
    """The preview shows ``prompt`` sent, then the fake provider's answer below it (the pane is 220 columns wide: its
    long answer line is cut at the preview's width, so its start is what shows)."""
    lines = preview(app).split("\n")
    sent = next((i for i, line in enumerate(lines) if f"› {prompt}" in line), None)
    return sent is not None and any(line.startswith("Fake provider here, turn") for line in lines[sent + 1 :])


async def until(pilot: Pilot[None], condition: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    """Let the deck run until ``condition`` holds (its own timers and watch do the reading)."""
    for _ in range(int(timeout / 0.1)):
        if condition():
            return
        await pilot.pause(0.1)
    app = pilot.app
    assert isinstance(app, Deck)
    said = f"message: {message(app)!r}; rows: {table_rows(app)}; preview: {preview(app)}"
    raise AssertionError(f"timed out waiting for {what}; {said}")


def page_text(app: Deck) -> str:
    """The open page (help, diff, usage) as text."""
    page = app.screen
    assert isinstance(page, Page)
    console = Console(record=True, width=150, file=io.StringIO())
    console.print(page.body)
    return console.export_text()


def row_of(app: Deck, agent: str) -> list[str]:
    return next((r for r in table_rows(app) if r[0] == agent), [])


def waiting(agent: str) -> bool:
    return any(r["agent"] == agent and r.get("state") == "waiting" for r in status_records())


def test_preview_send_stop_restart_and_a_dying_tmux_server(socket: str, agents_dir: Path, workdir: Path) -> None:
    shot = DOCS_SHOT if os.environ.get("AGENTLAUNCH_DOCS_SHOTS") == "1" else workdir.parent / "deck.svg"
    add_agent_copies(agents_dir, ["helper"])
    assert up(socket, agents_dir, workdir, "demo", "helper").returncode == 0
    sources = Sources(status_dir(), paths.state_dir(), agents_dir, paths.store_path(), Tmux(socket))

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        await until(
            pilot, lambda: row_of(app, "demo")[1:2] == ["waiting"] or row_of(app, "demo")[1].startswith("waiting"), "demo waiting"
        )
        await until(pilot, lambda: row_of(app, "helper")[1].startswith("waiting"), "helper waiting")
        names = [r[0] for r in table_rows(app)]
        app.query_one("#agents").move_cursor(row=names.index("demo"))  # type: ignore[attr-defined]
        await until(pilot, lambda: "›" in preview(app), "demo's prompt in the preview")
        assert panes(socket)["demo"]["pane"] in str(app.query_one("#preview").border_title)

        await pilot.press("s")
        await pilot.press(*"hello deck", "enter")
        await until(pilot, lambda: answered(app, "hello deck"), "the answer in the preview")
        await until(
            pilot,
            lambda: preview(app).rstrip().endswith("›") and row_of(app, "demo")[1].startswith("waiting"),
            "the prompt back after the answer",
        )  # the same screen each run: no half-finished turn
        save_if_changed(app, shot)

        await pilot.press("x", "y")
        await until(pilot, lambda: row_of(app, "demo")[1] == "stopped", "demo stopped", 40)
        assert row_of(app, "helper")[1].startswith("waiting")  # the rest untouched
        assert "stopped (agentlaunch stop)" in panes(socket)["demo"]["title"]

        assert app.selected() is not None and app.selected().agent == "demo"  # type: ignore[union-attr]  # it followed demo
        await pilot.press("r")
        assert isinstance(app.screen, Confirm) and app.screen.question == "restart demo?"
        await pilot.press("y")
        await until(pilot, lambda: row_of(app, "demo")[1].startswith("waiting"), "demo back", 60)
        # `restart` itself goes on a moment after its agent waits (it checks that it stays up): killed meanwhile, its
        # failure would reach the message line after the Enter below (CI, once).
        await until(pilot, lambda: "restarting demo" not in message(app), "the restart command done", 60)
        assert panes(socket)["demo"]["dead"] == "0"

        tmux(socket, "kill-server")
        gone = ("not running", "stopped")
        await until(pilot, lambda: all(row_of(app, a)[1] in gone for a in ("demo", "helper")), "both gone with their server", 40)
        await pilot.press("down", "up")
        selected = app.selected()
        assert selected is not None and selected.pane is None
        await pilot.press("enter")
        assert message(app) == f"{selected.agent} has no tmux pane to attach to"
        assert app.is_running

    drive(Deck(sources, socket=socket), script, size=(150, 34))
    assert shot.read_text().startswith("<svg")


def test_a_dead_pane_shows_with_its_exit_and_a_budget_stop_is_named(socket: str, agents_dir: Path, workdir: Path) -> None:
    tmux(socket, "new-session", "-d", "-s", "agentlaunch", "sleep", "600", ";", "set-option", "-g", "remain-on-exit", "on")
    tmux(socket, "new-window", "-t", "agentlaunch", "sh", "-c", "read x; exit 6")
    tmux(socket, "new-window", "-t", "agentlaunch", "sh", "-c", "read x; exit 3")
    listed = tmux(socket, "list-panes", "-s", "-t", "agentlaunch", "-F", "#{pane_id}").split()
    for pane, agent, code in zip(listed[-2:], ("spender", "crasher"), (6, 3), strict=True):
        tmux(socket, "set-option", "-p", "-t", pane, "@agentlaunch_agent", agent)
        die_with(lambda *args: tmux(socket, *args), pane, code)  # tmux 3.3a may never record a fast exit's status
    record("needy", "asking", 3)
    sources = Sources(status_dir(), paths.state_dir(), agents_dir, paths.store_path(), Tmux(socket))

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        await until(pilot, lambda: row_of(app, "crasher")[1:2] == ["dead (exit 3)"], "the dead pane", 15)
        assert row_of(app, "spender")[1] == "budget stopped"
        assert table_rows(app)[0][0] == "needy"

    drive(Deck(sources, socket=socket), script)


def run_git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True, capture_output=True)


def test_new_with_a_worktree_and_a_first_prompt_then_its_diff_a_refused_remove_usage_and_fork(
    socket: str, agents_dir: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "main")
    run_git(repo, "commit", "-q", "--allow-empty", "-m", "first")
    add_agent_copies(agents_dir, ["builder"])
    yaml = agents_dir / "builder" / "agent.yaml"
    yaml.write_text(yaml.read_text().replace('working_dir: "@scratch"', f"working_dir: {repo}"))
    sources = Sources(status_dir(), paths.state_dir(), agents_dir, paths.store_path(), Tmux(socket))

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        await pilot.press("n")
        await pilot.press(*"builder", "enter")  # the definition, filtered
        await pilot.press(*"build the thing", "down", "space", "enter")  # its first prompt, in a worktree
        await until(
            pilot, lambda: row_of(app, "builder")[1:2] and row_of(app, "builder")[1].startswith("waiting"), "builder started", 60
        )
        app.query_one("#agents").move_cursor(row=[r[0] for r in table_rows(app)].index("builder"))  # type: ignore[attr-defined]
        await until(pilot, lambda: answered(app, "build the thing"), "the first prompt's answer", 60)
        tree = Path(str(next(r for r in status_records() if r["agent"] == "builder")["working_dir"]))
        assert tree != repo and (tree / ".git").is_file()
        (tree / "made.txt").write_text("the agent's change\n")  # what the agent would have written
        app.read_slow()
        await until(pilot, lambda: "dirty 1" in row_of(app, "builder")[BRANCH], "the worktree dirty on its row")
        assert row_of(app, "builder")[BRANCH].startswith("agentlaunch/builder +0 −0")

        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, Page) and "made.txt" in page_text(app), "the diff page")
        await pilot.press("D")
        await pilot.press("y")
        await until(pilot, lambda: "failed (exit 4)" in message(app), "the remove refused")
        assert "is running there" in message(app) and tree.is_dir()

        await pilot.press("u")
        await until(pilot, lambda: isinstance(app.screen, Page) and "per agent, 7 days" in page_text(app), "usage")
        assert "builder" in page_text(app) and "unpriced" in page_text(app)
        await pilot.press("q")
        await pilot.press("f")
        await until(pilot, lambda: not message(app).startswith("forking"), "fork's answer")
        assert "cannot be forked" in message(app)  # `agentlaunch fork`'s own refusal: the fake provider has no fork

    drive(Deck(sources, socket=socket), script, size=(150, 34))
