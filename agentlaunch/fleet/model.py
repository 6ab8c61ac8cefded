"""The fleet as one list of agents: the status records, tmux's panes, the worktree setups, the stop notes and the
agents defined, joined once.

:func:`join` makes the list from what was read (a test hands in records and panes it made); :func:`read_fleet`
reads it all. Each :class:`Agent` is one running session (its record), one pane whose agent died or was stopped,
one worktree setup that failed or runs, one file of the status folder that is no record, or one agent defined
and not running (``stopped`` when a note says `stop` or its budget ended it). A fork is numbered once here
(``cx ⑂ 2``): the `status` table, the deck and ``agentlaunch fleet`` all name it so.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from agentlaunch.fleet import states
from agentlaunch.fleet.records import read_folder, status_folder

if TYPE_CHECKING:  # only mypy reads these
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any

    from agentlaunch.fleet.panes import Listing, Pane, TmuxLike
    from agentlaunch.fleet.records import StatusRecord
    from agentlaunch.fleet.setups import Setup

FORK_MARK = "⑂"


class Agent:
    """One agent of the fleet (one of its sessions, for an agent that runs several: a fork beside it)."""

    __slots__ = ("fork", "key", "name", "note", "number", "pane", "problem", "record", "setup", "state")

    def __init__(
        self,
        key: str,
        name: str,
        state: str,
        *,
        record: StatusRecord | None = None,
        pane: Pane | None = None,
        setup: Setup | None = None,
        note: dict[str, Any] | None = None,
        problem: str | None = None,
        fork: str = "",
    ) -> None:
        self.key, self.name, self.state = key, name, state
        """``key``: unique and stable across reads (``live:<pid>.json``, ``pane:%3``, ``def:NAME``...)."""
        self.record, self.pane, self.setup, self.note, self.problem = record, pane, setup, note, problem
        self.fork = fork  # a fork's: the session it started from (its record's fork_of, or its pane's fork option)
        self.number = 0  # a fork's place among its agent's running sessions: :func:`number_forks`

    @property
    def data(self) -> dict[str, Any]:
        """Its status record's fields (none when it does not run)."""
        return self.record.data if self.record is not None else {}

    @property
    def running(self) -> bool:
        """A running session: its record's agentlaunch process lives."""
        return self.record is not None and not self.record.stale

    @property
    def needs_you(self) -> bool:
        """It runs and needs the person (:func:`~agentlaunch.fleet.states.needs_you`: the one definition)."""
        return self.running and states.needs_you(self.state)

    @property
    def session_id(self) -> str | None:
        sid = self.data.get("session_id") if self.record is not None else (self.pane.session_id if self.pane else None)
        return sid if isinstance(sid, str) and sid else None

    @property
    def working_dir(self) -> str | None:
        wd = self.data.get("working_dir") if self.record is not None else (self.setup.worktree if self.setup else None)
        return wd if isinstance(wd, str) and wd else None

    @property
    def exit_status(self) -> int | None:
        return self.pane.exit_status if self.pane is not None and self.pane.dead else None

    @property
    def label(self) -> str:
        """The agent as every view names it: ``cx``, or ``cx ⑂ 2`` for its fork."""
        return f"{self.name} {FORK_MARK} {self.number}" if self.fork else self.name

    def __repr__(self) -> str:
        return f"Agent({self.key!r}, {self.name!r}, {self.state!r})"


def join(
    records: Sequence[StatusRecord],
    panes: Sequence[Pane] = (),
    *,
    unreadable: Sequence[tuple[str, str]] = (),
    setups: Sequence[Setup] = (),
    names: Iterable[str] = (),
    note: Callable[[str], dict[str, Any] | None] | None = None,
) -> list[Agent]:
    """Every agent, once: a running session per record (stale ones flagged), a pane whose agent died (unless that
    session runs, or the agent runs elsewhere and the pane is not a fork's: then it is its past), a worktree setup
    that failed or runs, a file that is no record, then each agent of ``names`` not seen yet (``stopped`` when
    ``note`` finds `stop`'s note, else ``not running``). Forks are numbered."""
    by_pid = {p.pid: p for p in panes if p.agent and not p.dead}
    agents = []
    for r in records:
        pid = r.data.get("pid")
        pane = by_pid.get(pid) if isinstance(pid, int) else None
        fork = str(r.data.get("fork_of") or "") or (pane.fork if pane else "")
        problem = "its agentlaunch process is gone (stale record)" if r.stale else None
        agents.append(Agent(f"live:{r.name}", r.agent, r.state, record=r, pane=pane, problem=problem, fork=fork))
    running = {a.name for a in agents if a.running}
    sessions = {(a.name, a.session_id or "") for a in agents if a.running}
    for pane in panes:
        # a dead pane of an agent running elsewhere is its past; a fork's (a session of its own) shows unless it runs
        if not pane.agent or not pane.dead or (pane.agent in running and not pane.fork):
            continue
        if (pane.agent, pane.session_id) in sessions:
            continue
        agents.append(Agent(f"pane:{pane.pane_id}", pane.agent, states.pane_state(pane), pane=pane, fork=pane.fork))
    for s in setups:
        state = states.SETTING_UP if s.running else states.SETUP_FAILED
        agents.append(Agent(f"setup:{s.agent}:{s.worktree}", s.agent, state, setup=s))
    for file, why in unreadable:
        agents.append(Agent(f"bad:{file}", file.removesuffix(".json"), states.UNREADABLE, problem=f"status record {file} {why}"))
    shown = {a.name for a in agents}
    for name in names:
        if name in shown:
            continue
        said = note(name) if note is not None else None
        agents.append(Agent(f"def:{name}", name, states.STOPPED if said else states.NOT_RUNNING, note=said))
    number_forks(agents)
    return agents


