"""The deck's preview shows the bottom of the pane (where the CLIs draw their dialog, input box and status line),
and an asking agent's question, whatever the sizes; the question its record carries is on the message line.

The rule is tested on plain rows (:func:`agentlaunch.deck.preview.window`); the deck with Textual's harness over a
private tmux server whose pane draws a CLI's dialog at the bottom of 50 rows: a terminal of 40x12, a pane resized
while previewed, a deck resized, a pane that closes while previewed, a question whose text holds escapes and markup.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from agentlaunch import paths
from agentlaunch.deck.app import Deck
from agentlaunch.deck.preview import Preview, fitted, parse, window
from agentlaunch.deck.rows import Sources
from agentlaunch.live.status import process_start, status_dir
from agentlaunch.live.tmux import AGENT_OPTION, Tmux
from tests.support.deck_pilot import drive, message, record, sources
from tests.support.required import needs
from tests.test_deck_tmux import until
from tests.test_tmux import tmux

DIALOG = [
    "╭──────────────────────────────────────────────╮",
    "│ Bash command                                 │",
    "│   rm -rf build                               │",
    "│ Do you want to proceed?                      │",
    "│ ❯ 1. Yes                                     │",
    "│   2. Yes, and don't ask again                │",
    "│   3. No, and tell Claude what to do (esc)    │",
    "╰──────────────────────────────────────────────╯",
    "  ? for shortcuts                   ctx 12%",
]


def pane_rows(height: int, top: list[str], bottom: list[str] | None = None) -> list[str]:
    """A pane of ``height`` rows: ``top`` from its first row, ``bottom`` ending at its last (blank rows between)."""
    bottom = bottom or []
    return top + [""] * (height - len(top) - len(bottom)) + bottom


# -- the rule ----------------------------------------------------------------------------------


def test_a_pane_taller_than_the_preview_is_shown_from_its_bottom_not_its_top() -> None:
    rows = pane_rows(45, [f"history {i}" for i in range(36)] + DIALOG)  # the dialog ends on row 44
    start, end = window(rows, cursor_y=None, rows=27)
    assert (start, end) == (45 - 27, 45)
    assert "Do you want to proceed?" in "".join(rows[start:end])


def test_an_inline_cli_with_blank_rows_under_its_box_ends_at_its_last_text_or_its_cursor() -> None:
    rows = pane_rows(60, [f"line {i}" for i in range(30)] + DIALOG)  # Claude Code draws inline: 21 blank rows below
    assert window(rows, cursor_y=None, rows=10) == (29, 39)  # the last row with text is the bottom
    assert window(rows, cursor_y=44, rows=10) == (35, 45)  # a cursor lower than the text: it is the bottom
    assert window(rows, cursor_y=3, rows=10) == (29, 39)  # a cursor higher: the text below it still shows


def test_everything_that_fits_is_shown_from_the_first_row() -> None:
    rows = pane_rows(60, ["a", "b", "c"])
    assert window(rows, cursor_y=2, rows=27) == (0, 3)
    assert window([""] * 24, cursor_y=None, rows=5) == (0, 0)  # a blank pane: nothing to show
    assert window(["x"] * 5, cursor_y=None, rows=0) == (4, 5)  # no room at all: the bottom row


def test_an_asking_agents_question_is_kept_in_a_tiny_preview_with_its_first_choices() -> None:
    rows = pane_rows(50, [f"history {i}" for i in range(41)] + DIALOG)
    question = rows.index("│ Do you want to proceed?                      │")
    assert window(rows, None, rows=4, asking=False) == (46, 50)  # the bottom: the choices, not the question
    assert window(rows, None, rows=4, asking=True) == (question, question + 4)  # the question and what follows
    assert window(rows, None, rows=20, asking=True) == (30, 50)  # room for it all: the bottom as always
    # A row ending in "?" far above the bottom is not the dialog's question.
    far = pane_rows(60, ["is this it?"] + [f"line {i}" for i in range(40)] + ["the end"])
    assert window(far, None, rows=4, asking=True) == (38, 42)


def test_rows_are_cut_at_the_preview_width_with_an_ellipsis_and_colours_carry_across_rows() -> None:
    shot = parse("\x1b[31mred start\nstill red\x1b[0m\n" + "x" * 200 + "\n\n0 5 200\n")
    assert (shot.cursor_y, shot.height, shot.width) == (0, 5, 200)
    assert shot.plain[:3] == ["red start", "still red", "x" * 200]
    shown = fitted(shot, rows=10, cols=40)
    assert shown.plain.split("\n") == ["red start", "still red", "x" * 39 + "…"]
    second = shown.split("\n")[1]
    colours = [span.style.color.number for span in second.spans if not isinstance(span.style, str) and span.style.color]
    assert colours == [1]  # red: tmux did not repeat the colour on the second row


# -- the deck ------------------------------------------------------------------------------------

needs_tmux = needs("tmux")


def preview_text(app: Deck) -> str:
    return str(app.query_one("#preview", Static).render())


def dialog_pane(socket: str, agent: str, width: int, height: int, question: str = "Do you want to proceed?") -> tuple[str, int]:
    """A tmux pane of ``width`` by ``height`` that draws history, then a dialog at its bottom, and waits; it carries the
    agent's pane option, as a `tmux up` pane does. Its pane id and process id."""
    lines = [f"history {i}" for i in range(height - len(DIALOG) - 1)] + [
        d.replace("Do you want to proceed?", question) for d in DIALOG
    ]
    script = f"import sys, time; sys.stdout.write({chr(10).join(lines)!r}); sys.stdout.flush(); time.sleep(600)"
    tmux(
        socket,
        "new-session",
        "-d",
        "-s",
        "agents",
        "-x",
        str(width),
        "-y",
        str(height),
        f"{shlex.quote(sys.executable)} -c {shlex.quote(script)}",
    )
    pane, pid = tmux(socket, "display-message", "-p", "-t", "=agents:", "#{pane_id} #{pane_pid}").split()
    tmux(socket, "set-option", "-p", "-t", pane, AGENT_OPTION, agent)
    return pane, int(pid)


