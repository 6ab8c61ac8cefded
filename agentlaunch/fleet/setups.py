"""The worktree setups that failed or run now, read on the standard library as ``worktree_setup`` reads them.

``<state dir>/worktree-setup/*.json`` (written by :mod:`agentlaunch.worktrees.setup_commands`): an agent whose setup failed
did not start, one whose setup runs starts after it; the fleet shows both (``setup failed``, ``setting up``).
"""

from __future__ import annotations

import os
from json import loads
from typing import TYPE_CHECKING

from agentlaunch.fleet.records import state_folder
from agentlaunch.fsutil import read_regular
from agentlaunch.processes import same_process, valid_pid

if TYPE_CHECKING:  # only mypy reads these
    from typing import Any

SETUP_DIR = "worktree-setup"  # agentlaunch.worktrees.setup_commands.SETUP_DIR
SETUP_LIMIT = 64 << 10  # agentlaunch.worktrees.setup_commands.RECORD_LIMIT


class Setup:
    """A worktree setup's record (written as :class:`agentlaunch.worktrees.setup_commands.SetupRecord`), without dataclasses."""

    __slots__ = ("agent", "command", "exit", "log", "ok", "pid", "pid_start", "worktree")

    def __init__(self, data: dict[str, Any]) -> None:
        self.agent, self.worktree, self.log = data["agent"], data["worktree"], data["log"]
        self.ok, self.exit, self.command = data.get("ok"), data.get("exit"), data.get("command")
        self.pid = data.get("pid") if valid_pid(data.get("pid")) else None
        self.pid_start = data.get("pid_start")

    @property
    def running(self) -> bool:
        """Still being run by a live process (else, with ``ok`` None, it was interrupted)."""
        return self.ok is None and same_process(self.pid, self.pid_start)

    def shown(self) -> dict[str, Any]:
        """What ``status --json`` carries: ``{"ok", "exit", "command", "log"}`` (ok null: running)."""
        ok = None if self.running else self.ok is True
        return {"ok": ok, "exit": self.exit, "command": self.command, "log": self.log}


def _setup(path: str) -> Setup | None:
    """The setup record in ``path``: None unless every field has its type (as ``worktree_setup`` parses it)."""
    try:
        data = loads(read_regular(path, SETUP_LIMIT).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in ("agent", "worktree", "log")):
        return None
    ok, code = data.get("ok"), data.get("exit")
    if ok not in (True, False, None) or not (code is None or (isinstance(code, int) and not isinstance(code, bool))):
        return None
    if any(data.get(k) is not None and not isinstance(data.get(k), str) for k in ("command", "pid_start", "started", "finished")):
        return None
    return Setup(data)


def setups(state_dir: str | os.PathLike[str] | None = None) -> list[Setup]:
    """Worktree setups that failed (their agent did not start), were interrupted or run now, in a worktree still there,
    by agent then worktree, read on the standard library only: what ``status`` (every form), ``fleet`` and ``tmux up``'s
    start wait show (the only reader of these records beside :func:`agentlaunch.worktrees.setup_commands.read`)."""
    folder = os.path.join(os.fspath(state_dir) if state_dir is not None else state_folder(), SETUP_DIR)
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    except OSError:
        return []
    found = [r for r in (_setup(os.path.join(folder, n)) for n in names) if r is not None]
    return sorted((r for r in found if r.ok is not True and os.path.isdir(r.worktree)), key=lambda r: (r.agent, r.worktree))
