"""`agentlaunch deck` driven in process with Textual's own harness (``App.run_test``, pilot keys), its screen asserted.

The status records and the agents are made by each test (a worktree: test_deck_worktrees.py, the dialogs:
test_deck_new_agent.py); the tmux side (a private server
with agents on the offline fake provider) is in test_deck_tmux.py.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Static

from agentlaunch.deck.agent_list import AgentList
from agentlaunch.deck.app import Deck
from agentlaunch.deck.rows import COLUMNS
from agentlaunch.live.status import status_dir
from tests.support.cli_runs import run_cli
from tests.support.deck_pilot import drive, message, record, settle, sources, table_rows

LIMITS = COLUMNS.index("plan limits")


def state_style(app: Deck, index: int) -> str:
    return app.query_one(AgentList).style_at(index)


def test_asking_and_stalled_agents_come_first_in_red_with_how_long(agents_dir: Path) -> None:
    record("calm", "thinking", 10)
    record("idle", "waiting", 30)
    record("needy", "asking", 192)
    record("stuck", "stalled", 61)
    record("odd", "a-state-from-a-newer-launch", 5)

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        rows = table_rows(app)
        assert [r[0] for r in rows[:2]] == ["needy", "stuck"]
        assert rows[0][1].startswith("asking for 3m1") and rows[1][1].startswith("stalled for 1m0")
        assert "red" in state_style(app, 0) and "red" in state_style(app, 1)
        idle = next(r for r in rows if r[0] == "idle")
        assert idle[1].startswith("waiting for ") and idle[2] == "claude/claude-sonnet-4-5"
        assert idle[3] == "41.2% · 80,210 left" and idle[4] == "$0.1234" and idle[6].startswith("warm 3m")
        assert idle[LIMITS] == ""  # an API key: the CLI reports no plan limits
        odd = next(r for r in rows if r[0] == "odd")
        assert odd[1].startswith("a-state-from-a-newer-launch")  # a state the deck does not know is shown as it is
        defined = {r[0]: r[1] for r in rows if r[0] in ("demo", "planner", "reviewer")}
        assert defined == {"demo": "not running", "planner": "not running", "reviewer": "not running"}

        await pilot.press("tab")  # from needy (selected first) to the next that needs the person
        assert app.selected() is not None and app.selected().agent == "stuck"  # type: ignore[union-attr]
        await pilot.press("tab")
        assert app.selected().agent == "needy"  # type: ignore[union-attr]  # idle ended no turn: not a stop of Tab's

    drive(Deck(sources(agents_dir), watch=True), script)


def selected_agent(app: Deck) -> str:
    row = app.selected()
    return row.label if row is not None else ""


def test_tab_goes_to_who_blocks_on_you_then_to_a_turn_not_seen_and_never_to_an_idle_agent_seen(agents_dir: Path) -> None:
    record("needy", "asking", 30)
    record("held", "paused", 20)
    record("idle", "waiting", 40)  # at its prompt, no turn ended: nothing to see
    record("news-a", "waiting", 5, done=True)  # ended a turn the person has not looked at
    record("news-b", "waiting", 3, done=True)
    record("calm", "thinking", 2)

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        assert selected_agent(app) == "held"  # paused and asking: both red, by name
        walk = []
        for _ in range(6):
            await pilot.press("tab")
            walk.append(selected_agent(app))
        # who blocks first (in the list's order), then each turn not seen; once seen, only who blocks
        assert walk == ["needy", "news-a", "news-b", "held", "needy", "held"], walk
        before = next(r.since for r in app.rows if r.agent == "news-b")
        await pilot.pause(1.1)  # a record says its time to the second
        record("news-b", "waiting", 0, done=True)  # another turn ended, after the person looked
        await settle(
            pilot,
            lambda: any(r.agent == "news-b" and r.since and before and r.since > before for r in app.rows),
            app,
            "news-b's new turn",
        )
        await pilot.press("tab", "tab")
        assert selected_agent(app) == "news-b"
        await pilot.press("tab")
        assert selected_agent(app) == "held"
        (status_dir() / "needy.json").unlink()
        (status_dir() / "held.json").unlink()
        await settle(pilot, lambda: all(r.agent not in ("needy", "held") or not r.live for r in app.rows), app, "gone")
        await pilot.press("tab")
        assert message(app) == "no agent needs you", (selected_agent(app), table_rows(app))

    drive(Deck(sources(None), watch=True), script)


def test_a_record_that_is_not_json_and_a_broken_definition_each_say_so_on_their_row(agents_dir: Path) -> None:
    record("fine", "waiting", 3)
    (status_dir() / "junk.json").write_text("{not json")
    (status_dir() / "list.json").write_text("[1, 2]")
    (agents_dir / "broken").mkdir()
    (agents_dir / "broken" / "agent.yaml").write_text("provider: claude\nno_such_field: 1\n")

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        # the definitions are loaded in a worker thread, after the first frame
        await settle(pilot, lambda: "⚠" in {r[0]: r for r in table_rows(app)}["broken"][1], app, "the broken definition")
        rows = {r[0]: r for r in table_rows(app)}
        assert rows["junk"][1] == rows["list"][1] == "unreadable ⚠ status record"  # a few words on the row
        assert rows["broken"][1] == "not running ⚠ broken definition"
        assert rows["fine"][1].startswith("waiting")
        for name, said in [
            ("broken", "no_such_field"),
            ("junk", "status record junk.json is not JSON"),
            ("list", "status record list.json is not a JSON object"),
        ]:
            app.query_one(AgentList).move_cursor(row=[r[0] for r in table_rows(app)].index(name))
            await pilot.pause()
            assert said in message(app) and message(app).startswith(f"{name}: ")  # the whole problem, on the message line
        app.query_one(AgentList).move_cursor(row=[r[0] for r in table_rows(app)].index("broken"))
        await pilot.pause()
        assert "no_such_field" in str(app.query_one("#preview", Static).render())

    drive(Deck(sources(agents_dir)), script)


def test_a_new_record_shows_without_a_key_through_the_folder_watch(agents_dir: Path) -> None:
    status_dir().mkdir(parents=True, exist_ok=True)

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        before = app.refreshes
        record("late", "asking", 1)
        await settle(pilot, lambda: any(r[0] == "late" for r in table_rows(app)), app, "the new record")
        assert table_rows(app)[0][0] == "late" and app.refreshes > before  # read again at once (tmux is 10 s away)
        (status_dir() / "late.json").unlink()
        await settle(pilot, lambda: all(r[0] != "late" for r in table_rows(app)), app, "the removed record")

    drive(Deck(sources(agents_dir), watch=True), script)


def test_filter_help_and_quit_leave_every_agent_running(agents_dir: Path) -> None:
    path = record("needy", "asking", 5)
    record("calm", "thinking", 5)

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        await pilot.press("slash")
        await pilot.press(*"calm", "enter")
        assert [r[0] for r in table_rows(app)] == ["calm"]
        await pilot.press("slash", "ctrl+a", "ctrl+k", "enter")
        assert len(table_rows(app)) == 5
        await pilot.press("question_mark")
        page = app.screen.query_one("#page", Static)
        assert "Tab        next agent that blocks on you" in str(page.render())
        assert "outside tmux Enter attaches: prefix d (detach) comes back" in str(page.render())  # where this deck runs
        await pilot.press("escape")
        await pilot.press("s")  # send, then Escape: nothing is sent
        await pilot.press("escape")
        await pilot.press("q")

    drive(Deck(sources(agents_dir)), script)
    assert path.exists()  # quitting stops nothing (the record of a running launch is still there)


def test_a_terminal_of_40_by_10_still_shows_the_list_the_preview_and_the_keys(agents_dir: Path) -> None:
    record("needy", "asking", 5)
    (status_dir() / "junk.json").write_text("nope")

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        assert app.size.width == 40 and app.size.height == 10
        assert table_rows(app)[0][0] == "needy"
        await pilot.press("down", "down", "tab", "question_mark", "escape", "slash", "escape", "n", "enter", "escape")
        assert app.query_one(AgentList).size.height >= 2
        text = app.export_screenshot()
        assert "needy" in text

    drive(Deck(sources(agents_dir)), script, size=(40, 10))


def test_no_agents_dir_no_records_no_tmux_the_deck_says_how_to_start(tmp_path: Path) -> None:
    async def script(app: Deck, pilot: Pilot[None]) -> None:
        assert table_rows(app) == []
        assert "n starts one" in str(app.query_one("#preview", Static).render())
        await pilot.press("x")
        assert message(app) == "no agent selected"
        await pilot.press("enter", "d", "r")

    drive(Deck(sources(None)), script)


def test_the_deck_command_needs_a_terminal_and_run_never_imports_textual(agents_dir: Path) -> None:
    piped = run_cli("deck", "--agents-dir", str(agents_dir))
    assert piped.returncode == 2 and b"full-screen terminal application" in piped.stderr
    probe = (
        "import sys; from agentlaunch.cli import load_commands; load_commands(['run', 'demo', 'hi']); "
        "import agentlaunch.launch.build, agentlaunch.launch.loop, agentlaunch.live.view, agentlaunch.entry; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual'))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"


def test_a_tick_renders_again_only_the_rows_whose_text_changed(agents_dir: Path) -> None:
    for i in range(6):  # no countdown on these rows: nothing of theirs changes from one second to the next
        record(f"calm{i}", "thinking", state_since=None, cache=None)

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        table = app.query_one(AgentList)
        # the definitions are read on a worker: their rows get provider/model after the first frame (under load, after
        # the first pause too: 2 rows rendered again during the ticks, 1 run in 3 at 18 at once)
        await settle(pilot, lambda: all(row[2] for row in table_rows(app)), app, "every row's provider/model")
        await pilot.pause()
        before = table.rendered
        assert before >= 6
        for _ in range(3):
            app.tick()
            await pilot.pause()
        assert table.rendered == before  # nothing changed: nothing rendered again
        record("calm3", "thinking", state_since=None, cache=None, cost="$0.9999")
        app.reload()
        await pilot.pause()
        assert next(r for r in table_rows(app) if r[0] == "calm3")[4] == "$0.9999"
        assert table.rendered == before + 1  # that row only
        await pilot.press("down")
        assert table.rendered == before + 3  # the row the cursor left and the one it reached

    drive(Deck(sources(agents_dir), watch=False), script)


def test_the_claude_plan_limits_show_on_the_row_as_the_status_table_says_them(agents_dir: Path) -> None:
    from agentlaunch.usage.plan_limits import limits_text

    resets = datetime.now(UTC) + timedelta(hours=3)
    limits = {
        "five_hour": {"used_percent": 42.0, "resets_at": resets.isoformat(timespec="seconds")},
        "seven_day": {"used_percent": 10, "resets_at": None},
    }
    record("subscriber", "waiting", 3, rate_limits=limits)
    record("odd", "waiting", 3, rate_limits={"five_hour": {"used_percent": "lots"}})  # not a window: nothing shown
    want = limits_text({"rate_limits": limits}, datetime.now(UTC))
    assert want == f"5h 42% · resets {resets.astimezone():%H:%M} · 7d 10%"

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        rows = {r[0]: r for r in table_rows(app)}
        assert rows["subscriber"][LIMITS] == want and rows["odd"][LIMITS] == ""
        table = app.query_one(AgentList)
        drawn = [table.render_line(y).text for y in range(table.size.height)]
        assert any(line.startswith("subscriber") and want in line for line in drawn), drawn  # drawn, not only held

    drive(Deck(sources(agents_dir)), script, size=(200, 30))


def test_the_fast_start_reads_the_deck_options_and_leaves_anything_else_to_the_full_cli(monkeypatch: Any) -> None:
    from agentlaunch.deck.start import fast_options

    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setenv("AGENTLAUNCH_TMUX_SOCKET", "from-env")
    assert fast_options([]) == ("from-env", None)
    assert fast_options(["-L", "work", "--agents-dir", "a"]) == ("work", Path("a"))
    assert fast_options(["--socket=w2", "--agents-dir=b"]) == ("w2", Path("b"))
    for other in (["--help"], ["-L"], ["-L", "--help"], ["--agents-dir="], ["stray"], ["-L=x"]):
        assert fast_options(other) is None, other  # typer answers these (help, usage errors: exit 2)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert fast_options([]) is None  # not a terminal: the full CLI's exit 2


def test_a_pane_that_shows_nothing_new_is_captured_less_often_and_a_change_brings_it_back(agents_dir: Path) -> None:
    from agentlaunch.deck.board import QUIET_PANE_EVERY

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        app.preview_title = "agent · tmux s %1"
        app._set_preview("agent · tmux s %1", "screen one")
        assert app.capture_every == 1
        for wait in range(2, QUIET_PANE_EVERY + 2):
            app._set_preview("agent · tmux s %1", "screen one")
            assert app.capture_every == min(wait, QUIET_PANE_EVERY)
        app._set_preview("agent · tmux s %1", "screen two")
        assert app.capture_every == 1 and "screen two" in str(app.query_one("#preview", Static).render())
        app._set_preview("other · tmux s %2", "a late capture of a row no longer selected")
        assert "screen two" in str(app.query_one("#preview", Static).render())

    drive(Deck(sources(agents_dir), watch=False), script)


def test_the_docs_screenshot_is_written_only_when_the_screen_differs_in_substance(tmp_path: Path) -> None:
    from textual.app import App, ComposeResult

    from tests.support.screenshot import save_if_changed

    class Shot(App[None]):
        def compose(self) -> ComposeResult:
            yield Static("demo waiting for 5s · session 0b6c6f2e-1d2a-4c3b-9e8f-0a1b2c3d4e5f · warm until 02:56:18", id="s")

    shot = tmp_path / "shot.svg"
    written: list[bool] = []

    async def main() -> None:
        async with Shot().run_test(size=(100, 5)) as pilot:
            static = pilot.app.query_one("#s", Static)
            written.append(save_if_changed(pilot.app, shot))
            first = shot.read_text()
            static.update("demo waiting for 1m12s · session 9d0c6f2e-1d2a-4c3b-9e8f-0a1b2c3d4e5f · warm until 03:01:00")
            await pilot.pause()
            written.append(save_if_changed(pilot.app, shot))  # only what varies from run to run changed
            assert shot.read_text() == first
            static.update("demo asking for 5s · session 0b6c6f2e-1d2a-4c3b-9e8f-0a1b2c3d4e5f · warm until 02:56:18")
            await pilot.pause()
            written.append(save_if_changed(pilot.app, shot))  # a state changed: that is substance
            static.styles.color = "red"
            await pilot.pause()
            written.append(save_if_changed(pilot.app, shot))  # so is a colour

    asyncio.run(main())
    assert written == [True, False, True, True]
    assert shot.read_text().startswith("<svg") and "asking" in shot.read_text()


def test_the_first_read_begun_before_the_deck_is_shown_and_a_record_written_meanwhile_is_read_when_the_watch_is_up() -> None:
    """`deck` reads the agents in a thread while Textual is imported (deck/start.py): the deck shows that read, and
    reads the folder again once its watch is up only when a record changed since (the folder's mtime)."""
    from concurrent.futures import Future

    from agentlaunch.deck.rows import Row, folder_mtime
    from agentlaunch.deck.start import read_into

    record("early", "waiting", 5)
    src = sources(None)
    shown = Future[tuple[float, list[Row]]]()
    shown.set_result((folder_mtime(src.status_dir), [Row("mark", "from-the-first-read", "waiting")]))

    async def unchanged(app: Deck, pilot: Pilot[None]) -> None:
        await settle(pilot, lambda: app.dir_watch is not None, app, "the watch up")
        assert [r[0] for r in table_rows(app)] == ["from-the-first-read"] and app.refreshes == 1  # nothing read again

    drive(Deck(src, first=shown), unchanged)

    read: Future[tuple[float, list[Row]]] = Future()
    read_into(read, src)
    assert read.result()[0] == folder_mtime(src.status_dir) and [r.agent for r in read.result()[1]] == ["early"]
    record("late", "asking", 1)  # after the first read, before the watch

    async def changed(app: Deck, pilot: Pilot[None]) -> None:
        await settle(pilot, lambda: app.dir_watch is not None, app, "the watch up")
        assert [r[0] for r in table_rows(app)] == ["late", "early"] and app.refreshes == 2

    drive(Deck(sources(None), first=read), changed)
    broken: Future[tuple[float, list[Row]]] = Future()
    broken.set_exception(RuntimeError("a bug in the first read"))

    async def failed(app: Deck, pilot: Pilot[None]) -> None:
        assert message(app) == "could not read the agents: RuntimeError: a bug in the first read" and app.is_running
        await settle(pilot, lambda: "late" in [r[0] for r in table_rows(app)], app, "the list read again")

    drive(Deck(src, first=broken), failed)


def test_a_state_change_reads_the_records_again_but_lists_tmuxs_panes_only_when_a_record_came_or_went() -> None:
    """Twenty agents at work rewrite their records many times a second; each burst is one read of the folder, and
    tmux's panes (a `tmux list-panes -a`, a process) are listed again only for a new or removed record, or on the
    deck's 10 s round."""
    from agentlaunch.deck.rows import gather

    listed: list[tuple[str, ...]] = []

    class CountingTmux:
        def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
            listed.append(args)
            return subprocess.CompletedProcess(args, 0, "", "")

    src = sources(None)
    src.tmux = CountingTmux()  # type: ignore[assignment]
    record("busy", "thinking")
    assert [r.state for r in gather(src)] == ["thinking"] and len(listed) == 1
    record("busy", "tool")  # the same record, its state changed
    assert [r.state for r in gather(src, panes_again=False)] == ["tool"] and len(listed) == 1
    record("other", "waiting")  # a record came
    assert len(gather(src, panes_again=False)) == 2 and len(listed) == 2
    (status_dir() / "other.json").unlink()  # and went
    assert len(gather(src, panes_again=False)) == 1 and len(listed) == 3
    gather(src)  # the round every 10 s, a key's command, the worktrees' read
    assert len(listed) == 4 and all(args[0] == "list-panes" for args in listed)


def test_a_paused_row_needs_the_person_whatever_its_reason_says() -> None:
    from agentlaunch.deck.board import style_of
    from agentlaunch.deck.rows import Row

    rec = {"state": "paused"}
    for state in ("paused", "paused: budget", "paused: the daily limit of 5 USD"):
        row = Row("k", "a", state, record=rec)
        assert (row.urgency, style_of(row)) == (0, "bold red"), state
    assert (Row("k", "a", "waiting", record=rec).urgency, Row("k", "a", "pausedish", record=rec).urgency) == (2, 3)
