"""Starting a team a few at a time: at most ``max_starting`` CLIs are starting at once.

``tmux up`` makes each agent's pane only when a place is free: an agent holds
its place from its pane's creation until its status record first says that it
started (its CLI reported that it is up: ``waiting``, or a turn already), or
until it no longer can: it is ``asking`` (the CLI waits on its own screen,
after the launch's ``ready_timeout``), its pane died or closed, or its wait
(``--wait``) is over. Each of these is said as it happens, with the team's
progress (``started 4 of 20, 3 starting…``), when the team is larger than the
throttle; a team that fits is started at once, and says nothing more than
before. The end result is the same per agent as :func:`wait_started`'s.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentlaunch.live.startup_wait import POLL, SETTLE, AgentStart, PaneSource, RecordSource, StartWatch


@dataclass(frozen=True)
class Pending:
    """One agent still to start, and how: ``launch`` makes its pane and returns the pane's id."""

    agent: str
    launch: Callable[[], str]


def freed_said(watch: StartWatch, agent: str, now: float, started_at: float) -> str:
    """What happened to an agent that no longer holds a place: up, asking, failed, or out of time."""
    took = f"after {now - started_at:.1f}s"
    outcome = watch.decided.get(agent)
    if outcome is not None and not outcome.started:
        if outcome.detail.startswith("not started after"):
            return f"{agent} still starting {took}: counted as failed"
        return f"{agent} failed while starting, {took} (why: below)"
    state = watch.seen_started[agent][1] if agent in watch.seen_started else (outcome.state if outcome else None)
    if state == "asking":
        return f"{agent} is asking {took}: its CLI waits on its own screen (look at its pane)"
    return f"{agent} is up ({state}) {took}"


def start_team(
    source: PaneSource,
    pending: Sequence[Pending],
    *,
    max_starting: int,
    timeout: float,
    say: Callable[[str], None],
    status_dir: Path | None = None,
    records: RecordSource | None = None,
    settle: float = SETTLE,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list[AgentStart]:
    """Make each agent's pane when fewer than ``max_starting`` are starting, and watch all until each is decided."""
    if max_starting < 1:
        raise ValueError("max_starting must be 1 or more")
    watch = StartWatch(timeout, settle=settle, status_dir=status_dir, records=records)
    queue = deque(pending)
    throttled = len(pending) > max_starting
    launched_at: dict[str, float] = {}
    holding: list[str] = []  # the agents holding a place, in the order started
    while True:
        now = clock()
        if launched_at:
            watch.look(source, now)
        for agent in [a for a in holding if not watch.starting(a)]:
            holding.remove(agent)
            if throttled:
                goes = ": its place goes to the next" if queue else ""
                say(freed_said(watch, agent, now, launched_at[agent]) + goes)
        if queue and len(holding) < max_starting:
            while queue and len(holding) < max_starting:
                step = queue.popleft()
                launched_at[step.agent] = clock()
                watch.add(step.agent, step.launch(), launched_at[step.agent])
                holding.append(step.agent)
            if throttled:
                said = f"started {len(launched_at)} of {len(pending)}, {len(holding)} starting…"
                say(said + (f" (at most {max_starting} at a time)" if len(launched_at) == len(holding) else ""))
        if not queue and watch.done():
            return watch.results()
        sleep(POLL)
