"""``agentlaunch send``'s end of the control socket, shared by the command and the MCP server's ``send_prompt``:
offer a prompt to an agent's running session until it is taken or refused, then (``wait``) read the turn's end.

Taken or refused, never both: a refusal means nothing was typed and never will be (the session cancels a request it
did not take in time). The rules of the text itself (:func:`~agentlaunch.launch.control_request.prompt_problem`) are
the caller's to check before it offers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentlaunch.errors import PromptNotTaken, TurnFailed, TurnTimeout, UsageError
from agentlaunch.launch.control_client import ControlClient
from agentlaunch.live.life import what_happened
from agentlaunch.live.running import running_session

STARTING_WAIT = 60.0  # seconds a session that is still starting is waited for, unless the caller's timeout says otherwise
RETRY_EVERY = 0.5  # seconds between two offers to a starting session
ANSWER_HINT = "agentlaunch answer AGENT shows the question and answers it (or answer it in the agent's interface)"


def offer_until_taken(
    agent: str,
    session: str | None,
    text: tuple[str, bool],
    wait: bool,
    timeout: float | None,
    *,
    say: Callable[[str], None] | None = None,
    agents_dir: Path | None = None,
    asking_hint: str = ANSWER_HINT,
) -> tuple[ControlClient, dict[str, Any]]:
    """Offer the prompt (``text``: the text, and whether it is a slash command) until the session takes it: its
    socket's client and first reply. A session still starting is asked again, for a while (``say`` is told once).

    Raises UsageError (the session refused the text itself: it would not reach the model as written) and
    PromptNotTaken (not running, asking a person, in a turn, paused, ended: nothing typed, ``asking_hint`` the way
    out of an asking session)."""
    started = time.monotonic()
    limit = timeout if timeout is not None else STARTING_WAIT
    told = say is None
    while True:
        client, first = _offer(agent, session, text, wait, agents_dir)
        if first.get("ok") is True and client is not None:
            return client, first
        if client is not None:
            client.close()
        hint = _hint(first, asking_hint)
        if first.get("bad_input") is True:  # the text itself, as written, cannot go to this session's model
            raise UsageError(str(first.get("error") or "the session refused the text"), hint=hint)
        if not first.get("retry") or time.monotonic() - started >= limit:
            raise PromptNotTaken(str(first.get("error") or f"{agent} did not take the prompt"), hint=hint)
        if not told and say is not None:
            say(f"{agent} is still starting; waiting for it (at most {limit:g}s)…")
            told = True
        time.sleep(RETRY_EVERY)


def _offer(
    agent: str, session: str | None, text: tuple[str, bool], wait: bool, agents_dir: Path | None = None
) -> tuple[ControlClient | None, dict[str, Any]]:
    """Hand the prompt to the agent's session: its socket's client, and its first reply (a refusal, or taken)."""
    record = running_session(agent, session, agents_dir)
    control, state = record.data.get("control"), str(record.data.get("state"))
    if not isinstance(control, str) or not control:
        if state == "starting":  # its socket is not named yet
            return None, {"ok": False, "retry": True, "error": f"{agent} is still starting"}
        if state == "paused":
            raise PromptNotTaken(
                f"{agent} is paused: its budget is spent; it takes no prompt until the limit is "
                f"raised or agentlaunch resume-budget {agent} confirms"
            )
        if state == "exited":  # its session is over (its CLI exited, a budget or `stop` ended it), not a headless turn
            raise PromptNotTaken(what_happened(agent) or f"{agent}'s session has ended (its CLI exited): it takes no prompt")
        raise PromptNotTaken(f"{agent} runs one headless turn ({state}): only a chat or an interface takes prompts")
    try:
        client = ControlClient(control)
    except OSError as exc:
        raise PromptNotTaken(f"{agent}'s session does not answer at {control} ({exc.strerror or exc})") from None
    try:
        first = client.request(text[0], wait, command=text[1])
    except (OSError, TimeoutError) as exc:
        client.close()
        raise PromptNotTaken(f"{agent}'s session did not take the prompt ({exc or 'no answer'}); it will not type it") from None
    if first is None:
        client.close()
        raise PromptNotTaken(f"{agent}'s session did not take the prompt in time, or hung up (ending?); nothing was typed")
    return client, first


def turn_over(
    client: ControlClient,
    agent: str,
    left: float | None,
    timeout: float | None,
    *,
    watch: Callable[[], None] | None = None,
    every: float = 1.0,
) -> dict[str, Any]:
    """After the session took a prompt with ``wait``: the turn's end as the session reports it (``answer``,
    ``exit_code``, ``error``, ``usage``, ``cost_usd``). TurnTimeout after ``left`` seconds (the turn goes on),
    TurnFailed when the session ends first. ``watch`` is called every ``every`` seconds meanwhile: what it raises
    ends the wait (the turn goes on)."""
    deadline = None if left is None else time.monotonic() + left
    while True:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            raise TurnTimeout(
                f"no answer from {agent} within {timeout:g}s; the turn goes on there", hint="agentlaunch status shows it"
            )
        step = remaining if watch is None else (every if remaining is None else min(every, remaining))
        try:
            done = client.reply(step)
            break
        except TimeoutError:
            if watch is not None:
                watch()
    if done is None or done.get("done") is not True:
        raise TurnFailed(f"{agent}'s session ended before the turn did")
    return done


def _hint(reply: dict[str, Any], asking_hint: str) -> str | None:
    if reply.get("bad_input") is True:
        return "docs/scripting.md lists what each interface does with a leading character; --command sends a slash command"
    if reply.get("state") == "asking":
        return asking_hint
    return None
