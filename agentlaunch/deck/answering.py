"""The deck's answers to an asking agent (``a`` allow, ``D`` deny, ``R`` reply): the question the row shows, answered
as ``agentlaunch answer`` answers it (:mod:`agentlaunch.launch.answer_client`), in a worker thread.

The person saw the row's question (its record's ``state_reason``, on the message line). The question the session
has open is read first and answered only when it is that one (its ``asks`` the same words): a question that changed
since is never answered in its place, and the message line says so.
"""

from __future__ import annotations

from agentlaunch.deck.actions import Outcome
from agentlaunch.errors import AgentlaunchError, ExitCode
from agentlaunch.launch.answer_client import DECISION_WORDS, give_answer, open_question
from agentlaunch.visible import visible


def answer_shown(agent: str, session: str | None, shown: str, decision: str, text: str | None = None) -> Outcome:
    """Answer ``agent``'s open question with ``decision`` when it is the one ``shown``; how it went, in one line."""
    try:
        asked = open_question(agent, session)
        if str(asked.get("asks", "")) != shown:
            now = visible(str(asked.get("asks", "")))
            return Outcome(int(ExitCode.QUESTION_CHANGED), f"{agent}'s question changed (now: {now}): nothing answered")
        give_answer(agent, str(asked.get("id", "")), decision, text, session)
    except AgentlaunchError as exc:
        return Outcome(int(exc.exit_code), visible(exc.message))
    return Outcome(0, f"{agent}: {DECISION_WORDS.get(decision, decision)}: {visible(shown)}")
