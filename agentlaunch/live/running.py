"""The running session of an agent, as ``send``, ``answer`` and ``resume-budget`` reach it: its status record."""

from __future__ import annotations

from pathlib import Path

from agentlaunch.errors import PromptNotTaken, UsageError
from agentlaunch.fleet.model import sessions_of
from agentlaunch.fleet.records import StatusRecord
from agentlaunch.live.known import refuse_unknown
from agentlaunch.live.life import what_happened


def running_session(agent: str, session: str | None, agents_dir: Path | None = None) -> StatusRecord:
    """The status record of ``agent``'s running session (the one whose id starts with ``session``, if given).

    A name that is no agent at all (a typo) gets ``run``'s message instead of "not running" (exit 3).
    """
    records = sessions_of(agent)
    live = [r for r in records if not r.stale]
    if session is not None:
        live = [r for r in live if str(r.data.get("session_id", "")).startswith(session)]
    if not live:
        which = f" with a session starting {session!r}" if session is not None else ""
        dead = " (its last session ended without closing: its agentlaunch process is gone)" if records else ""
        if session is None and (stopped := what_happened(agent)):  # `stop` left a note: say what happened
            raise PromptNotTaken(stopped)
        if not records:
            refuse_unknown(agent, agents_dir)
        raise PromptNotTaken(f"{agent} is not running{which}{dead}", hint="agentlaunch status lists the running agents")
    if len(live) > 1:
        sessions = ", ".join(f"{r.data.get('session_id')} in {r.data.get('working_dir')}" for r in live)
        raise UsageError(f"{agent} runs {len(live)} sessions ({sessions}); name one with --session ID")
    return live[0]
