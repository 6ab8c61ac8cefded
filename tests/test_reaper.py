"""Which processes a launch ends when it is over, on plain process tables and on real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agentlaunch.launch.reaper import Proc, Reaper
from tests.helpers import wait_for

ME, MY_SID, OTHER_LAUNCH = 10, 10, 50


def table(*procs: tuple[int, int, int, int]) -> dict[int, Proc]:
    return {pid: Proc(pid, ppid, pgid, sid, False) for pid, ppid, pgid, sid in procs}


def reaper(roots: set[int], before: set[int] = frozenset()) -> Reaper:  # type: ignore[assignment]
    r = Reaper(subreaper=False)
    r.me, r.my_sid, r.roots, r.before = ME, MY_SID, set(roots), set(before)
    return r


def test_the_launch_owns_its_clis_sessions_descendants_and_orphans_and_nothing_else() -> None:
    procs = table(
        (ME, 1, ME, MY_SID),
        (100, ME, 100, 100),  # our CLI (a session leader)
        (101, 100, 100, 100),  # its child, in its session
        (102, 101, 102, 102),  # a setsid helper under it
        (103, 102, 103, 103),  # and that helper's child
        (104, 1, 100, 100),  # re-parented to init but still in the CLI's session
        (105, ME, 105, 105),  # an orphan re-parented to us (subreaper), detached
        (106, ME, ME, MY_SID),  # our own helper (a tmux call): our session
        (107, ME, 107, 107),  # a child we had before the launch began
        (OTHER_LAUNCH, 1, OTHER_LAUNCH, OTHER_LAUNCH),  # another agentlaunch
        (200, OTHER_LAUNCH, 200, 200),  # ... and its prespawned CLI
        (201, 200, 200, 200),
    )
    assert reaper({100}, before={107}).leftovers(procs) == {100, 101, 102, 103, 104, 105}
    assert reaper({100}, before={107}).leftovers(procs, keep=[100]) == {101, 102, 103, 104, 105}
    assert reaper(set(), before={100, 107}).leftovers(procs) == {105}  # a child from before is not an orphan of ours


def gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="the sweep reads /proc (Linux)")
def test_end_all_ends_a_detached_grandchild_and_leaves_an_unrelated_process_alone(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild"
    script = (
        "import subprocess, sys, time\n"
        "g = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
        f"open({str(pid_file)!r}, 'w').write(str(g.pid))\n"
        "time.sleep(300)\n"
    )
    unrelated = subprocess.Popen(["sleep", "300"], start_new_session=True)  # not the launch's: started before it
    cli = None
    try:
        sweeper = Reaper(subreaper=False)
        cli = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
        sweeper.watch(cli.pid)
        grandchild = int(wait_for(lambda: pid_file.exists() and pid_file.read_text(), what="the grandchild's pid"))
        ended = sweeper.end_all()
        assert {cli.pid, grandchild} <= ended and unrelated.pid not in ended
        cli.wait(timeout=30)
        assert wait_for(lambda: gone(grandchild), timeout=30, what="the grandchild to end")
        assert unrelated.poll() is None
    finally:
        for proc in (unrelated, cli):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        if pid_file.exists() and not gone(int(pid_file.read_text())):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
