"""A native launch's runtime folder (its sockets and scripts), and removing those that launches killed left.

A native launch keeps its hook socket, status-line script and control socket
in ``agentlaunch-XXXXXXXX`` under ``$XDG_RUNTIME_DIR`` (else ``/tmp``), made
0700 by ``mkdtemp`` and removed on every way out but one: SIGKILL, after which
no process of agentlaunch's runs. Each folder therefore holds ``.owner``, the
launch's pid and start time, and :func:`make` first removes the folders of
this user whose owner no longer runs. A folder without ``.owner`` (an older
agentlaunch's, a doctor's, or one being made this instant), another user's,
or a symlink is never touched.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from agentlaunch.fsutil import read_regular, remove_tree
from agentlaunch.processes import process_start, same_process

PREFIX = "agentlaunch-"
OWNER = ".owner"


def make_for_launch() -> Path:
    """A private folder for this launch's sockets and scripts: short (a socket path is at most
    :data:`~agentlaunch.platform_support.SOCKET_PATH_MAX` bytes, macOS's limit), 0700. Never under ``$TMPDIR``: on
    macOS that is a long folder under ``/var/folders``."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if not base or len(base) > 40 or not os.path.isdir(base) or not os.access(base, os.W_OK):
        base = "/tmp"
    return make(Path(base))  # and removes the folders launches killed with SIGKILL left there


def make(base: Path) -> Path:
    """A new private folder in ``base`` for this launch, its owner noted; leftovers of dead launches removed first."""
    sweep(base)
    import tempfile

    path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))
    pid = os.getpid()
    fd = os.open(path / OWNER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(f"{pid} {process_start(pid) or '-'}\n")
    return path


def sweep(base: Path) -> list[Path]:
    """Remove this user's runtime folders in ``base`` whose launch no longer runs; the ones removed."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    uid = os.geteuid()
    for entry in entries:
        if not entry.name.startswith(PREFIX):
            continue
        with contextlib.suppress(OSError, ValueError):
            info = entry.stat(follow_symlinks=False)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid:
                continue  # a symlink, a file, another user's: not ours to remove
            pid, _, start = read_regular(Path(entry.path) / OWNER, 100).decode("ascii").strip().partition(" ")
            if same_process(int(pid), None if start in ("", "-") else start):
                continue  # its launch runs
            remove_tree(entry.path)
            removed.append(Path(entry.path))
    return removed
