"""The fleet as a stream of changes: ``agentlaunch fleet --watch --json``, one JSON line per change (docs/fleet.md,
"The stream of changes"), versioned with the fleet contract.

Each line is ``{"version": 1, "change": C, "host": H, ...}``:

- ``agent``: an agent is new or changed; ``id`` (stable while it lives: ``live:<pid>.json``, ``pane:%3``,
  ``def:NAME``; unique within its host) and ``agent`` (the contract's whole agent object);
- ``gone``: the agent ``id`` is no more;
- ``problems``: the fleet's ``problems`` changed (the whole list);
- ``synced``: every agent of the host has been given (after the first read, and after a host came back).

:func:`watch_local` reads the fleet once, gives every agent, says ``synced``, then waits on the status folder
(inotify, :mod:`agentlaunch.dir_watch`) and reads it again when a record is written, comes or goes; tmux's panes
(a pane that dies writes no record), the stop notes and the worktree setups are read with it, and every
:data:`QUIET_EVERY` seconds when nothing was written. Only what changed is written: nothing while nothing changes.
"""

from __future__ import annotations

import os
import select
import time
from pathlib import Path
from typing import TYPE_CHECKING

from agentlaunch.fleet.contract import VERSION, agent_json, ordered

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from agentlaunch.fleet.model import Fleet

QUIET_EVERY = 5.0
"""Seconds between two reads while no record is written: tmux's panes, the notes and the setups change without one."""
NO_WATCH_EVERY = 1.0
"""Seconds between two reads where inotify is missing (not Linux, its watches used up)."""
SETTLE = 0.05
"""Seconds a burst of record writes is given before the fleet is read again (one read for the burst)."""

Agents = dict[str, dict[str, object]]
Line = dict[str, object]


def line(change: str, host: str | None, **fields: object) -> Line:
    """One line of the stream."""
    return {"version": VERSION, "change": change, "host": host, **fields}


def keyed(fleet: Fleet) -> Agents:
    """The fleet's agents by their ``id``, most urgent first (the contract's order)."""
    return {agent.key: agent_json(agent) for agent in ordered(fleet.agents)}


class Changes:
    """What a reader of the stream was told last, and the lines that bring it to a new read."""

    def __init__(self, host: str | None = None) -> None:
        self.host = host
        self.known: Agents = {}
        self.problems: list[str] | None = None

    def lines(self, agents: Agents, problems: list[str]) -> list[Line]:
        """``agent`` for each new or changed, ``gone`` for each no more, ``problems`` when they changed."""
        out = [line("agent", self.host, id=key, agent=agent) for key, agent in agents.items() if self.known.get(key) != agent]
        out += [line("gone", self.host, id=key) for key in self.known if key not in agents]
        if problems != self.problems:
            out.append(line("problems", self.host, problems=list(problems)))
        self.known, self.problems = dict(agents), list(problems)
        return out


def watch_local(
    read: Callable[[], tuple[Agents, list[str]]],
    emit: Callable[[Line], None],
    status_dir: str,
    state_dir: str,
    *,
    ends: Sequence[int] = (),
    quiet_every: float = QUIET_EVERY,
) -> None:
    """Give this machine's fleet and then each change, until one of ``ends`` (descriptors) is at its end of file (a
    host's stdin: the connection closed; a pipe the caller closes when the reader of the stream is gone)."""
    from agentlaunch.dir_watch import GONE, MASK, open_watch

    watch = open_watch()

    def arm() -> None:
        """The status folder watched; until it is made, the nearest folder above it that exists."""
        if watch is None or watch.watch(Path(status_dir), MASK | GONE):
            return
        for folder in (Path(state_dir), *Path(state_dir).parents):
            if watch.watch(folder, MASK):
                return

    changes = Changes()
    arm()
    try:
        for said in changes.lines(*read()):
            emit(said)
        emit(line("synced", None))
        waited = [*([watch.fd] if watch is not None else []), *ends]
        while True:
            ready, _, _ = select.select(waited, [], [], quiet_every if watch is not None else NO_WATCH_EVERY)
            if any(fd in ready and _ended(fd) for fd in ends):
                return
            if watch is not None and watch.fd in ready:
                time.sleep(SETTLE)
                watch.drain()
                arm()
            for said in changes.lines(*read()):
                emit(said)
    finally:
        if watch is not None:
            watch.close()


def _ended(fd: int) -> bool:
    """Whether ``fd`` is at its end (what it had to say, read and dropped: a host's stdin carries nothing)."""
    try:
        return not os.read(fd, 4096)
    except OSError:
        return True
