"""Bringing a team back after a reboot: each agent's latest session, in the tmux place it ran in.

A launch started by ``tmux up`` records, in its session row, the tmux session,
window and layout of its pane (:mod:`agentlaunch.usage.recorder`).
``tmux up --resume AGENT...`` asks the store for each agent's most recent
session that had a turn and starts ``agentlaunch run AGENT -r ID --working-dir
DIR`` in that tmux session and layout; an agent without one starts fresh, and
is said to. A session whose worktree was removed since (merged) comes back in
a new worktree (:mod:`agentlaunch.live.comeback`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentlaunch.live.tmux import DEFAULT_SESSION, LAYOUTS, SAFE_NAME, TeamUp, Tmux, plan_up
from agentlaunch.usage.records import SessionRow
from agentlaunch.usage.store import Store

if TYPE_CHECKING:
    from agentlaunch.live.comeback import WayBack


@dataclass(frozen=True)
class Comeback:
    """One agent's way back: where (tmux session, layout), and which session (None: a fresh one).

    ``longer`` is a session of the same pane (same tmux session and window) with more turns than
    ``row``: it is not chosen over the latest, but said, with the command that resumes it instead.
    ``way`` is where ``row`` comes back (its folder, or a new worktree when its own was removed).
    """

    agent: str
    session: str
    layout: str
    row: SessionRow | None
    longer: SessionRow | None = None
    way: WayBack | None = None

    def said(self) -> str:
        """One line for the person: what is brought back, or that it starts fresh."""
        if self.row is None:
            return f"{self.agent}: no earlier session with a turn: starting fresh"
        if self.way is not None and not self.way.resumed:
            return f"{self.agent}: starting a new session {self.way.where()}: {self.way.why_new}"
        title = f" “{self.row.title}”" if self.row.title else ""
        turns = f"{self.row.turns} turn{'s' if self.row.turns != 1 else ''}"
        where = self.way.where() if self.way is not None else f"in {self.row.working_dir}"
        line = f"{self.agent}: resuming session {self.row.session_id[:8]}{title} ({turns}) {where}"
        if self.longer is not None:
            line += (
                f"; a longer session of the same pane, {self.longer.session_id[:8]} ({self.longer.turns} turns, last used "
                f"{self.longer.last_used.astimezone():%Y-%m-%d %H:%M}), is not the latest: to resume it instead, "
                f"agentlaunch restart {self.agent} --session {self.longer.session_id}"
            )
        return line


def turns_text(row: SessionRow) -> str:
    """``1 turn`` / ``12 turns``."""
    return f"{row.turns} turn{'s' if row.turns != 1 else ''}"


def same_pane_longer(store: Store, row: SessionRow) -> SessionRow | None:
    """The session with the most turns that ran in ``row``'s tmux session and window, when it has more than ``row``."""
    if row.tmux_session is None:
        return None
    mates = [
        r
        for r in store.list_sessions(row.agent)
        if r.tmux_session == row.tmux_session and r.tmux_window == row.tmux_window and r.session_id != row.session_id
    ]
    best = max(mates, key=lambda r: (r.turns, r.last_used), default=None)
    return best if best is not None and best.turns > row.turns else None


def plan_comebacks(
    store: Store, agents: Sequence[str], *, session: str | None = None, layout: str | None = None
) -> list[Comeback]:
    """Each agent's comeback: its latest session with a turn, in the tmux session and layout it ran in.

    An explicit ``session`` or ``layout`` puts every agent there instead; a place
    recorded by someone else's file that tmux would misread falls back to the default.
    """
    plans = []
    for agent in dict.fromkeys(agents):
        row = store.latest_of_agent(agent, with_turns=True)
        if session is not None:  # asked for: checked (and refused if bad) by `up` like any other
            where = session
        else:
            where = row.tmux_session if row and row.tmux_session else DEFAULT_SESSION
            if not SAFE_NAME.fullmatch(where):  # a store is anyone's file: a name tmux would misread is not used
                where = DEFAULT_SESSION
        how = layout or (row.tmux_layout if row and row.tmux_layout in LAYOUTS else "windows")
        plans.append(Comeback(agent, where, how, row, same_pane_longer(store, row) if row else None))
    return plans


def ways_of(plans: Sequence[Comeback]) -> dict[str, WayBack]:
    """agent -> where its session comes back, for the agents that resume one."""
    return {p.agent: p.way for p in plans if p.way is not None}


def plan_places(
    tmux: Tmux,
    places: Mapping[tuple[str, str], Sequence[Comeback]],
    *,
    agents_dir: Path,
    templates_dir: Path | None,
    worktree: bool,
    fresh: bool,
) -> list[TeamUp]:
    """``tmux up``'s plan for each (tmux session, layout): its agents, each resumed one with where its session comes
    back; every agent checked, nothing created yet."""
    return [
        plan_up(
            tmux,
            [p.agent for p in group],
            session=where,
            layout=how,
            agents_dir=agents_dir,
            templates_dir=templates_dir,
            worktree=worktree,
            ways=ways_of(group),
            fresh=fresh,
        )
        for (where, how), group in places.items()
    ]
