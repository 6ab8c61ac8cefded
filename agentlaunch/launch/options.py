"""What ``agentlaunch run`` asks of one launch: the agent, its folders, the session wanted, the mode, the bounds."""

from __future__ import annotations

from pathlib import Path

from agentlaunch.datarecord import datarecord
from agentlaunch.launch.liveness import DEFAULT_STALL_TIMEOUT

DEFAULT_READY_TIMEOUT = 20.0
"""Seconds a native CLI may take to report that it is up before it counts as waiting on its own screen (``asking``):
below ``tmux up``'s default wait (30 s), so a CLI stopped on a dialog is reported, not "not started"."""


@datarecord(frozen=True)
class LaunchOptions:
    agent: str
    agents_dir: Path
    templates_dir: Path | None = None
    working_dir: Path | None = None
    resume: str | None = None
    continue_last: bool = False
    fork: str | None = None  # --fork ID: a new session starting from that session's conversation (the CLI's interface)
    force: bool = False
    interactive: bool = False
    native: bool = False  # the CLI's own interface, relayed (agentlaunch.launch.native.native); else the line chat or headless
    plan_key: str | None = None  # names this launch's plan for the next launch's early start (prespawn)
    worktree: bool = False  # run in the agent's own git worktree (agent.yaml's worktree: true asks too)
    budget_usd: float | None = None  # --budget-usd: the session's USD limit for this launch
    ready_timeout: float = DEFAULT_READY_TIMEOUT  # seconds a native CLI may stay "starting" before it is "asking"
    stall_timeout: float | None = DEFAULT_STALL_TIMEOUT  # seconds a turn may go without a report before it is "stalled"
