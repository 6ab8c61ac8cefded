"""Claude Code's ``AskUserQuestion`` answered from outside the pane: its held ``PermissionRequest`` hook is allowed
with the tool's input and the person's ``answers`` (agentlaunch.providers.native.claude_question).

The real CLI taking the reply: tests/e2e/test_answer_e2e.py (the fake API's next request carries it).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentlaunch.launch.questions import OpenQuestions
from agentlaunch.providers.native.claude_question import DENIED, asks_of, decision, question_items
from agentlaunch.providers.native.source import QuestionAsked
from tests.test_answer import FakeServer

COLOR = {
    "question": "Which color?",
    "header": "Color",
    "multiSelect": False,
    "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}],
}
SIZE = {"question": "Which size?", "header": "Size", "options": []}


def asked(tool_input: Any, server: FakeServer | None = None) -> QuestionAsked:
    payload = {"tool_name": "AskUserQuestion", "tool_input": tool_input}
    (item,) = question_items(server or FakeServer(), "9", payload)  # type: ignore[arg-type]
    assert isinstance(item, QuestionAsked)
    return item


def test_a_question_offers_reply_and_deny_and_says_each_question_with_its_choices() -> None:
    item = asked({"questions": [COLOR, SIZE]})
    assert item.options == ("reply", "deny")
    assert item.asks == "AskUserQuestion: Which color? (Red / Blue) Which size?"
    assert OpenQuestions("asker").asked(item).asks == item.asks  # as `agentlaunch answer` shows it


def test_the_reply_answers_every_question_in_the_tools_input_and_a_deny_refuses_it() -> None:
    server = FakeServer()
    item = asked({"questions": [COLOR, SIZE]}, server)
    assert item.answer is not None and item.answer("reply", "Green, in my words") is True
    reply, said = server.said[-1]
    assert reply == "9"
    inner = json.loads(said)["hookSpecificOutput"]
    assert inner["hookEventName"] == "PermissionRequest"
    assert inner["decision"] == {
        "behavior": "allow",
        "updatedInput": {
            "questions": [COLOR, SIZE],
            "answers": {"Which color?": "Green, in my words", "Which size?": "Green, in my words"},
        },
    }
    assert item.answer("deny", "") is True
    assert json.loads(server.said[-1][1])["hookSpecificOutput"]["decision"] == {"behavior": "deny", "message": DENIED}


def test_a_question_without_a_question_text_is_a_permission_as_any_tools() -> None:
    for tool_input in ({"questions": []}, {"questions": [{"header": "x"}]}, {"questions": "Which?"}, "Which?", None):
        assert asked(tool_input).options == ("once", "deny"), tool_input
        assert asks_of(tool_input) == ""


def test_through_the_open_question_a_reply_is_told_and_an_allow_is_refused_as_not_offered() -> None:
    server = FakeServer()
    questions = OpenQuestions("asker")
    shown = questions.asked(asked({"questions": [COLOR]}, server)).shown()
    refused = questions.handle({"answer": {"question": shown["id"], "decision": "once"}})
    assert refused["ok"] is False and refused["bad_input"] and "reply, deny" in refused["error"] and not server.said
    told = questions.handle({"answer": {"question": shown["id"], "decision": "reply", "text": "Red"}})
    assert told == {"ok": True, "answered": shown["id"], "decision": "reply"}
    answers = json.loads(server.said[-1][1])["hookSpecificOutput"]["decision"]["updatedInput"]["answers"]
    assert answers == {"Which color?": "Red"}


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(), lambda c: st.lists(c) | st.dictionaries(st.text(), c)))
def test_any_input_the_cli_sends_makes_a_question_and_an_answer_never_raising(tool_input: Any) -> None:
    payload = {"tool_name": "AskUserQuestion", "tool_input": {"questions": tool_input}}
    item = asked(payload["tool_input"])
    assert item.answer is not None
    for choice in item.options:
        json.loads(json.dumps(decision(choice, payload, "an answer")))
