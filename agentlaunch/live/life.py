"""One agent's life on its own: `stop` ends its CLI cleanly, `restart` brings it back in its session.

A stop is agentlaunch's own clean end, SIGTERM to the agent's launch (exit 143): the CLI is ended, the
session recorded and resumable. A launch that `tmux up` started leaves its pane dead and kept
(``remain-on-exit failed``), with the reason as its title; a note in the state directory remembers what
happened, so `send` and `restart` can say it after the launch is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentlaunch import paths
from agentlaunch.errors import AgentlaunchError, PromptNotTaken, UsageError
from agentlaunch.fleet.model import sessions_of
from agentlaunch.fleet.notes import STOPPED_DIR, note_file, read_note
from agentlaunch.fleet.panes import Pane, panes_of
from agentlaunch.fleet.records import StatusRecord
from agentlaunch.fleet.states import STOPPED_OPTION
from agentlaunch.fsutil import PRIVATE_FILE_MODE, private_dir, write_atomic
from agentlaunch.live.pane_session import own_session
from agentlaunch.live.status import LINE_OPTION, process_running
from agentlaunch.live.tmux import Tmux, TmuxError, literal

if TYPE_CHECKING:  # the store is opened by the callers; the deck's rows read notes without loading it
    from agentlaunch.usage.records import SessionRow
    from agentlaunch.usage.store import Store

__all__ = ["STOPPED_DIR", "STOPPED_OPTION", "read_note"]  # the note is read by the fleet (agentlaunch.fleet.notes)


class AgentNotRunning(PromptNotTaken):
    """`stop` of an agent that is not running: exit 7, as `send` to one."""


@dataclass(frozen=True)
class Stopped:
    """What `stop` did: the agent, the session it ran (resumable), and the tmux pane it left (if any)."""

    agent: str
    session_id: str | None
    pane: str | None
    tmux_session: str | None
    ended: bool


@dataclass(frozen=True)
class AgentPane:
    """A pane of ``agent`` on a tmux server, with its tmux session."""

    session: str
    pane: Pane


def note_path(agent: str, state_dir: Path | None = None) -> Path:
    return Path(note_file(agent, state_dir))


def write_note(agent: str, data: dict[str, Any], state_dir: Path | None = None) -> None:
    """Remember why ``agent`` is not running (a convenience: a full disk never fails the stop)."""
    path = note_path(agent, state_dir)
    with contextlib.suppress(OSError):
        private_dir(path.parent)
        write_atomic(path, (json.dumps(data) + "\n").encode(), mode=PRIVATE_FILE_MODE)


def clear_note(agent: str, state_dir: Path | None = None) -> None:
    with contextlib.suppress(OSError):
        note_path(agent, state_dir).unlink()


def note_budget(agent: str, session_id: str, message: str, state_dir: Path | None = None) -> None:
    """Remember that a budget ended ``agent``'s session (``message``: the budget's own words), for `send` and `stop`."""
    at = datetime.now(UTC).isoformat(timespec="seconds")
    write_note(
        agent,
        {
            "agent": agent,
            "session_id": session_id,
            "at": at,
            "reason": "budget",
            "message": message.removeprefix("budget: stopped the agent: "),
        },
        state_dir,
    )


def what_happened(agent: str, state_dir: Path | None = None) -> str | None:
    """One phrase for an agent that is not running because `stop` or its budget ended it, else None."""
    note = read_note(agent, state_dir)
    if note is None:
        return None
    sid = str(note.get("session_id") or "")
    at = str(note.get("at") or "")
    when = f" at {at[11:16]} UTC" if len(at) >= 16 else ""
    session = f"; its session {sid[:8]} is resumable" if sid else ""
    if note.get("reason") == "budget":
        spent = str(note.get("message") or "its budget is spent")[:300]
        return (
            f"{agent} was stopped by its budget{when}: {spent}{session}: raise the budget (agent.yaml, "
            f"--budget-usd), then agentlaunch restart {agent}"
        )
    return f"{agent} was stopped (agentlaunch stop{when}){session}: agentlaunch restart {agent} brings it back"


def agent_panes(tmux: Tmux, agent: str) -> list[AgentPane]:
    """Every pane of ``agent`` on this server (none when no server runs), as the fleet lists them."""
    return [AgentPane(p.tmux_session, p) for p in panes_of(tmux, agent)]


def live_record(agent: str, session: str | None = None) -> StatusRecord | None:
    """``agent``'s running session's record (the one whose id starts with ``session``, if given); a usage error when
    it runs several (a fork beside it, say) and none is named: which to stop is not guessed."""
    live = [r for r in sessions_of(agent) if not r.stale]
    if session is not None:
        live = [r for r in live if str(r.data.get("session_id") or "").startswith(session)]
    if len(live) > 1:
        sessions = ", ".join(str(r.data.get("session_id") or "?")[:8] for r in live)
        raise UsageError(f"{agent} runs {len(live)} sessions ({sessions}); name one with --session ID")
    return live[0] if live else None


def stop_agent(
    tmux: Tmux | None,
    agent: str,
    *,
    timeout: float,
    session: str | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Stopped:
    """End ``agent``'s launch cleanly (SIGTERM), wait up to ``timeout`` s, and leave its pane with the reason."""
    record = live_record(agent, session)
    if record is None:
        said = what_happened(agent) if session is None else None
        which = f" in a session starting {session!r}" if session is not None else ""
        raise AgentNotRunning(
            said or f"{agent} is not running{which}: nothing to stop", hint="agentlaunch status lists the running agents"
        )
    pid = int(record.data["pid"])
    sid = record.data.get("session_id") if isinstance(record.data.get("session_id"), str) else None
    found = next((p for p in agent_panes(tmux, agent) if p.pane.pid == pid), None) if tmux is not None else None
    at = datetime.now(UTC).isoformat(timespec="seconds")
    write_note(
        agent,
        {
            "agent": agent,
            "session_id": sid,
            "at": at,
            "reason": "agentlaunch stop",
            "pane": found.pane.pane_id if found else None,
        },
    )
    if found is not None and tmux is not None:  # marked before the signal: no reader sees it dead and unmarked
        with contextlib.suppress(TmuxError):
            tmux.run("set-option", "-p", "-t", found.pane.pane_id, STOPPED_OPTION, f"{pid} {at}")
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)  # agentlaunch's clean end: the CLI ended, the session recorded (exit 143)
    deadline = clock() + timeout
    while process_running(pid) and clock() < deadline:
        time.sleep(0.05)  # poll interval of a wait bounded by the deadline
    ended = not process_running(pid)
    if found is not None and tmux is not None and ended:
        again = f"{agent} --session {_short(sid)}" if found.pane.fork and sid else agent  # a fork's pane: its own session
        title = f"{agent} · stopped (agentlaunch stop) · agentlaunch restart {again} resumes it"
        with contextlib.suppress(TmuxError):  # the pane may have closed meanwhile: the stop itself is done
            tmux.sequence(
                [
                    ["select-pane", "-t", found.pane.pane_id, "-T", literal(title)],
                    ["set-option", "-p", "-t", found.pane.pane_id, LINE_OPTION, title],
                ]
            )  # the border shows it
    return Stopped(agent, sid, found.pane.pane_id if found else None, found.session if found else None, ended)


