"""Codex's question to the person (its ``request_user_input`` tool), answered with a reply on agentlaunch's own
app-server connection.

Measured on Codex 0.171.0 against the fake Responses API (``tests/e2e/test_answer_e2e.py``): the model is offered
``request_user_input`` in the default mode only with the feature ``default_mode_request_user_input`` on (``[features]``
in its config; else in Plan mode only). A call of it, ``{"questions": [{"id", "header", "question", "options":
[{"label", "description"}]}]}``, reaches every client of the app-server as the server request
``item/tool/requestUserInput`` (the thread's status: ``waitingOnUserInput``; its OSC 7501 report: ``blocked
kind=question``), and the interface shows the question with its options, "None of the above" and a notes field.
The first answer the app-server gets wins and closes the interface's question:

* reply ``TEXT``: ``{"answers": {ID: {"answers": [TEXT]}}}`` for each question (the same words to each, as for
  Claude Code's ``AskUserQuestion``); the model reads them in the tool's output;
* deny: ``{"answers": {}}``: no answer; Codex's instructions tell the model to go on with its best judgment.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentlaunch.providers.asked import choices_line, one_line, questions_of
from agentlaunch.providers.native.source import NativeItem, QuestionAsked
from agentlaunch.providers.untrusted import string

USER_INPUT = "item/tool/requestUserInput"
TOOL = "request_user_input"
OPTIONS = ("reply", "deny")


def answer_of(request_id: Any, params: dict[str, Any], decision: str, text: str) -> dict[str, Any]:
    """The JSON-RPC answer to the request: ``text`` for each of its questions (``reply``), or none (``deny``)."""
    answers: dict[str, Any] = {}
    if decision == "reply":
        ids = [string(q.get("id")) for q in questions_of(params)]
        answers = {qid: {"answers": [text]} for qid in ids if qid}
    return {"id": request_id, "result": {"answers": answers}}


def asks_of(params: dict[str, Any]) -> str:
    """What it asks in one line: ``question: Which color? (Red / Blue)``; "" when it names no question."""
    said = choices_line(params)
    return one_line(f"question: {said}") if said else ""


def user_input_question(request_id: Any, params: dict[str, Any], send: Callable[[dict[str, Any]], bool]) -> list[NativeItem]:
    """The question ``agentlaunch answer`` shows and answers (none when the request names no question: the
    interface alone answers it); ``send`` puts the answer on the connection (False: it could not)."""
    asks = asks_of(params)
    if not asks:
        return []
    shown = {k: v for k, v in params.items() if k not in ("threadId", "turnId", "itemId")}
    return [
        QuestionAsked(TOOL, shown, OPTIONS, lambda decision, text: send(answer_of(request_id, params, decision, text)), asks=asks)
    ]
