"""The deck's answers to an asking agent (``a`` allow, ``D`` deny, ``R`` reply): the question the row shows, answered
as ``agentlaunch answer`` answers it (:mod:`agentlaunch.launch.answer_client`), in a worker thread.

The person saw the row's question (its record's ``state_reason``, on the message line). The question the session
has open is read first and answered only when it is that one (its ``asks`` the same words): a question that changed
since is never answered in its place, and the message line says so. Another host's agent is answered the same way
through ``agentlaunch answer … --host HOST`` (:func:`answer_remote`): its question read, then answered by its id.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

from agentlaunch.deck.actions import COMMAND_TIMEOUT, Outcome
from agentlaunch.errors import AgentlaunchError, ExitCode, NoQuestion
from agentlaunch.launch.answer_client import DECISION_WORDS, give_answer, open_question
from agentlaunch.visible import visible

OPENING = 5.0
"""Seconds a question the row shows may take to be handed over: Claude Code's PreToolUse hook makes the row say
``asking`` a moment before its PermissionRequest hook opens the question (longer on a loaded machine)."""


def answer_shown(agent: str, session: str | None, shown: str, decision: str, text: str | None = None) -> Outcome:
    """Answer ``agent``'s open question with ``decision`` when it is the one ``shown``; how it went, in one line."""
    try:
        asked = question_opened(agent, session)
        if str(asked.get("asks", "")) != shown:
            now = visible(str(asked.get("asks", "")))
            return Outcome(int(ExitCode.QUESTION_CHANGED), f"{agent}'s question changed (now: {now}): nothing answered")
        give_answer(agent, str(asked.get("id", "")), decision, text, session)
    except AgentlaunchError as exc:
        return Outcome(int(exc.exit_code), visible(exc.message))
    return Outcome(0, f"{agent}: {DECISION_WORDS.get(decision, decision)}: {visible(shown)}")


def question_opened(agent: str, session: str | None, within: float = OPENING) -> dict[str, Any]:
    """``agent``'s open question, waited for up to ``within`` seconds while it asks nothing yet (then NoQuestion)."""
    deadline = time.monotonic() + within
    while True:
        try:
            return open_question(agent, session)
        except NoQuestion:
            if time.monotonic() >= deadline:
                raise
        time.sleep(0.2)


def answer_row(host: str | None, agent: str, session: str | None, shown: str, decision: str, text: str | None) -> Outcome:
    """:func:`answer_shown` for an agent of this machine (``host`` None), :func:`answer_remote` for another host's."""
    if host is None:
        return answer_shown(agent, session, shown, decision, text)
    return answer_remote(host, agent, session, shown, decision, text)


FLAGS = {"once": "--allow", "always": "--always", "deny": "--deny", "reply": "--reply"}


def answer_remote(host: str, agent: str, session: str | None, shown: str, decision: str, text: str | None = None) -> Outcome:
    """:func:`answer_shown` for another host's agent: ``agentlaunch answer AGENT --json --host HOST`` reads its open
    question, answered (``--question ID``) only when it is the one ``shown``."""
    where = [*(["--session", session] if session else []), "--host", host]
    deadline = time.monotonic() + OPENING
    code, out, said = _answer([agent, "--json", *where])
    while code == ExitCode.NO_QUESTION and time.monotonic() < deadline:  # not handed over yet (OPENING)
        time.sleep(0.2)
        code, out, said = _answer([agent, "--json", *where])
    if code != 0:
        return Outcome(code, said)
    try:
        asked = json.loads(out)["question"]
        question, asks = str(asked["id"]), str(asked.get("asks", ""))
    except (ValueError, KeyError, TypeError):
        return Outcome(1, f"{agent} on {host}: its answer --json is not the question (nothing answered)")
    if asks != shown:
        return Outcome(int(ExitCode.QUESTION_CHANGED), f"{agent}'s question changed (now: {visible(asks)}): nothing answered")
    choice = [FLAGS[decision], *([text or ""] if decision == "reply" else [])]
    code, _, said = _answer([agent, *choice, "--question", question, *where])
    return Outcome(code, said if code else f"{agent}@{host}: {DECISION_WORDS.get(decision, decision)}: {visible(shown)}")


def _answer(args: list[str]) -> tuple[int, str, str]:
    """``agentlaunch answer ARGS`` (this Python's): its exit status, stdout, and its last line of stderr, inert."""
    env = {k: v for k, v in os.environ.items() if k != "TMUX_PANE"}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "agentlaunch", "answer", *args],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=COMMAND_TIMEOUT,
            env=env,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 124, "", f"agentlaunch answer: {exc}"
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    return done.returncode, done.stdout, visible((errors or lines or [f"exit {done.returncode}"])[0])
