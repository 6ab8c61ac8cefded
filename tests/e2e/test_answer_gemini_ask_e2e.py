"""Gemini's own question (its ``ask_user`` tool) read and answered with ``agentlaunch answer`` in tmux: a reply typed
into its box only while the pane shows it (its Enter only once the pane shows the typed words there), a denial as
Esc; end to end on the pinned Gemini CLI against the fake Gemini API.

Measured on Gemini CLI 0.61.0 (agentlaunch/providers/native/gemini_ask.py): the interactive CLI offers ``ask_user``;
its call runs ``BeforeTool`` (with the questions) and ``Notification`` ``ToolPermission`` (``details`` only
``{"type": "ask_user", "title": "Ask User"}``); the box shows ``Answer Questions``, the question and ``Enter to
submit · Esc to cancel``; the model reads ``{"answers": {"0": TEXT}}``; Esc cancels the request ("Request
cancelled.", the turn over, no further model call), as it does a permission prompt; a DEL (what the launch types to
take a reply the box did not submit out again) deletes a character in the box.

The same session's later questions are answered from the deck (``R``, in a terminal of the agents' tmux server) and
denied from a desktop notification's Deny button (a ``notify-send`` the test clicks, tests/support/desktop_clicks.py);
each question is announced once, named.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.fakeapi import gemini as gfake
from tests.e2e.test_answer_e2e import GEMINI_USAGE, cli, gemini_in_tmux, on_deck, record, state_of, tmux
from tests.support.desktop_clicks import click, clicked, shown_with
from tests.support.desktop_clicks import shown as notifications
from tests.support.waits import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

TEXT_QUESTION = {"question": "Which color?", "header": "Color", "type": "text", "placeholder": "a color"}
FLAVOR_QUESTION = {"question": "Which flavor?", "header": "Flavor", "type": "text", "placeholder": "a flavor"}
CHOICE_QUESTION = {
    "question": "Which size?",
    "header": "Size",
    "type": "choice",
    "options": [{"label": "Small", "description": "s"}, {"label": "Large", "description": "l"}],
}


def function_responses(api: gfake.GeminiFake) -> list[str]:
    """The tool results the model was sent, in order (the last request carries the conversation so far)."""
    contents = api.model_requests[-1].body.get("contents", [])
    return [
        json.dumps(part["functionResponse"]["response"])
        for content in contents
        for part in content.get("parts", [])
        if isinstance(part, dict) and "functionResponse" in part
    ]


def test_gemini_ask_user_replied_from_the_command_and_the_deck_then_dismissed_from_a_notification(
    socket: str, isolated_home: Path, agents_dir: Path, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    replies = [
        gfake.FunctionCallReply("ask_user", {"questions": [TEXT_QUESTION]}, GEMINI_USAGE),
        gfake.TextReply("Green noted.", GEMINI_USAGE),
        gfake.FunctionCallReply("ask_user", {"questions": [FLAVOR_QUESTION]}, GEMINI_USAGE),
        gfake.TextReply("Vanilla noted.", GEMINI_USAGE),
        gfake.FunctionCallReply("ask_user", {"questions": [CHOICE_QUESTION]}, GEMINI_USAGE),
        gfake.TextReply("Never sent.", GEMINI_USAGE),
    ]
    desktop = tmp_path / "desktop"
    with gemini_in_tmux(socket, agents_dir, request, replies, desktop) as gem:
        env, work, api = gem.env, gem.work, gem.api

        def ask(text: str) -> dict[str, Any]:
            asked = gem.ask(text)
            wait_for(lambda: "Answer Questions" in gem.screen(), timeout=30, what="the box on the screen")
            return asked

        first = ask("ask me")
        assert (first["tool"], first["asks"], first["options"]) == ("ask_user", "ask_user: Which color?", ["reply", "deny"])
        assert record(env, work, "gem")["state_reason"] == "ask_user: Which color?"
        allow = cli(env, work, "answer", "gem", "--allow", "--question", first["id"])
        assert allow.returncode == 2, allow.stderr  # a question, not a tool: nothing typed
        # What takes a reply the box did not submit out again: a DEL per character, here through the pane's relay.
        tmux(socket, "send-keys", "-t", gem.pane, "-l", "xyz")
        wait_for(lambda: "xyz" in gem.screen(), timeout=30, what="the words typed into the box")
        tmux(socket, "send-keys", "-t", gem.pane, "-H", "7f", "7f", "7f")
        wait_for(lambda: "xyz" not in gem.screen() and "Answer Questions" in gem.screen(), timeout=30, what="them out")
        replied = cli(env, work, "answer", "gem", "--reply", "Green,\n  my own words", "--question", first["id"])
        assert replied.returncode == 0, replied.stderr
        wait_for(lambda: "Green noted." in gem.screen(), timeout=60, what="the replied turn's answer")
        wait_for(lambda: state_of(env, work, "gem") == "waiting", timeout=60, what="the turn over")
        assert function_responses(api)[-1] == json.dumps({"output": '{"answers":{"0":"Green, my own words"}}'})

        # From the deck, in a real terminal (a session of the agents' tmux server): R, the reply, Enter.
        flavor = ask("ask about the flavor")
        assert flavor["asks"] == "ask_user: Which flavor?", flavor
        full = {**os.environ, **env}
        keep = [f"-e{k}={v}" for k, v in full.items() if k.startswith(("AGENTLAUNCH_", "HOME", "XDG_"))]
        deck = [sys.executable, "-m", "agentlaunch", "deck", "--agents-dir", str(agents_dir)]
        tmux(socket, "new-session", "-d", "-s", "deck", "-x", "160", "-y", "40", "-c", str(work), *keep, *deck)
        on_deck(socket, "gem is asking: ask_user: Which flavor?")
        tmux(socket, "send-keys", "-t", "=deck:", "R")
        on_deck(socket, "reply to gem (ask_user: Which flavor?):")
        tmux(socket, "send-keys", "-t", "=deck:", "-l", "Vanilla, from the deck")
        tmux(socket, "send-keys", "-t", "=deck:", "Enter")
        on_deck(socket, "gem: answered: ask_user: Which flavor?")  # said once its box was seen gone
        wait_for(lambda: "Vanilla noted." in gem.screen(), timeout=60, what="the turn the deck answered")
        wait_for(lambda: state_of(env, work, "gem") == "waiting", timeout=60, what="the deck's turn over")
        assert function_responses(api)[-1] == json.dumps({"output": '{"answers":{"0":"Vanilla, from the deck"}}'})
        tmux(socket, "send-keys", "-t", "=deck:", "q")

        # A choice: picked with arrows in the box; only a denial from outside, here the notification's Deny button.
        second = ask("ask again")
        assert (second["asks"], second["options"]) == ("ask_user: Which size? (Small / Large)", ["deny"]), second
        calls = len(api.model_requests)
        wait_for(lambda: shown_with(desktop, "Which size?"), timeout=30, what="the notification")
        (argv,) = shown_with(desktop, "Which size?")
        assert "--action=deny=Deny" in argv and not any("Allow" in a for a in argv), argv
        click(desktop, "Which size?", "deny")
        wait_for(lambda: "Request cancelled" in gem.screen(), timeout=60, what="the request cancelled")
        assert clicked(desktop)
        wait_for(lambda: state_of(env, work, "gem") == "waiting", timeout=60, what="the second turn over")
        assert len(api.model_requests) == calls  # Esc cancels the request: no further model call
        late = cli(env, work, "answer", "gem", "--reply", "typed nowhere", "--question", first["id"])
        assert late.returncode == 10, late.stderr  # closed: no key typed into the input box
        assert "Type your message" in gem.screen() and "typed nowhere" not in gem.screen()
    # One question, one notification, naming it.
    bodies = [argv[-1].splitlines()[0] for argv in notifications(desktop)]
    assert bodies == ["ask_user: Which color?", "ask_user: Which flavor?", "ask_user: Which size? (Small / Large)"], bodies