def live_record(agent: str, pid: int, state: str, **extra: object) -> None:
    """The status record of a launch whose process is the pane's (the deck finds its pane by that pid)."""
    record(agent, state, 5, pid=pid, pid_start=process_start(pid), **extra)


def tmux_sources(socket: str, agents_dir: Path | None = None) -> Sources:
    return Sources(status_dir(), paths.state_dir(), agents_dir, paths.store_path(), Tmux(socket))


@needs_tmux
def test_a_terminal_of_40_by_12_shows_the_question_of_a_50_row_pane_and_the_record_s_question_on_the_message_line(
    socket: str,
) -> None:
    pane, pid = dialog_pane(socket, "needy", 120, 50)
    live_record("needy", pid, "asking", state_reason="Bash: rm -rf build")

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        await until(pilot, lambda: "Do you want to proceed?" in preview_text(app), "the question in the preview")
        assert app.query_one(Preview).content_size.height < 8  # a tiny preview: the question kept all the same
        assert "history 0" not in preview_text(app)
        assert message(app) == "⚠ needy is asking: Bash: rm -rf build"
        assert app.query_one(Preview).border_title == f"needy · tmux agents {pane}"

    drive(Deck(tmux_sources(socket), watch=False), script, size=(40, 12))


@needs_tmux
def test_a_pane_resized_while_previewed_and_a_deck_resized_show_the_bottom_again(socket: str) -> None:
    pane, pid = dialog_pane(socket, "worker", 150, 50)
    live_record("worker", pid, "thinking")

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        await until(pilot, lambda: "? for shortcuts" in preview_text(app), "the pane's bottom row")
        assert "history 0" not in preview_text(app)  # a 50-row pane in a smaller preview: its top is cut
        tmux(socket, "resize-window", "-t", "=agents:", "-x", "60", "-y", "20")  # tmux keeps the bottom rows
        await until(pilot, lambda: (s := app.query_one(Preview).shot) is not None and s.height == 20, "the new size")
        assert "? for shortcuts" in preview_text(app)
        await pilot.resize_terminal(50, 14)  # the deck itself smaller: fitted again at once
        await pilot.pause()
        height = app.query_one(Preview).content_size.height
        assert preview_text(app).split("\n")[-1].startswith("  ? for shortcuts")
        assert len(preview_text(app).split("\n")) == height
        assert all(len(line) <= app.query_one(Preview).content_size.width for line in preview_text(app).split("\n"))

    drive(Deck(tmux_sources(socket), watch=False), script, size=(140, 40))


