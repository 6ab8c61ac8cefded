"""Codex's question tool (``item/tool/requestUserInput`` on agentlaunch's app-server connection) as a question
``agentlaunch answer`` answers with a reply or a denial (agentlaunch/providers/native/codex_question.py, through
RemoteSource). The shapes are the ones measured on Codex 0.171.0: tests/e2e/test_answer_codex_question_e2e.py."""

from __future__ import annotations

from typing import Any

from agentlaunch.launch.questions import OpenQuestions
from agentlaunch.providers.native.codex_question import answer_of, asks_of
from agentlaunch.providers.native.source import QuestionAsked
from tests.test_codex_remote_source import THREAD, source

COLOR = {
    "id": "color",
    "header": "Color",
    "question": "Which color?",
    "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}],
    "isOther": True,
    "isSecret": False,
}
SIZE = {"id": "size", "header": "Size", "question": "How big?", "options": None}


def asked(rid: Any, *questions: Any) -> dict[str, Any]:
    params = {"threadId": THREAD, "turnId": "t1", "itemId": "i1", "questions": list(questions)}
    return {"id": rid, "method": "item/tool/requestUserInput", "params": params}


def test_a_reply_answers_each_question_in_the_same_words_and_a_denial_answers_none() -> None:
    src, conn = source()
    conn.inbox = [asked(7, COLOR, SIZE)]
    (question,) = [item for item in src.read() if isinstance(item, QuestionAsked)]
    assert (question.tool, question.options) == ("request_user_input", ("reply", "deny"))
    assert question.asks == "question: Which color? (Red / Blue) How big?"
    assert "threadId" not in question.tool_input and question.tool_input["questions"][0]["id"] == "color"
    assert question.answer is not None and question.answer("reply", "Green, [b]mine[/b]")
    assert conn.sent[-1] == {
        "id": 7,
        "result": {"answers": {"color": {"answers": ["Green, [b]mine[/b]"]}, "size": {"answers": ["Green, [b]mine[/b]"]}}},
    }
    assert question.answer("deny", "")
    assert conn.sent[-1] == {"id": 7, "result": {"answers": {}}}
    conn.closed = True
    assert not question.answer("reply", "too late")  # the app-server is gone: the CLI was not told
    assert len(conn.sent) == 2


def test_forged_or_malformed_questions_never_raise_and_answer_only_the_ids_they_name() -> None:
    for junk in ([], None, "text", [{"question": ""}], [{"id": "x", "question": ["Q"]}], [7]):
        src, conn = source()
        conn.inbox = [{"id": "r1", "method": "item/tool/requestUserInput", "params": {"threadId": THREAD, "questions": junk}}]
        assert not [item for item in src.read() if isinstance(item, QuestionAsked)], junk  # no question: the interface's
    src, conn = source()
    conn.inbox = [asked("r1", {"id": 5, "question": "Q?"}, {"question": "No id?"})]
    (question,) = [item for item in src.read() if isinstance(item, QuestionAsked)]
    assert question.answer is not None and question.answer("reply", "yes")
    assert conn.sent[-1] == {"id": "r1", "result": {"answers": {}}}  # no id to answer: none answered, nothing made up
    assert asks_of({"questions": [{"question": "Q?\n\x1b[31mred", "options": [{"label": 3}, "x"]}]}) == "question: Q? \x1b[31mred"
    assert answer_of(1, {"questions": [{"id": "", "question": "Q?"}]}, "reply", "t") == {"id": 1, "result": {"answers": {}}}
    src, conn = source()
    conn.inbox = [{"id": True, "method": "item/tool/requestUserInput", "params": {"threadId": THREAD, "questions": [COLOR]}}]
    assert not [item for item in src.read() if isinstance(item, QuestionAsked)]  # an id that is no request id


def test_the_open_question_takes_a_reply_and_refuses_an_allow() -> None:
    src, conn = source()
    conn.inbox = [asked(3, COLOR)]
    (item,) = [i for i in src.read() if isinstance(i, QuestionAsked)]
    questions = OpenQuestions(lambda: "coder", lambda: None, lambda: True)
    shown = questions.asked(item).shown()
    refused = questions.handle({"answer": {"question": shown["id"], "decision": "once"}})
    assert refused["bad_input"] and "reply, deny" in refused["error"] and conn.sent == []
    done = questions.handle({"answer": {"question": shown["id"], "decision": "reply", "text": "Blue"}})
    assert done == {"ok": True, "answered": shown["id"], "decision": "reply"}
    assert conn.sent == [{"id": 3, "result": {"answers": {"color": {"answers": ["Blue"]}}}}]
