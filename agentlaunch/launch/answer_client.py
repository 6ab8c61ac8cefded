"""``agentlaunch answer``'s end of the control socket, shared by the command, the deck and a notification's actions:
read the question an agent's CLI asks, and answer it (:mod:`agentlaunch.launch.questions` says the protocol).

Every answer names the question it answers (the ``id`` shown with it): a question closed meanwhile (answered in the
interface, or by another answer) is never answered in its place.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentlaunch.errors import BudgetExceeded, NoQuestion, PromptNotTaken, QuestionChanged, UsageError
from agentlaunch.launch.control_client import ControlClient
from agentlaunch.live.running import running_session

DECISION_WORDS = {"once": "allowed once", "always": "allowed always", "deny": "denied", "reply": "answered"}


def _control(agent: str, session: str | None, agents_dir: Path | None) -> str:
    record = running_session(agent, session, agents_dir)
    control, state = record.data.get("control"), str(record.data.get("state"))
    if not isinstance(control, str) or not control:
        raise PromptNotTaken(f"{agent} is {state}: no running interface to answer", hint="agentlaunch status shows it")
    return control


def _exchange(agent: str, control: str, request: dict[str, Any]) -> dict[str, Any]:
    try:
        client = ControlClient(control)
    except OSError as exc:
        raise PromptNotTaken(f"{agent}'s session does not answer at {control} ({exc.strerror or exc})") from None
    try:
        reply = client.ask(request)
    except (OSError, TimeoutError) as exc:
        raise PromptNotTaken(f"{agent}'s session did not answer ({exc or 'no answer'})") from None
    finally:
        client.close()
    if reply is None:
        raise PromptNotTaken(f"{agent}'s session hung up without an answer (ending?)")
    return reply


def open_question(agent: str, session: str | None = None, agents_dir: Path | None = None) -> dict[str, Any]:
    """The question ``agent``'s CLI asks now (``id``, ``tool``, ``asks``, ``input``, ``options``); NoQuestion when
    it asks nothing, PromptNotTaken when it is not running or does not answer."""
    reply = _exchange(agent, _control(agent, session, agents_dir), {"question": True})
    question = reply.get("question")
    if reply.get("ok") is not True or not isinstance(question, dict):
        raise NoQuestion(str(reply.get("error") or f"{agent} asks nothing now"))
    return question


def give_answer(
    agent: str, question: str, decision: str, text: str | None = None, session: str | None = None, agents_dir: Path | None = None
) -> dict[str, Any]:
    """Answer ``question`` (its id) of ``agent``; the session's reply. Raises QuestionChanged (another question is
    open), NoQuestion (none is), BudgetExceeded (a budget holds the tool: an allow is refused), UsageError (a decision
    the question does not take), PromptNotTaken (not running)."""
    answer: dict[str, Any] = {"question": question, "decision": decision}
    if text is not None:
        answer["text"] = text
    reply = _exchange(agent, _control(agent, session, agents_dir), {"answer": answer})
    if reply.get("ok") is True:
        return reply
    error = str(reply.get("error") or "the session refused the answer")
    if reply.get("changed") is True:
        raise QuestionChanged(error, hint=f"agentlaunch answer {agent} shows the question open now")
    if reply.get("budget") is True:
        raise BudgetExceeded(error)
    if reply.get("bad_input") is True:
        raise UsageError(error)
    raise NoQuestion(error)
