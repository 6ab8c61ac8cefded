"""After kill -9 of a native launch, the next native launch removes the runtime folder it left.

No process can restore the terminal or remove anything after SIGKILL; what
agentlaunch can do is clean up at the next launch: every ``agentlaunch-*``
runtime folder of this user whose launch is gone (its ``.owner`` names a
process that no longer runs) is removed. A running launch's folder, and any
folder agentlaunch cannot tell is its own, stay.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from agentlaunch import runtime_dirs
from agentlaunch.processes import process_start
from testbed.agent_files import write_agent
from tests.support.waits import wait_for

FAKE_TUI = Path(__file__).parent / "support" / "fake_tui.py"


@pytest.fixture
def base() -> Iterator[Path]:
    """A short folder standing for $XDG_RUNTIME_DIR (socket paths must stay short)."""
    path = Path(tempfile.mkdtemp(prefix="alrt-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def leftovers(base: Path) -> list[str]:
    return sorted(p.name for p in base.iterdir() if p.name.startswith("agentlaunch-"))


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_folder_whose_launch_is_gone_is_removed_and_the_others_stay(base: Path, tmp_path: Path) -> None:
    gone = base / "agentlaunch-gone"
    gone.mkdir()
    (gone / runtime_dirs.OWNER).write_text(f"{dead_pid()} 1\n")
    (gone / "hooks.sock").write_text("")
    alive = base / "agentlaunch-alive"
    alive.mkdir()
    (alive / runtime_dirs.OWNER).write_text(f"{os.getpid()} {process_start(os.getpid())}\n")
    reused = base / "agentlaunch-reused"  # our pid, another start time: the pid was reused, the launch is gone
    reused.mkdir()
    (reused / runtime_dirs.OWNER).write_text(f"{os.getpid()} 12345\n")
    unknown = base / "agentlaunch-doctor-x"  # no .owner: not a native launch's, or still being made
    unknown.mkdir()
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / runtime_dirs.OWNER).write_text(f"{dead_pid()} 1\n")
    (base / "agentlaunch-link").symlink_to(target)
    (base / "agentlaunch-file").write_text("not a folder")
    other = base / "something-else"
    other.mkdir()
    (other / runtime_dirs.OWNER).write_text(f"{dead_pid()} 1\n")

    made = runtime_dirs.make(base)
    assert made.parent == base and made.name.startswith("agentlaunch-") and (made.stat().st_mode & 0o777) == 0o700
    assert (made / runtime_dirs.OWNER).read_text().split()[0] == str(os.getpid())
    assert leftovers(base) == sorted(
        ["agentlaunch-alive", "agentlaunch-doctor-x", "agentlaunch-link", "agentlaunch-file", made.name]
    )
    assert target.is_dir() and other.is_dir()


def test_kill_9_of_a_native_launch_leaves_a_folder_the_next_launch_removes(agents_dir: Path, workdir: Path, base: Path) -> None:
    write_agent(agents_dir, "tui", {"provider": "claude", "command": str(FAKE_TUI), "working_dir": str(workdir)})
    env = {**os.environ, "TERM": "xterm-256color", "AGENTLAUNCH_TITLE": "0", "XDG_RUNTIME_DIR": str(base)}
    argv = ["-m", "agentlaunch", "run", "tui", "--agents-dir", str(agents_dir)]
    first = pexpect.spawn(sys.executable, argv, env=env, dimensions=(30, 100), timeout=30)
    first.expect(r"TUI READY")
    (left,) = leftovers(base)
    os.kill(first.pid, signal.SIGKILL)
    first.expect(pexpect.EOF)
    first.close()
    assert leftovers(base) == [left]  # nothing can remove it at SIGKILL

    second = pexpect.spawn(sys.executable, argv, env=env, dimensions=(30, 100), timeout=30)
    second.expect(r"TUI READY")
    (now,) = leftovers(base)
    assert now != left
    second.send(b"q")
    second.expect(pexpect.EOF)
    second.close()
    wait_for(lambda: leftovers(base) == [], timeout=10, what="the second launch's own folder removed at its exit")
