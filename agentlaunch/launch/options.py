"""What ``agentlaunch run`` asks of one launch: the agent, its folders, the session wanted, the mode, the bounds."""

from __future__ import annotations

from pathlib import Path

from agentlaunch import paths
from agentlaunch.datarecord import datarecord
from agentlaunch.launch.early import prespawn
from agentlaunch.launch.liveness import DEFAULT_STALL_TIMEOUT
from agentlaunch.usage.budget import check_budget_usd

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
    extra_flags: tuple[str, ...] = ()  # --provider-flag: after agent.yaml's provider_flags, for this launch only
    ready_timeout: float = DEFAULT_READY_TIMEOUT  # seconds a native CLI may stay "starting" before it is "asking"
    stall_timeout: float | None = DEFAULT_STALL_TIMEOUT  # seconds a turn may go without a report before it is "stalled"


def run_options(
    agent: str,
    agents_dir: Path | None,
    *,
    templates_dir: Path | None,
    working_dir: Path | None,
    resume: str | None,
    continue_last: bool,
    fork: str | None,
    force: bool,
    worktree: bool,
    budget_usd: float | None,
    extra_flags: tuple[str, ...] = (),
) -> LaunchOptions:
    """The options of ``agentlaunch run``'s launch from its command line: the agents folder (the default one when none
    is given), the key of its plan for the next launch's early start, the budget checked."""
    return LaunchOptions(
        agent=agent,
        agents_dir=paths.agents_dir(agents_dir),
        templates_dir=templates_dir,
        working_dir=working_dir,
        resume=resume,
        continue_last=continue_last,
        fork=fork,
        force=force,
        worktree=worktree,
        # Not with --worktree (or flags of this launch's own): the next launch's early start, keyed without it, must
        # not run in the worktree (or with those flags).
        plan_key=None
        if worktree or extra_flags
        else prespawn.plan_key(agent, str(agents_dir) if agents_dir else None, str(working_dir) if working_dir else None),
        budget_usd=None if budget_usd is None else check_budget_usd(budget_usd),
        extra_flags=extra_flags,
    )
