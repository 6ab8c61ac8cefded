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
from typing import TYPE_CHECKING, Protocol

from agentlaunch.live.status import read_records
from agentlaunch.processes import process_running
from agentlaunch.visible import visible

if TYPE_CHECKING:
    from agentlaunch.live.tmux import Tmux
    from agentlaunch.worktree_setup import SetupRecord

STARTED_STATES = ("waiting", "asking", "thinking", "tool", "retrying", "stalled")
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
    """What the wait needs of tmux, so a test can hand in its own."""

    def panes(self) -> dict[str, tuple[int, bool, str]]:
        """pane id -> (pid, dead, dead status) of every pane in the session."""
        ...

    def screen(self, pane_id: str) -> str:
        """What the pane shows, with some scrollback."""
        ...


class TmuxPanes:
    """The panes of one session of a :class:`~agentlaunch.live.tmux.Tmux` server."""

    def __init__(self, tmux: Tmux, session: str) -> None:
        self.tmux, self.session = tmux, session

    def panes(self) -> dict[str, tuple[int, bool, str]]:
        """pane id -> (pid, dead, dead status) of every pane in the session."""
        fmt = "#{pane_id}\t#{pane_pid}\t#{pane_dead}\t#{pane_dead_status}"
        proc = self.tmux.run("list-panes", "-s", "-t", f"={self.session}", "-F", fmt, check=False)
        found: dict[str, tuple[int, bool, str]] = {}
        for row in proc.stdout.splitlines():
            cells = row.split("\t")
            if len(cells) == 4 and cells[1].isdigit():
                found[cells[0]] = (int(cells[1]), cells[2] == "1", cells[3])
        return found

    def screen(self, pane_id: str) -> str:
        return self.tmux.run("capture-pane", "-p", "-J", "-S", "-200", "-t", pane_id, check=False).stdout


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
    deadline = clock() + timeout
    decided: dict[str, AgentStart] = {}
    seen_started: dict[str, tuple[float, str]] = {}
    cli_died: set[str] = set()
    dead_since: dict[str, float] = {}
    while True:
        now = clock()
        live = source.panes()
        records = {r.data.get("pid"): r for r in read_records(status_dir, clean=False) if not r.stale}
        for agent, pane_id in panes.items():
            if agent in decided:
                continue
            if pane_id not in live:
                decided[agent] = AgentStart(agent, pane_id, False, "its pane closed: agentlaunch ended before the agent started")
                continue
            pid, dead, status = live[pane_id]
            if dead:
                # tmux learns the exit status once it reaps the process: give it a moment to say.
                if not status and now - dead_since.setdefault(agent, now) < STATUS_GRACE and now < deadline:
                    continue
                code = f" (exit {status})" if status else ""
                decided[agent] = AgentStart(agent, pane_id, False, f"failed{code}: {pane_error(source.screen(pane_id))}")
                continue
            record = records.get(pid)
            if record is None:
                continue
            state = str(record.data.get("state"))
            if state == "starting" or (state not in STARTED_STATES and not record.data.get("turns")):
                continue  # not up yet: a resumed session has turns before its CLI reports that it is up
            cli = record.data.get("cli_pid")
            if cli is not None and not process_running(cli):
                cli_died.add(agent)  # agentlaunch notices at its prompt and ends: its pane says why
                continue
            first, _ = seen_started.setdefault(agent, (now, state))
            if now - first >= settle:
                decided[agent] = AgentStart(agent, pane_id, True, "started", state)
        if len(decided) == len(panes) or now >= deadline:
            break
        sleep(POLL)
    for agent, pane_id in panes.items():
        if agent in decided:
            continue
        if agent in cli_died:
            decided[agent] = AgentStart(agent, pane_id, False, "failed: its provider CLI exited right after starting")
        elif agent in seen_started:  # said it started, not yet alive for the whole settle time: the wait ended first
            decided[agent] = AgentStart(agent, pane_id, True, "started", seen_started[agent][1])
        else:
            said = f"not started after {timeout:g}s (still starting; look at its pane, or wait longer with --wait)"
            setup = setting_up(live.get(pane_id, (0, False, ""))[0], status_dir)
            if setup is not None:  # its worktree's setup (npm ci, say) still runs: the agent starts once it is done
                said = (f"not started after {timeout:g}s: its worktree setup still runs (`{setup.command}`, log {setup.log});"
                        " it starts once that is done (`agentlaunch status` shows it), or wait longer with --wait")  # fmt: skip
            decided[agent] = AgentStart(agent, pane_id, False, said)
    return [decided[agent] for agent in panes]


def setting_up(pid: int, status_dir: Path | None) -> SetupRecord | None:
    """The worktree setup the agentlaunch of ``pid`` runs now, if any."""
    from agentlaunch import paths
    from agentlaunch.worktree_setup import records

    state_dir = status_dir.parent if status_dir is not None else paths.state_dir()
    return next((r for r in records(state_dir) if r.pid == pid and r.running), None)
