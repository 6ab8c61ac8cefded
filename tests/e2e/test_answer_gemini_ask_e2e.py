"""Gemini's own question (its ``ask_user`` tool) read and answered with ``agentlaunch answer`` in tmux: a reply typed
into its box only while the pane shows it (its Enter only once the pane shows the typed words there), a denial as
Esc; end to end on the pinned Gemini CLI against the fake Gemini API.

Measured on Gemini CLI 0.61.0 (agentlaunch/providers/native/gemini_ask.py): the interactive CLI offers ``ask_user``;
its call runs ``BeforeTool`` (with the questions) and ``Notification`` ``ToolPermission`` (``details`` only
``{"type": "ask_user", "title": "Ask User"}``); the box shows ``Answer Questions``, the question and ``Enter to
submit · Esc to cancel``; the model reads ``{"answers": {"0": TEXT}}``; Esc cancels the request ("Request
cancelled.", the turn over, no further model call), as it does a permission prompt.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.fakeapi import gemini as gfake
from tests.e2e.test_answer_e2e import GEMINI_USAGE, cli, gemini_in_tmux, record, state_of
from tests.support.waits import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

TEXT_QUESTION = {"question": "Which color?", "header": "Color", "type": "text", "placeholder": "a color"}
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


def test_gemini_ask_user_replied_with_words_then_dismissed_only_while_its_box_shows(
    socket: str, isolated_home: Path, agents_dir: Path, request: pytest.FixtureRequest
) -> None:
    replies = [
        gfake.FunctionCallReply("ask_user", {"questions": [TEXT_QUESTION]}, GEMINI_USAGE),
        gfake.TextReply("Green noted.", GEMINI_USAGE),
        gfake.FunctionCallReply("ask_user", {"questions": [CHOICE_QUESTION]}, GEMINI_USAGE),
        gfake.TextReply("Never sent.", GEMINI_USAGE),
    ]
    with gemini_in_tmux(socket, agents_dir, request, replies) as gem:
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
        replied = cli(env, work, "answer", "gem", "--reply", "Green,\n  my own words", "--question", first["id"])
        assert replied.returncode == 0, replied.stderr
        wait_for(lambda: "Green noted." in gem.screen(), timeout=60, what="the replied turn's answer")
        wait_for(lambda: state_of(env, work, "gem") == "waiting", timeout=60, what="the turn over")
        assert function_responses(api)[-1] == json.dumps({"output": '{"answers":{"0":"Green, my own words"}}'})

        second = ask("ask again")  # a choice: picked with arrows in the box; only a denial from outside
        assert (second["asks"], second["options"]) == ("ask_user: Which size? (Small / Large)", ["deny"]), second
        calls = len(api.model_requests)
        denied = cli(env, work, "answer", "gem", "--deny", "--question", second["id"])
        assert denied.returncode == 0, denied.stderr
        wait_for(lambda: "Request cancelled" in gem.screen(), timeout=60, what="the request cancelled")
        wait_for(lambda: state_of(env, work, "gem") == "waiting", timeout=60, what="the second turn over")
        assert len(api.model_requests) == calls  # Esc cancels the request: no further model call
        late = cli(env, work, "answer", "gem", "--reply", "typed nowhere", "--question", first["id"])
        assert late.returncode == 10, late.stderr  # closed: no key typed into the input box
        assert "Type your message" in gem.screen() and "typed nowhere" not in gem.screen()
