"""`agentlaunch fork AGENT`: a new session from the agent's conversation, in a tmux window of its own.

The fork is ``agentlaunch run AGENT --fork ID --working-dir DIR`` (the launch starts the CLI's interface on a copy
of session ID's conversation: Claude Code's ``--resume ID --fork-session``, ``codex fork``) in a new window
``AGENT-fork`` of the tmux session the agent's pane is in; the agent itself keeps running. The fork's pane is
the agent's (``@agentlaunch_agent``, so `status`, `send --session` and `tmux down` see it) and says it is a fork
(``@agentlaunch_fork``: the session it started from), so `tmux up AGENT` never takes it for the agent's own pane.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from agentlaunch.errors import UsageError
from agentlaunch.fleet.panes import SESSION_OPTION
from agentlaunch.live.life import AgentPane, agent_panes, live_record, own_given
from agentlaunch.live.tmux import (
    DEFAULT_SESSION,
    FORK_OPTION,
    Tmux,
    _decorate,
    agent_command,
    literal,
    pane_env,
    place_env,
    validate_agents,
)
from agentlaunch.usage.records import SessionRow
from agentlaunch.usage.store import Store


@dataclass(frozen=True)
class ForkPlace:
    """Where a fork was started: its tmux session, window name and pane."""

    session: str
    window: str
    pane_id: str


def main_pane(tmux: Tmux, agent: str) -> AgentPane | None:
    """``agent``'s own pane on this server (not a fork's), a running one first; None when it has none."""
    panes = [p for p in agent_panes(tmux, agent) if not p.pane.fork]
    return min(panes, key=lambda p: p.pane.dead, default=None)


def fork_source(store: Store, agent: str, given: str | None, place: AgentPane | None) -> SessionRow:
    """The session a fork starts from: ``given`` (the agent's own, with a turn), else the session the agent's pane
    runs (or ran), else its running session, else its latest; a usage error when that never had a turn."""
    if given is not None:
        return own_given(store, agent, given, "a fork starts from", "fork")
    sid = place.pane.session_id if place is not None else ""
    if not sid and (record := live_record(agent)) is not None:
        sid = str(record.data.get("session_id") or "")
    row = store.get_session(sid) if sid else store.latest_of_agent(agent, with_turns=False)
    if row is None or row.agent != agent:
        raise UsageError(f"{agent} has no session to fork: start it first (agentlaunch tmux up {agent})")
    if row.turns == 0:
        raise UsageError(
            f"{agent}'s session {row.session_id[:8]} never had a turn: there is no conversation to fork",
            hint=f"send it a prompt first (agentlaunch send {agent} ...)",
        )
    return row


def start_fork(
    tmux: Tmux,
    agent: str,
    row: SessionRow,
    *,
    session: str | None,
    agents_dir: Path,
    templates_dir: Path | None,
    environ: Mapping[str, str] | None = None,
) -> ForkPlace:
    """Start the fork of ``row`` in a new window of ``session`` (created when missing; default: agentlaunch's)."""
    where = session or DEFAULT_SESSION
    agents_dir = agents_dir.expanduser().resolve()
    workdir = Path(row.working_dir)
    validate_agents([agent], agents_dir, working_dirs={agent: workdir})  # the definition, its CLI, its directory
    window = f"{agent}-fork"
    argv = [*agent_command(agent, agents_dir, templates_dir), "--fork", row.session_id, "--working-dir", str(workdir)]
    args = [*pane_env(os.environ if environ is None else environ), *place_env(where, window, "windows")]
    fmt = "#{pane_id}\t#{window_id}"
    head = (
        ["new-window", "-d", "-t", f"={where}:"]
        if tmux.has_session(where)
        else ["new-session", "-d", "-s", where, "-x", "220", "-y", "60"]
    )
    created = tmux.run(*head, "-n", literal(window), "-c", literal(str(workdir)), *args, "-P", "-F", fmt, "--", *argv)
    pane_id, window_id = created.stdout.strip().split("\t")
    tmux.run("set-option", "-p", "-t", pane_id, FORK_OPTION, row.session_id)  # before the agent's: never its own pane
    _decorate(tmux, pane_id, window_id, agent, tiled=False)
    return ForkPlace(where, window, pane_id)


def confirmed_session(
    tmux: Tmux, pane_id: str, store: Store, *, timeout: float, clock: Callable[[], float] = time.monotonic
) -> str | None:
    """The session id the fork's pane runs, once its CLI confirmed it (the store has it), within ``timeout`` s.

    Codex names a new thread itself: until its rollout file is read the launch runs under an id of its own choosing,
    and the pane carried that one first (``c5510a73…``, never a session: ``stop cx --session c5510a73`` said "not
    running"). Claude Code's id is agentlaunch's, recorded at once.
    """
    deadline = clock() + timeout
    while True:
        sid = tmux.run("display-message", "-p", "-t", pane_id, "#{" + SESSION_OPTION + "}", check=False).stdout.strip()
        if sid and store.get_session(sid) is not None:
            return sid
        if clock() >= deadline:
            return None
        time.sleep(0.1)  # poll interval of a wait bounded by the deadline


def fork_pane(tmux: Tmux, agent: str, session_id: str) -> AgentPane | None:
    """The fork pane of ``agent`` that runs (or ran) ``session_id``, if any."""
    return next((p for p in agent_panes(tmux, agent) if p.pane.fork and p.pane.session_id == session_id), None)


def respawn_fork(
    tmux: Tmux,
    place: AgentPane,
    row: SessionRow,
    *,
    agents_dir: Path,
    templates_dir: Path | None,
    environ: Mapping[str, str] | None = None,
) -> str:
    """Start a fork's dead pane again in its own session (`restart AGENT --session ID`); its pane id."""
    agents_dir = agents_dir.expanduser().resolve()
    workdir = Path(row.working_dir)
    validate_agents([place.pane.agent], agents_dir, working_dirs={place.pane.agent: workdir})
    argv = [*agent_command(place.pane.agent, agents_dir, templates_dir), "-r", row.session_id, "--working-dir", str(workdir)]
    args = [*pane_env(os.environ if environ is None else environ), *place_env(place.session, place.pane.window_name, "windows")]
    tmux.run("respawn-pane", "-k", "-t", place.pane.pane_id, "-c", literal(str(workdir)), *args, "--", *argv)
    return place.pane.pane_id
