"""Agents started without a definition of their own (the deck's `n`: a provider, a model, a folder).

Each gets a definition all the same, written where no one edits it: ``<state dir>/adhoc/NAME/agent.yaml``,
an agents directory of its own. Every command reaches it there as it reaches any agent, with
``--agents-dir <state dir>/adhoc`` (`tmux up`, `restart`, `fork`; the deck passes it for an agent it does not
find in its own agents directory). Asked to, the deck writes it into the agents directory instead: a
definition like any other, to edit and commit.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentlaunch.errors import UsageError
from agentlaunch.fsutil import private_dir, write_atomic

ADHOC_FOLDER = "adhoc"


def adhoc_dir(state_dir: Path) -> Path:
    """The agents directory of the agents started without a definition."""
    return state_dir / ADHOC_FOLDER


def is_adhoc(state_dir: Path, name: str) -> bool:
    return (adhoc_dir(state_dir) / name / "agent.yaml").is_file()


def definition_text(provider: str, model: str, working_dir: Path) -> str:
    """The agent.yaml of an agent started with ``provider``, ``model`` (empty: the CLI's own) in ``working_dir``."""
    lines = ["# started from the deck without a definition (agentlaunch deck, n)", f"provider: {provider}"]
    if model:
        lines.append(f"model: {json.dumps(model)}")  # a JSON string is a YAML string: no value is misread
    lines.append(f"working_dir: {json.dumps(str(working_dir))}")
    return "\n".join(lines) + "\n"


def write_definition(agents_dir: Path, name: str, provider: str, model: str, working_dir: Path, *, private: bool = False) -> Path:
    """Write ``agents_dir/NAME/agent.yaml`` (its folders made, only this user's when ``private``: the state folder's);
    a usage error when the folder to run in is none."""
    folder = working_dir.expanduser()
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder: the agent runs in an existing folder")
    path = agents_dir / name / "agent.yaml"
    if private:
        private_dir(path.parent)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, definition_text(provider, model, folder.resolve()).encode())
    return path
