"""`agentlaunch tmux down`: every agent of a tmux session ended cleanly (SIGTERM), then the session.

Each agent's session stays resumable; the session each pane ran is read from the fleet first
(:func:`agentlaunch.fleet.model.running_by_pid`), so ``down`` can say it.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from agentlaunch.fleet.model import running_by_pid
from agentlaunch.live.tmux import Tmux, TmuxError, check_name
from agentlaunch.processes import process_running


@dataclass
class DownResult:
    ended: list[str] = field(default_factory=list)
    still_running: list[str] = field(default_factory=list)
    sessions: dict[str, str] = field(default_factory=dict)  # agent -> the session id its pane ran (from its status record)


def down(
    tmux: Tmux,
    session: str,
    *,
    timeout: float = 20.0,
    clock: Callable[[], float] = time.monotonic,
    on_wait: Callable[[list[str]], None] | None = None,
) -> DownResult:
    """End every agent in ``session`` with SIGTERM (their sessions stay resumable), wait, then kill the session."""
    check_name(session, "tmux session")
    if not tmux.has_session(session):
        raise TmuxError(f"no tmux session {session!r}" + (f" on socket {tmux.socket!r}" if tmux.socket else ""))
    result = DownResult()
    live = [p for p in tmux.panes(session) if p.agent and not p.dead and p.pid > 0]
    records = running_by_pid()
    for pane in live:
        record = records.get(pane.pid)
        if record is not None and isinstance(record.get("session_id"), str):
            result.sessions[pane.agent] = record["session_id"]
    for pane in live:
        # SIGTERM is agentlaunch's clean stop (exit 143): it ends the CLI, frees the
        # instructions file and records the session, which stays resumable with -c/-r.
        try:
            os.kill(pane.pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        except PermissionError as exc:
            raise TmuxError(f"cannot signal agent {pane.agent!r} (pid {pane.pid}): {exc.strerror}") from None
    deadline = clock() + timeout
    # A zombie counts as ended: its parent, the tmux server, may reap it late.
    waiting = [p for p in live if process_running(p.pid)]
    while waiting and clock() < deadline:
        if on_wait is not None:
            on_wait([p.agent for p in waiting])
        time.sleep(0.05)  # poll interval of a wait bounded by the deadline
        waiting = [p for p in waiting if process_running(p.pid)]
    result.still_running = [p.agent for p in waiting]
    result.ended = [p.agent for p in live if p not in waiting]
    if tmux.has_session(session):
        tmux.run("kill-session", "-t", f"={session}")
    return result