def _short(session_id: str) -> str:
    """A start of ``session_id`` no other session shares (Codex's ids share their first 8 characters for a minute)."""
    from agentlaunch.usage.session_ids import unique_prefix
    from agentlaunch.usage.store import Store

    with contextlib.suppress(AgentlaunchError), Store.open(paths.store_path()) as store:
        return unique_prefix(store, session_id)
    return session_id


def chosen_session(store: Store, agent: str, given: str | None, place: AgentPane | None) -> SessionRow | None:
    """The session `restart` resumes: ``given`` (an id or unique start, of this agent, with a turn), else the pane's own."""
    if given is None:
        if place is None:
            return None
        return own_session(store, agent, place.pane.session_id, place.session, place.pane.window_name)
    return own_given(store, agent, given, "restart resumes", "resume")


def own_given(store: Store, agent: str, given: str, does: str, verb: str) -> SessionRow:
    """The session ``given`` names (an id or unique start): ``agent``'s own, with a turn; else a usage error saying
    why (``does``/``verb``: what the command does with it, for the message)."""
    rows = store.sessions_by_prefix(given, limit=2)
    if not rows:
        raise UsageError(f"no session {given!r}: agentlaunch sessions {agent} lists {agent}'s")
    if len(rows) > 1 and rows[0].session_id != given:
        raise UsageError(f"{given!r} starts more than one session id: give more of it")
    row = rows[0]
    if row.agent != agent:
        raise UsageError(f"session {row.session_id} is {row.agent}'s, not {agent}'s: {does} an agent's own sessions")
    if row.turns == 0:
        raise UsageError(f"session {row.session_id} never had a turn: there is nothing to {verb}")
    return row
