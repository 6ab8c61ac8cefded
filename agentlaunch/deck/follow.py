"""Which agent the person chose, whatever the list did since: the selection, a confirmed key and Tab follow the agent.

A row is known by its agent and session (:attr:`~agentlaunch.deck.rows.Row.ident`), not by its place: after `x`
the stopped row sorts lower and becomes a dead pane's row, and the next key must still reach that agent. A key
that ends, restarts, merges or removes something asks about the agent by name, and on `y` acts on the row of
that agent and session as the list stands then (read again), or refuses saying what changed. Tab walks the
agents that block on the person, then those that ended a turn the person has not looked at since.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from agentlaunch.deck.rows import Row, is_red


def line_key(row: Row, taken: set[str]) -> str:
    """The list's key for ``row``: its agent and session (made unique with the row's own key when two rows share them,
    a stale record beside its agent's new one, say)."""
    key = f"{row.who}\x1f{row.session_id or ''}"
    if key in taken:
        key = f"{key}\x1f{row.key}"
    taken.add(key)
    return key


def current(rows: Iterable[Row], chosen: Row) -> Row | None:
    """The row of ``chosen``'s agent and session in ``rows`` (a live one first), or None when it is gone. A row chosen
    before its session was known (a pane whose record had not come yet) is its agent's only row, once it has one."""
    rows = list(rows)
    same = [r for r in rows if r.ident == chosen.ident]
    if not same and not chosen.session_id:
        mine = [r for r in rows if r.who == chosen.who]
        same = mine if len(mine) == 1 else []
    return min(same, key=lambda r: not r.live, default=None)


def why_not(rows: Sequence[Row], chosen: Row) -> str:
    """Why a key confirmed for ``chosen`` does nothing: its row is gone, or its agent now runs another session."""
    session = f" (session {chosen.session_id[:8]})" if chosen.session_id else ""
    others = [r for r in rows if r.who == chosen.who]
    if not others:
        return f"{chosen.label}{session} left the list since you chose it (its status record is gone): nothing done"
    now = others[0]
    what = f"{now.state}" + (f", session {now.session_id[:8]}" if now.session_id else "")
    return f"{chosen.label}{session} changed since you chose it (now {what}): nothing done; choose it again"


def session_args(rows: Sequence[Row], row: Row) -> list[str]:
    """``--session ID`` when ``row`` is one of several sessions of its agent (a fork, or the agent beside its fork):
    the command then reaches that session, not the agent's own pane or a refusal to choose."""
    several = row.fork or sum(1 for r in rows if r.who == row.who and r.live) > 1
    return ["--session", row.session_id] if several and row.session_id else []


def blocks(row: Row) -> bool:
    """The agent waits on the person: asking, stalled, retrying, paused, or dead."""
    return is_red(row.state) or row.state.startswith("dead")


def ended_a_turn(row: Row) -> bool:
    """The agent waits at its prompt because its last turn ended (the record's ``done``): it has news."""
    return row.live and row.state == "waiting" and row.record.get("done") is True


class Seen:
    """When the person last looked at each agent (its row selected, its pane attached), by agent and session."""

    def __init__(self) -> None:
        self.at: dict[tuple[str, str], datetime] = {}
        self.tabbed: tuple[str, str] | None = None  # where Tab went last: it goes on from there

    def look(self, row: Row | None, now: datetime | None = None) -> None:
        if row is not None:
            self.at[row.ident] = now or datetime.now(UTC)

    def news(self, row: Row) -> bool:
        """``row`` ended a turn the person has not looked at since."""
        if not ended_a_turn(row):
            return False
        seen = self.at.get(row.ident)
        return seen is None or (row.since is not None and seen < row.since)

    def next_for_tab(self, shown: Sequence[Row], selected: Row | None) -> Row | None:
        """The next agent for Tab after ``selected``: those that block on the person (in the list's order), then those
        with news; never an idle agent already seen. None when there is no other."""
        blocking = [r for r in shown if blocks(r)]
        came_by_tab = selected is not None and selected.ident == self.tabbed
        news = [r for r in shown if not blocks(r) and (self.news(r) or (r is selected and came_by_tab))]
        order = blocking + news
        at = next((i for i, r in enumerate(order) if r is selected), -1)
        found = next((r for r in order[at + 1 :] + order[: at + 1] if r is not selected), None)
        if found is not None:
            self.tabbed = found.ident
        return found
