"""The plans the early starts read, kept by the launch before them: where they are, how they are written.

A launch keeps its plan for the next launch's early start (:func:`agentlaunch.launch.early.prespawn.remember`,
:func:`agentlaunch.launch.early.early_interface.keep_plan`, and native Codex's app-server's) in
``<state dir>/launch-plans``; the early starts read them before the
CLI is spawned, so this module, below all of them, imports the standard library only (and no ``typing``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from hashlib import sha256
from pathlib import Path
from typing import Any

from agentlaunch.fsutil import read_regular

CACHE_DIR = "launch-plans"
PLANS_KEEP = 64  # plans kept (the newest): one per agent, agents dir, working dir and current directory


def env_of(agent_yaml: Path, plan: Mapping[str, Any]) -> dict[str, str] | None:
    """The agent's ``env`` (re-read each launch, never cached: it may hold secrets); None when unreadable.

    An agent.yaml unchanged since the plan, which had no env then, has none now:
    no need to parse it (importing yaml alone takes ~20 ms before the spawn).
    """
    try:
        data_bytes = read_regular(agent_yaml, 1 << 20)  # a FIFO put in its place must not block the launch here
    except OSError:
        return None
    if plan.get("agent_yaml_digest") == sha256(data_bytes).hexdigest() and plan.get("agent_env") is False:
        return {}
    import yaml

    from agentlaunch.definitions.yamlload import safe_load

    try:
        data = safe_load(data_bytes.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError):
        return None
    env = data.get("env") if isinstance(data, dict) else None
    if not isinstance(env, dict):
        return {}
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        return None  # not plain strings: the full launch checks it and says what is wrong
    return dict(env)


def write_if_changed(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` (atomically) unless it already holds exactly that; True when written."""
    from agentlaunch.fsutil import write_atomic

    with contextlib.suppress(OSError):  # missing, or not a regular file (never opened: a FIFO would block)
        if read_regular(path, len(data)) == data:
            return False
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)
    return True
