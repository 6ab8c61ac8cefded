"""The deck where it runs in tmux: the key that comes back after Enter said for that place, `n` offering the deck's own
session, and an agent started from `n` without a definition (the offline fake provider, a private tmux server)
that stop and restart reach like any other."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from agentlaunch import paths
from agentlaunch.deck.actions import Place, deck_place, place_of, way_back, ways_back
from agentlaunch.deck.app import Deck
from agentlaunch.deck.rows import Sources
from agentlaunch.definitions.adhoc import adhoc_dir
from agentlaunch.live.status import status_dir
from agentlaunch.live.tmux import Tmux
from tests.support.deck_pilot import drive, message, table_rows
from tests.support.required import need
from tests.test_deck_follow import question, select
from tests.test_tmux import panes, tmux

need("tmux")


def pane_in(socket: str, target: str) -> str:
    return tmux(socket, "display-message", "-p", "-t", target, "#{pane_id}").strip()


def inside(socket: str, pane: str) -> dict[str, str]:
    """The environment of a process in ``pane`` of the private server (what tmux gives its panes)."""
    path = tmux(socket, "display-message", "-p", "#{socket_path}").strip()
    return {"TMUX": f"{path},1,0", "TMUX_PANE": pane}


def test_the_way_back_after_enter_is_the_key_that_works_where_the_deck_runs(socket: str) -> None:
    tmux(socket, "new-session", "-d", "-s", "team", "-n", "deck", "sleep", "600")
    tmux(socket, "new-window", "-d", "-t", "team", "-n", "worker", "sleep", "600")
    tmux(socket, "split-window", "-d", "-t", "team:deck", "sleep", "600")  # an agent tiled beside the deck
    tmux(socket, "new-session", "-d", "-s", "elsewhere", "sleep", "600")
    server = Tmux(socket)
    deck = pane_in(socket, "team:deck.0")
    here = deck_place(server, inside(socket, deck))
    assert here is not None and here.session == "team"
    assert way_back(here, place_of(server, pane_in(socket, "team:worker"))) == "prefix l (last window)"
    assert way_back(here, place_of(server, pane_in(socket, "team:deck.1"))) == "prefix ; (last pane)"
    assert way_back(here, place_of(server, pane_in(socket, "elsewhere:"))) == "prefix L (last session)"
    assert "prefix l (last window)" in ways_back(here, inside=True, team=True)
    assert "prefix L (last session) comes back" in ways_back(here, inside=True, team=False)
    assert deck_place(server, {"TMUX": "/tmp/another-server,1,0", "TMUX_PANE": deck}) is None  # another server's pane
    assert deck_place(server, {}) is None
    assert ways_back(None, inside=False, team=False) == "outside tmux Enter attaches: prefix d (detach) comes back"
    assert way_back(Place("team", "@1"), None) == "prefix L (last session)"


async def until(pilot: Pilot[None], condition: Callable[[], object], what: str, timeout: float = 60.0) -> None:
    for _ in range(int(timeout / 0.1)):
        if condition():
            return
        await pilot.pause(0.1)
    app = pilot.app
    assert isinstance(app, Deck)
    raise AssertionError(f"timed out waiting for {what}; message: {message(app)!r}; rows: {table_rows(app)}")


def state_of(app: Deck, label: str) -> str:
    return next((r[1] for r in table_rows(app) if r[0] == label), "")


def test_n_offers_the_decks_session_and_starts_an_agent_without_a_definition_that_stop_and_r_reach(
    socket: str, agents_dir: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentlaunch.deck.picker import AdHocForm, StartForm

    tmux(socket, "new-session", "-d", "-s", "team", "-n", "deck", "sleep", "600")  # the deck: a window of the team's session
    for key, value in inside(socket, pane_in(socket, "team:deck")).items():
        monkeypatch.setenv(key, value)
    sources = Sources(status_dir(), paths.state_dir(), agents_dir, paths.store_path(), Tmux(socket))

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        await pilot.press("n", *"demo", "enter")
        assert isinstance(app.screen, StartForm) and app.screen.query_one("#session", Input).value == "team"
        await pilot.press("escape")

        await pilot.press("n", *"scratch", "down", "enter")  # no definition matches: the last choice, one without
        form = app.screen
        assert isinstance(form, AdHocForm) and form.query_one("#name", Input).value == "scratch"
        form.query_one("#provider", Input).value = "nosuch"
        await pilot.press("enter")
        assert "provider 'nosuch': one of claude, codex, gemini, fake" in str(form.query_one("#problem").render())
        form.query_one("#provider", Input).value = "fake"
        form.query_one("#folder", Input).value = str(workdir / "missing")
        await pilot.press("enter")
        assert "is not a folder" in str(form.query_one("#problem").render())
        form.query_one("#folder", Input).value = str(workdir)
        form.query_one("#name", Input).value = "demo"
        await pilot.press("enter")
        assert "demo is defined already" in str(form.query_one("#problem").render())
        form.query_one("#name", Input).value = "scratch"
        await pilot.press("enter")
        assert isinstance(app.screen, StartForm) and app.screen.query_one("#session", Input).value == "team"
        await pilot.press(*"hello scratch", "enter")
        await until(pilot, lambda: state_of(app, "scratch").startswith("waiting"), "scratch started")
        await until(pilot, lambda: not message(app).startswith("starting"), "tmux up, then send, done")
        assert "failed" not in message(app), message(app)  # its first prompt went too (send needs no definition)
        assert "scratch" in panes(socket, "team")  # in the deck's session
        yaml = adhoc_dir(paths.state_dir()) / "scratch" / "agent.yaml"
        assert "provider: fake" in yaml.read_text() and str(workdir) in yaml.read_text()
        assert not (agents_dir / "scratch").exists()  # saved as a definition only when asked

        select(app, "scratch")
        await pilot.press("x")
        assert question(app) == "stop scratch?"
        await pilot.press("y")
        await until(pilot, lambda: state_of(app, "scratch") == "stopped", "scratch stopped")
        await pilot.press("r")
        assert question(app) == "restart scratch?"
        await pilot.press("y")
        await until(pilot, lambda: state_of(app, "scratch").startswith("waiting"), "scratch back")
        await until(pilot, lambda: not message(app).startswith("restarting"), "the restart done")
        assert "failed" not in message(app), message(app)

        await pilot.press("n", *"saved", "down", "enter")  # another, saved as a definition this time
        form = app.screen
        assert isinstance(form, AdHocForm)
        form.query_one("#provider", Input).value = "fake"
        form.query_one("#folder", Input).value = str(workdir)
        await pilot.press("ctrl+t", "enter", "escape")  # ticked: saved; Escape at the next step starts nothing
        assert (agents_dir / "saved" / "agent.yaml").is_file() and not (adhoc_dir(paths.state_dir()) / "saved").exists()

    drive(Deck(sources, socket=socket), script, size=(150, 34))
