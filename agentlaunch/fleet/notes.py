"""The notes `agentlaunch stop` and a spent budget leave: why an agent that does not run is not running.

``<state dir>/stopped/AGENT.json`` (written by :mod:`agentlaunch.live.life`): the fleet says ``stopped`` for a
defined agent with a note, and `send`, `stop` and `restart` say what happened.
"""

from __future__ import annotations

import os
from json import loads
from typing import TYPE_CHECKING

from agentlaunch.fleet.records import state_folder
from agentlaunch.fsutil import read_regular

if TYPE_CHECKING:  # only mypy reads these
    from typing import Any

STOPPED_DIR = "stopped"
NOTE_LIMIT = 16 << 10  # a note is about 300 bytes; a larger file is not one


def note_file(agent: str, state_dir: str | os.PathLike[str] | None = None) -> str:
    """Where ``agent``'s note is kept."""
    return os.path.join(os.fspath(state_dir) if state_dir is not None else state_folder(), STOPPED_DIR, f"{agent}.json")


def read_note(agent: str, state_dir: str | os.PathLike[str] | None = None) -> dict[str, Any] | None:
    """The note `stop` (or a budget) left for ``agent``, or None (none, or not one agentlaunch wrote)."""
    try:
        data = loads(read_regular(note_file(agent, state_dir), NOTE_LIMIT).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None
