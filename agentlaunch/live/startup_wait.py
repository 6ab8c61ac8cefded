"""After ``tmux up`` has created the panes: did each agent really start?

A pane runs ``agentlaunch run AGENT`` directly, so the pane's pid is the
agentlaunch that writes the agent's status record (``<pid>.json``). An agent
counts as started once its record says ``waiting``, ``asking`` or a turn
(``thinking``, ``tool``, or any turn counted), never while it says ``starting``
(a native interface says so until its CLI reports that it is up, at most the
launch's ``ready_timeout``, then ``asking``) and its pane, and its provider
CLI where one runs between turns, are still alive :data:`SETTLE` seconds
later: a CLI that exits at once (a bad flag, a missing licence) is caught in
that time, agentlaunch then ends and its pane dies. An agent fails when its
pane dies (tmux keeps it, with ``remain-on-exit failed``, so its error stays
readable; the error is read back with ``capture-pane``), or when its pane
closes. Whatever has not decided when the wait is over is reported as not
started, and counts as a failure: ``up`` promised a running agent.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agentlaunch.fleet.model import running_by_pid
from agentlaunch.fleet.panes import list_panes
from agentlaunch.fleet.states import STARTED_STATES
from agentlaunch.processes import process_running
from agentlaunch.visible import visible

if TYPE_CHECKING:
    from agentlaunch.fleet.setups import Setup
    from agentlaunch.live.tmux import Tmux

SETTLE = 1.5  # seconds an agent must stay alive after saying it started
POLL = 0.1  # seconds between two looks at the panes and records (a wait bounded by --wait)
STATUS_GRACE = 1.0  # seconds to wait for tmux to know a dead pane's exit status
ERROR_CHARS = 400  # the error shown from a dead pane, at most


@dataclass
class AgentStart:
    """What became of one agent's pane: ``started`` True/False and what to say about it."""

    agent: str
    pane_id: str
    started: bool
    detail: str
    state: str | None = None


def pane_error(text: str) -> str:
    """The error a dead pane shows: its ``error:`` lines (and hints), else its last lines, on one line."""
    lines = [visible(line).strip() for line in text.splitlines()]
    lines = [line for line in lines if line and not line.startswith("Pane is dead")]
    errors = [i for i, line in enumerate(lines) if line.startswith("error:")]
    if errors:
        # The last run's error block (a restarted pane may still show an earlier run's), and the lines after it.
        start = errors[-1]
        while start > 0 and lines[start - 1].startswith("error:"):
            start -= 1
        picked = lines[start : start + 6]
    else:
        picked = lines[-3:]
    said = " ".join(picked) or "(the pane shows nothing)"
    return said if len(said) <= ERROR_CHARS else said[: ERROR_CHARS - 1] + "…"


class PaneSource(Protocol):
    """What the wait needs of tmux, so a test can hand in its own.

    A source whose ``real_pids`` is True (:class:`TmuxPanes`) says each pane's pid is a process of this machine
    that ends when its pane dies or closes: then a look whose panes' processes all still run needs no new
    listing (:meth:`StartWatch.look`). A source without it is listed at every look.
    """

    def panes(self) -> dict[str, tuple[int, bool, str]]:
        """pane id -> (pid, dead, dead status) of every pane in the session."""
        ...

    def screen(self, pane_id: str) -> str:
        """What the pane shows, with some scrollback."""
        ...


class TmuxPanes:
    """The panes of one session of a :class:`~agentlaunch.live.tmux.Tmux` server (every session's, ``session`` None)."""

    real_pids = True  # a pane runs agentlaunch itself: its process ends when the pane dies or is closed

    def __init__(self, tmux: Tmux, session: str | None = None) -> None:
        self.tmux, self.session = tmux, session

    def panes(self) -> dict[str, tuple[int, bool, str]]:
        """pane id -> (pid, dead, dead status) of every pane in the session (on the server)."""
        panes = list_panes(self.tmux, self.session).panes
        return {p.pane_id: (p.pid, p.dead, "" if p.exit_status is None else str(p.exit_status)) for p in panes if p.pid}

    def screen(self, pane_id: str) -> str:
        return self.tmux.run("capture-pane", "-p", "-J", "-S", "-200", "-t", pane_id, check=False).stdout


RecordSource = Callable[[], Mapping[object, Mapping[str, Any]]]
"""pid of an agentlaunch -> its status record's data: every running agent's (a test hands in its own)."""


def live_records(status_dir: Path | None = None) -> dict[object, dict[str, Any]]:
    """pid -> record of every running session (the fleet's: :func:`agentlaunch.fleet.model.running_by_pid`)."""
    return running_by_pid(status_dir.parent if status_dir is not None else None)


