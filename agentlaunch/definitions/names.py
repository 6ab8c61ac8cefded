"""Which agents an agents directory defines: its folders holding an agent.yaml, read without loading any of them.

Kept apart from :mod:`agentlaunch.definitions.spec` (the loader: schemas, skills, the providers' descriptors) for the
readers that only list the names: the deck's first frame lists them before anything is loaded.
"""

from __future__ import annotations

from pathlib import Path

from agentlaunch.errors import DefinitionError

SHARED_FOLDERS = ("bundles", "skills")


def require_agents_dir(agents_dir: Path) -> Path:
    if not agents_dir.is_dir():
        raise DefinitionError(
            f"{agents_dir}: agents directory does not exist",
            hint="create one with `agentlaunch init DIR`, or pass --agents-dir / set AGENTLAUNCH_AGENTS_DIR",
        )
    return agents_dir.resolve()


def not_found(agents_dir: Path, name: str) -> str:
    """The one message for a name no agent has: ``run``, ``send``, ``stop``, ``restart`` and ``fork`` say the same."""
    root = agents_dir.resolve() if agents_dir.is_dir() else agents_dir
    known = ", ".join(agent_names(root)) if agents_dir.is_dir() else ""
    return f"{root / name / 'agent.yaml'}: agent {name!r} not found (agents here: {known or 'none'})"


def agent_names(agents_dir: Path) -> list[str]:
    """Names of the agent folders (those holding an agent.yaml), sorted."""
    root = require_agents_dir(agents_dir)
    return sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in SHARED_FOLDERS and (p / "agent.yaml").is_file())
