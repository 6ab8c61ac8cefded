"""`agentlaunch deck`'s dialogs, driven in process with Textual's pilot: `n` picks a definition, then its prompt,
worktree and session; the arrows after a dialog and the letters typed before them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from agentlaunch.deck.agent_list import AgentList
from agentlaunch.deck.app import Deck
from tests.support.deck_pilot import drive, message, record, settle, sources


def test_n_picks_a_definition_from_a_filtered_list_then_its_prompt_worktree_and_session(
    agents_dir: Path, monkeypatch: Any
) -> None:
    from textual.widgets import Checkbox, Label, OptionList

    from agentlaunch.deck import actions
    from agentlaunch.deck.picker import PickDefinition, StartForm

    ran: list[list[str]] = []
    monkeypatch.setattr(actions, "agentlaunch", lambda args, socket, cwd=None: ran.append(args) or actions.Outcome(0, "ok"))
    (agents_dir / "broken").mkdir()
    (agents_dir / "broken" / "agent.yaml").write_text("provider: claude\nno_such_field: 1\n")

    def options(app: Deck) -> list[str]:
        listed = app.screen.query_one(OptionList)
        return [str(listed.get_option_at_index(i).prompt) for i in range(listed.option_count)]

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        await settle(pilot, lambda: app.sources.definitions.get("broken"), app, "the definitions loaded")
        await pilot.press("n")
        assert isinstance(app.screen, PickDefinition)
        listed = options(app)
        assert [o.split()[0] for o in listed] == ["broken", "demo", "planner", "reviewer", "+"]
        assert "claude" in next(o for o in listed if o.startswith("reviewer"))  # what it runs
        assert "⚠ definition: " in next(o for o in listed if o.startswith("broken"))  # what is wrong with it
        await pilot.press("down", "down")
        assert app.screen.query_one(OptionList).highlighted == 2
        await pilot.press(*"zzz")
        assert options(app) == ["no definition matches", "+ an agent without a definition: provider, model, folder"]
        await pilot.press("enter")  # nothing to pick: the picker stays
        assert isinstance(app.screen, PickDefinition)
        await pilot.press("backspace", "backspace", "backspace", *"view")
        assert [o.split()[0] for o in options(app)] == ["reviewer", "+"]
        await pilot.press("enter")
        assert isinstance(app.screen, StartForm) and app.screen.agent == "reviewer"

        await pilot.press(*"review the diff", "down", "space", "down", *"a b", "enter")  # a session tmux would misread
        assert isinstance(app.screen, StartForm) and "not allowed" in str(app.screen.query_one("#problem", Label).render())
        assert app.screen.query_one("#worktree", Checkbox).value is True
        await pilot.press("backspace", "backspace", "backspace", *"team-a", "enter")
        await settle(pilot, lambda: len(ran) == 2, app, "tmux up, then send")
        assert ran[0] == [
            "tmux",
            "up",
            "reviewer",
            "--no-attach",
            "--worktree",
            "--session",
            "team-a",
            "--agents-dir",
            str(agents_dir),
        ]
        assert ran[1] == ["send", "reviewer", "review the diff"]

        await pilot.press("n", *"demo", "enter", "enter")  # no prompt, no worktree, tmux up's own session
        await settle(pilot, lambda: len(ran) == 3, app, "the second start")
        assert ran[2] == ["tmux", "up", "demo", "--no-attach", "--agents-dir", str(agents_dir)]
        await pilot.press("n", *"plan", "enter", "ctrl+t", "ctrl+t", "ctrl+t", "down", "space", "enter")  # ticked thrice
        await settle(pilot, lambda: len(ran) == 4, app, "the third start")  # Space on the box unticked it; Enter there starts
        assert ran[3] == ["tmux", "up", "planner", "--no-attach", "--agents-dir", str(agents_dir)]
        await pilot.press("n", *"plan", "enter", "down", "space", "enter")  # Enter on the ticked box starts, ticked
        await settle(pilot, lambda: len(ran) == 5, app, "the fourth start")
        assert ran[4] == ["tmux", "up", "planner", "--no-attach", "--worktree", "--agents-dir", str(agents_dir)]
        await pilot.press("n", "escape", "n", "enter", "escape")  # Escape at either step starts nothing
        await pilot.pause()
        assert len(ran) == 5 and not isinstance(app.screen, PickDefinition | StartForm)

    drive(Deck(sources(agents_dir)), script)


def test_the_pickers_arrows_come_after_the_letters_typed_before_them(agents_dir: Path) -> None:
    """↑ ↓ are the picker's ordinary bindings (the filter has no use for them): in a burst of keys (a paste, send-keys)
    a Down typed after some letters moves the list those letters filtered, never the list before them."""
    from textual import events
    from textual.widgets import Input, OptionList

    from agentlaunch.deck.picker import ADHOC, PickDefinition

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        await pilot.press("n")
        picker = app.screen
        assert isinstance(picker, PickDefinition) and app.focused is picker.query_one("#filter", Input)
        for key, character in [("e", "e"), ("r", "r"), ("down", None)]:  # posted at once, none waited for
            app.post_message(events.Key(key, character))
        await settle(pilot, lambda: picker.query_one("#filter", Input).value == "er", app, "the letters in")
        await pilot.pause()
        listed = picker.query_one(OptionList)
        names = [listed.get_option_at_index(i).id for i in range(listed.option_count)]
        assert names == ["planner", "reviewer", ADHOC]  # "er" filtered the list before Down came
        assert listed.highlighted == 1
        assert not [b for b in PickDefinition.BINDINGS if getattr(b, "priority", False)]

    drive(Deck(sources(agents_dir)), script)


def test_n_without_definitions_says_where_it_looked(tmp_path: Path) -> None:
    from agentlaunch.deck.picker import PickDefinition

    empty = tmp_path / "none-here"
    empty.mkdir()

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        await pilot.press("n")
        said = f"no agent is defined in {empty}: + starts one without a definition; agentlaunch init makes definitions"
        assert message(app) == said
        assert isinstance(app.screen, PickDefinition)  # with its one choice: an agent without a definition

    drive(Deck(sources(empty)), script)


def test_after_a_dialog_the_arrows_move_the_list_again(agents_dir: Path) -> None:
    record("calm", "thinking", 5)

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        table = app.query_one(AgentList)
        await pilot.press("slash", "escape", "n", "escape", "question_mark", "escape")
        assert app.focused is table
        before = table.cursor_row
        await pilot.press("down")
        assert table.cursor_row == before + 1

    drive(Deck(sources(agents_dir)), script)