@needs_tmux
def test_a_pane_that_closes_while_previewed_is_said_and_the_list_follows_at_once(
    socket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agentlaunch.deck.watching

    pane, pid = dialog_pane(socket, "brief", 100, 40)
    live_record("brief", pid, "waiting")
    monkeypatch.setattr(agentlaunch.deck.watching, "PANES_EVERY", 3600.0)  # tmux's panes are not listed again by the clock

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        await until(pilot, lambda: "? for shortcuts" in preview_text(app), "the pane previewed")
        tmux(socket, "new-session", "-d", "-s", "keep")  # the server stays up when the agent's pane goes
        tmux(socket, "kill-pane", "-t", pane)
        # Before: "tmux capture-pane: can't find pane" until the next listing of the panes (10 s), the row on a pane
        # gone. Now the failed capture reads the list again: the row loses its pane and says why (its launch is gone).
        await until(pilot, lambda: (row := app.selected()) is not None and row.pane is None, "the row without its pane")
        await until(pilot, lambda: "stale record" in preview_text(app), "why, in the preview")
        assert "capture-pane" not in preview_text(app)
        assert app.is_running

    drive(Deck(tmux_sources(socket), watch=False), script, size=(120, 30))


def test_a_question_holding_escapes_and_markup_is_shown_inert_and_cut_to_the_message_line(agents_dir: Path) -> None:
    hostile = "Bash: printf '\x1b]0;owned\x07\x1b[2J' [bold red]not bold[/] \u202eevil " + "x" * 300
    record("needy", "asking", 5, state_reason=hostile)

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        await pilot.pause()
        widget = app.query_one("#message", Static)
        said = str(widget.render())
        assert "\x1b" not in said and "\u202e" not in said  # written as visible escapes
        assert said.startswith("⚠ needy is asking: Bash: printf '\\x1b]0;owned\\x07\\x1b[2J' [bold red]not bold[/] \\u202eevil")
        line = "".join(segment.text for segment in widget.render_line(0))  # what the terminal gets: one line
        assert line.startswith("⚠ needy is asking: Bash: printf '\\x1b]0;owned\\x07\\x1b[2J' [bold red]not bold[/]")
        assert len(line) == 100 and line.endswith("…")  # the markup is text, and the line is cut where the screen ends
        assert widget.size.height == 1

    drive(Deck(sources(agents_dir), watch=False), script, size=(100, 20))


def test_the_question_follows_the_selected_agent_changes_and_goes_without_a_key(agents_dir: Path) -> None:
    record("first", "asking", 5, state_reason="Write: notes.md")
    second = record("second", "asking", 9, state_reason="Bash: make test")

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        await pilot.pause()
        top = app.selected()
        assert top is not None
        assert message(app) == f"⚠ {top.agent} is asking: {'Write: notes.md' if top.agent == 'first' else 'Bash: make test'}"
        app.query_one("#agents").move_cursor(row=1)  # type: ignore[attr-defined]
        await pilot.pause()
        other = app.selected()
        assert other is not None and other.agent != top.agent and message(app).startswith(f"⚠ {other.agent} is asking: ")
        app.query_one("#agents").move_cursor(row=[r.agent for r in app.shown].index("second"))  # type: ignore[attr-defined]
        await pilot.pause()
        second.write_text(second.read_text().replace("Bash: make test", "Bash: make release"))
        app.reload()
        await pilot.pause()
        assert message(app) == "⚠ second is asking: Bash: make release"
        second.write_text(second.read_text().replace('"asking"', '"tool"'))  # answered: the question is no longer true
        app.reload()
        await pilot.pause()
        assert message(app) == ""
        app.say("sent to first")  # a command's outcome is not taken off by the questions' bookkeeping
        app.reload()
        await pilot.pause()
        assert message(app) == "sent to first"

    drive(Deck(sources(agents_dir), watch=False), script)
