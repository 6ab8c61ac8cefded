"""What the deck reads less often than the status records: the worktrees (git calls) and today's cost (the store)."""

from __future__ import annotations

import contextlib
import sqlite3
from datetime import datetime
from pathlib import Path

from agentlaunch import worktree
from agentlaunch.errors import AgentlaunchError
from agentlaunch.usage.store import Store


def worktree_states(state_dir: Path) -> dict[str, worktree.WorktreeState]:
    """Every registered worktree by its path, inspected (a repository deleted under one gives its problem)."""
    try:
        entries = worktree.registered(state_dir)
    except (AgentlaunchError, OSError):
        return {}
    return {w.path: worktree.inspect(w) for w in entries}


def today_costs(store_path: Path) -> dict[str, float]:
    """Each agent's priced cost since local midnight; nothing when there is no store yet or it cannot be read."""
    if not store_path.is_file():
        return {}
    midnight = datetime.now().astimezone().replace(hour=0, minute=0, second=0, microsecond=0)
    with contextlib.suppress(AgentlaunchError, sqlite3.Error, OSError), Store.open(store_path, timeout=0.2) as store:
        return {r.key: r.cost_usd for r in store.usage_report("agent", since=midnight) if r.cost_usd is not None}
    return {}
