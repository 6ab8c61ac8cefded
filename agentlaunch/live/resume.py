"""Bringing a team back after a reboot: each agent's latest session, in the tmux place it ran in.

A launch started by ``tmux up`` records, in its session row, the tmux session,
window and layout of its pane (:mod:`agentlaunch.usage.recorder`).
``tmux up --resume AGENT...`` asks the store for each agent's most recent
session that had a turn and starts ``agentlaunch run AGENT -r ID --working-dir
DIR`` in that tmux session and layout; an agent without one starts fresh, and
is said to.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agentlaunch.live.tmux import DEFAULT_SESSION, LAYOUTS, SAFE_NAME
from agentlaunch.usage.records import SessionRow
from agentlaunch.usage.store import Store


@dataclass(frozen=True)
class Comeback:
    """One agent's way back: where (tmux session, layout), and which session (None: a fresh one)."""

    agent: str
    session: str
    layout: str
    row: SessionRow | None

    @property
    def run_args(self) -> list[str]:
        """What `agentlaunch run AGENT` gets to resume the session in its directory (nothing for a fresh start)."""
        return [] if self.row is None else ["-r", self.row.session_id, "--working-dir", self.row.working_dir]

    def said(self) -> str:
        """One line for the person: what is brought back, or that it starts fresh."""
        if self.row is None:
            return f"{self.agent}: no earlier session with a turn: starting fresh"
        title = f" “{self.row.title}”" if self.row.title else ""
        turns = f"{self.row.turns} turn{'s' if self.row.turns != 1 else ''}"
        return f"{self.agent}: resuming session {self.row.session_id[:8]}{title} ({turns}) in {self.row.working_dir}"


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
        plans.append(Comeback(agent, where, how, row))
    return plans


def working_dirs(plans: Sequence[Comeback]) -> dict[str, Path]:
    """The directories the resumed agents run in, for the checks before anything is created."""
    return {p.agent: Path(p.row.working_dir) for p in plans if p.row is not None}
