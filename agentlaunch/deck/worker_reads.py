"""What the deck reads less often than the status records, in a worker thread: the worktrees (git calls), today's
cost (the store) and the definitions (their schemas)."""

from __future__ import annotations

import contextlib
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from agentlaunch.deck.rows import Definitions
from agentlaunch.definitions.names import agent_names
from agentlaunch.errors import AgentlaunchError

if TYPE_CHECKING:
    from agentlaunch.worktrees import git_worktree as worktree


def worktree_states(state_dir: Path) -> dict[str, worktree.WorktreeState]:
    """Every registered worktree by its path, inspected (a repository deleted under one gives its problem)."""
    # this module's imports wait for the worker thread: none is on the first frame
    from agentlaunch.worktrees import git_worktree as worktree

    try:
        entries = worktree.registered(state_dir)
    except (AgentlaunchError, OSError):
        return {}
    return {w.path: worktree.inspect(w) for w in entries}


def today_costs(store_path: Path) -> dict[str, float]:
    """Each agent's priced cost since local midnight; nothing when there is no store yet or it cannot be read."""
    if not store_path.is_file():
        return {}
    import sqlite3

    from agentlaunch.usage.store import Store

    midnight = datetime.now().astimezone().replace(hour=0, minute=0, second=0, microsecond=0)
    with contextlib.suppress(AgentlaunchError, sqlite3.Error, OSError), Store.open(store_path, timeout=0.2) as store:
        return {r.key: r.cost_usd for r in store.usage_report("agent", since=midnight) if r.cost_usd is not None}
    return {}


def load_definitions(agents_dir: Path | None, state_dir: Path, known: Definitions) -> Definitions:
    """Every defined agent's provider, model and load problem; one loaded again only when its agent.yaml changed."""
    from agentlaunch.definitions.spec import load_agent

    if agents_dir is None:
        return {}
    try:
        names = agent_names(agents_dir)
    except AgentlaunchError:
        return {}  # gather says so on its own row
    found: Definitions = {}
    for name in names:
        try:
            mtime = (agents_dir / name / "agent.yaml").stat().st_mtime
        except OSError:
            mtime = -1.0
        cached = known.get(name)
        if cached is not None and cached[0] == mtime:
            found[name] = cached
            continue
        try:
            spec = load_agent(agents_dir, name, state_dir)
            found[name] = (mtime, spec.provider, spec.model or "", None)
        except AgentlaunchError as exc:
            found[name] = (mtime, "", "", "definition: " + exc.message.splitlines()[0])
    return found
