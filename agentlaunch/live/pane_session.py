"""The session a tmux pane ran, found again in the store: what ``up`` and ``restart`` resume in that pane.

Both the team's comeback (:mod:`agentlaunch.live.tmux`, when ``up`` restarts a dead pane) and ``restart``
(:mod:`agentlaunch.live.life`) ask it; it reads only the store, so it sits below both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentlaunch.usage.records import SessionRow
    from agentlaunch.usage.store import Store


def own_session(store: Store, agent: str, pane_session: str, tmux_session: str, window: str) -> SessionRow | None:
    """The session a pane of ``agent`` ran, to restart it in: the one the pane names, else the latest of its place.

    The launch names its session on its pane (``@agentlaunch_session``); only a pane from before that
    option falls back to the agent's latest session recorded in the same tmux session and window. Only a
    session that had a turn can be resumed: None when there is none (the pane starts fresh, and is said to).
    """
    if pane_session:  # the pane's own: a session that never had a turn has nothing to resume
        row = store.get_session(pane_session)
        return row if row is not None and row.agent == agent and row.turns > 0 else None
    for row in store.list_sessions(agent):
        if row.turns > 0 and row.tmux_session == tmux_session and row.tmux_window == window:
            return row
    return None