def number_forks(agents: Sequence[Agent]) -> None:
    """Give each fork its number (``cx ⑂ 2``): its place among its agent's running sessions by their start (the first
    is 1); a fork that does not run (a dead pane, a stale record) comes after them, in the order of its pane."""
    running: dict[str, list[Agent]] = {}
    for agent in agents:
        if agent.running:
            running.setdefault(agent.name, []).append(agent)
    for mine in running.values():
        mine.sort(key=lambda a: (str(a.data.get("started") or ""), a.key))
    ended: dict[str, int] = {}
    for agent in sorted((a for a in agents if a.fork), key=lambda a: _pane_order(a.pane.pane_id if a.pane else None)):
        mine = running.get(agent.name, [])
        place = next((i for i, a in enumerate(mine, 1) if a is agent), None)
        if place is None:
            ended[agent.name] = ended.get(agent.name, len(mine)) + 1
            place = ended[agent.name]
        agent.number = place


def _pane_order(pane: str | None) -> int:
    return int(pane[1:]) if pane and pane[1:].isdigit() else 1 << 30


def labels(records: Sequence[StatusRecord]) -> list[str]:
    """Each record's agent's name for that session (``cx ⑂ 2`` for a fork), as the fleet numbers it, in order."""
    return [a.label for a in join(records)]  # a record is one agent each, in the order given


class Fleet:
    """What was read, and the agents joined from it."""

    __slots__ = ("agents", "problems", "records", "setups", "tmux")

    def __init__(
        self, agents: list[Agent], records: list[StatusRecord], tmux: Listing | None, setups: list[Setup], problems: list[str]
    ) -> None:
        self.agents, self.records, self.tmux, self.setups, self.problems = agents, records, tmux, setups, problems

    @property
    def dead(self) -> list[Pane]:
        """Every agent pane whose agent died or was stopped (``status`` lists each)."""
        return self.tmux.dead if self.tmux is not None else []


def read_fleet(
    state_dir: str | os.PathLike[str] | None = None,
    *,
    tmux: TmuxLike | None = None,
    listing: Listing | None = None,
    names: Iterable[str] = (),
    with_setups: bool = True,
    clean: bool = False,
) -> Fleet:
    """The fleet now: the records of ``state_dir`` (the user's), the panes of ``tmux`` (or a ``listing`` already
    made; none without either), its worktree setups and notes, and the agents ``names`` defines."""
    from agentlaunch.fleet.notes import read_note
    from agentlaunch.fleet.panes import PaneListing
    from agentlaunch.fleet.setups import setups

    pending = PaneListing(tmux) if listing is None and tmux is not None else None  # tmux answers meanwhile
    records, unreadable = read_folder(status_folder(state_dir), clean=clean)
    found = setups(state_dir) if with_setups else []
    listing = pending.result() if pending is not None else listing
    problems = [listing.problem] if listing is not None and listing.problem else []
    agents = join(
        records,
        listing.panes if listing is not None else (),
        unreadable=unreadable,
        setups=found,
        names=names,
        note=lambda name: read_note(name, state_dir),
    )
    return Fleet(agents, records, listing, found, problems)


def sessions_of(agent: str, state_dir: str | os.PathLike[str] | None = None) -> list[StatusRecord]:
    """``agent``'s records (its running sessions, and any whose process is gone: ``stale``)."""
    return [r for r in read_folder(status_folder(state_dir), clean=False)[0] if r.agent == agent]


def running(state_dir: str | os.PathLike[str] | None = None) -> list[StatusRecord]:
    """Every running session's record (none stale), by agent then start."""
    return [r for r in read_folder(status_folder(state_dir), clean=False)[0] if not r.stale]


def running_by_pid(state_dir: str | os.PathLike[str] | None = None) -> dict[object, dict[str, Any]]:
    """pid of an agentlaunch -> its running session's record: what a pane runs, found by the pane's pid."""
    return {r.data.get("pid"): r.data for r in running(state_dir)}