class StartWatch:
    """What became of each pane added, one look at a time; each agent's wait runs from when its pane was added.

    An agent is *starting* (:meth:`starting`) until its record first says it started or it is decided (failed,
    its pane closed, or its wait over); it is *decided* once alive for ``settle`` seconds after that, or failed.
    """

    def __init__(
        self, timeout: float, *, settle: float = SETTLE, status_dir: Path | None = None, records: RecordSource | None = None
    ) -> None:
        self.timeout, self.settle, self.status_dir = timeout, settle, status_dir
        self.records = records or (lambda: live_records(status_dir))
        self.panes: dict[str, str] = {}  # agent -> pane id, in the order added
        self.deadline: dict[str, float] = {}
        self.decided: dict[str, AgentStart] = {}
        self.seen_started: dict[str, tuple[float, str]] = {}
        self.cli_died: set[str] = set()
        self.dead_since: dict[str, float] = {}
        self.listing: dict[str, tuple[int, bool, str]] | None = None  # the panes at the last listing
        self.listings = 0

    def add(self, agent: str, pane_id: str, now: float) -> None:
        self.panes[agent] = pane_id
        self.deadline[agent] = now + self.timeout

    def starting(self, agent: str) -> bool:
        """Not yet said to have started, nor decided: it holds its place among the agents starting."""
        return agent not in self.decided and agent not in self.seen_started

    def done(self) -> bool:
        return len(self.decided) == len(self.panes)

    def look(self, source: PaneSource, now: float) -> None:
        """One look at the panes and records: decide what can be."""
        live = self._panes(source)
        records = self.records()
        for agent, pane_id in self.panes.items():
            if agent in self.decided:
                continue
            over = now >= self.deadline[agent]
            if pane_id not in live:
                said = "its pane closed: agentlaunch ended before the agent started"
                self.decided[agent] = AgentStart(agent, pane_id, False, said)
            elif live[pane_id][1]:
                self._dead(source, agent, pane_id, live[pane_id][2], now, over)
            else:
                self._alive(agent, records.get(live[pane_id][0]), now)
            if over and agent not in self.decided:
                self.decided[agent] = self._at_deadline(agent, pane_id, live.get(pane_id, (0, False, ""))[0])

    def _panes(self, source: PaneSource) -> dict[str, tuple[int, bool, str]]:
        """The panes: listed again unless every undecided agent's pane was listed alive and its process still runs.

        A team of 20 starting takes some 250 looks; a ``tmux list-panes`` each (a process, and the server's work)
        was most of `tmux up`'s CPU while the team started, which the agents starting beside it wait for.
        """
        listing = self.listing
        if listing is not None and getattr(source, "real_pids", False):
            wanted = [self.panes[agent] for agent in self.panes if agent not in self.decided]
            if all(p in listing and not listing[p][1] and process_running(listing[p][0]) for p in wanted):
                return listing
        self.listing = source.panes()
        self.listings += 1
        return self.listing

    def _dead(self, source: PaneSource, agent: str, pane_id: str, status: str, now: float, over: bool) -> None:
        # tmux learns the exit status once it reaps the process: give it a moment to say.
        if not status and now - self.dead_since.setdefault(agent, now) < STATUS_GRACE and not over:
            return
        code = f" (exit {status})" if status else ""
        self.decided[agent] = AgentStart(agent, pane_id, False, f"failed{code}: {pane_error(source.screen(pane_id))}")

    def _alive(self, agent: str, record: Mapping[str, Any] | None, now: float) -> None:
        if record is None:
            return
        state = str(record.get("state"))
        if state == "starting" or (state not in STARTED_STATES and not record.get("turns")):
            return  # not up yet: a resumed session has turns before its CLI reports that it is up
        cli = record.get("cli_pid")
        if cli is not None and not process_running(cli):
            self.cli_died.add(agent)  # agentlaunch notices at its prompt and ends: its pane says why
            return
        first, said = self.seen_started.setdefault(agent, (now, state))
        if now - first >= self.settle:
            self.decided[agent] = AgentStart(agent, self.panes[agent], True, "started", said)

    def _at_deadline(self, agent: str, pane_id: str, pid: int) -> AgentStart:
        if agent in self.cli_died:
            return AgentStart(agent, pane_id, False, "failed: its provider CLI exited right after starting")
        if agent in self.seen_started:  # said it started, not yet alive for the whole settle time: the wait ended first
            return AgentStart(agent, pane_id, True, "started", self.seen_started[agent][1])
        said = f"not started after {self.timeout:g}s (still starting; look at its pane, or wait longer with --wait)"
        setup = setting_up(pid, self.status_dir)
        if setup is not None:  # its worktree's setup (npm ci, say) still runs: the agent starts once it is done
            said = (
                f"not started after {self.timeout:g}s: its worktree setup still runs (`{setup.command}`, log {setup.log});"
                " it starts once that is done (`agentlaunch status` shows it), or wait longer with --wait"
            )
        return AgentStart(agent, pane_id, False, said)

    def results(self) -> list[AgentStart]:
        return [self.decided[agent] for agent in self.panes]


def wait_started(
    source: PaneSource,
    panes: Mapping[str, str],
    *,
    timeout: float,
    status_dir: Path | None = None,
    settle: float = SETTLE,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list[AgentStart]:
    """Watch each agent's pane (``panes``: agent -> pane id) until it started or failed, at most ``timeout`` s."""
    watch = StartWatch(timeout, settle=settle, status_dir=status_dir)
    now = clock()
    for agent, pane_id in panes.items():
        watch.add(agent, pane_id, now)
    while True:
        watch.look(source, clock())
        if watch.done():
            return watch.results()
        sleep(POLL)


def setting_up(pid: int, status_dir: Path | None) -> Setup | None:
    """The worktree setup the agentlaunch of ``pid`` runs now, if any (read by :mod:`agentlaunch.fleet.setups`)."""
    from agentlaunch.fleet.setups import setups

    return next((s for s in setups(status_dir.parent if status_dir is not None else None) if s.pid == pid and s.running), None)
