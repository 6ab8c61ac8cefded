"""Which processes a launch ends when it is over, on plain process tables and on real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agentlaunch.launch.reaper import Proc, Reaper
from tests.support.waits import wait_for

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


# -- the tree walk: a subreaper follows its own descendants instead of reading all of /proc ----------------

CLI = """
import os, subprocess, sys, time
out = sys.argv[1]
first = os.fork()
if first == 0:  # a daemonizing helper: a new session, a double fork, its parent gone at once
    os.setsid()
    if os.fork() == 0:
        open(out + '/escaped', 'w').write(str(os.getpid()))
        os.execvp('sleep', ['sleep', '300'])
    os._exit(0)
os.waitpid(first, 0)
helper = subprocess.Popen(['sleep', '300'], start_new_session=True)
open(out + '/helper', 'w').write(str(helper.pid))
time.sleep(300)
"""

DRIVER = """
import json, os, subprocess, sys, time
from agentlaunch.launch import reaper as r
out, unrelated = sys.argv[1], int(sys.argv[2])
if sys.argv[3] == 'no-children-files':
    r.children_of = lambda pid: None
sweeper = r.Reaper(subreaper=True)
cli = subprocess.Popen([sys.executable, '-c', sys.argv[4], out], start_new_session=True)
sweeper.watch(cli.pid)
deadline = time.monotonic() + 60
while not all(os.path.exists(out + '/' + n) and open(out + '/' + n).read() for n in ('escaped', 'helper')):
    assert time.monotonic() < deadline, 'the CLI never wrote its helpers pids'
    time.sleep(0.02)
escaped = int(open(out + '/escaped').read())
while r._stat(escaped).ppid != os.getpid():  # its parent exits at once: it comes back to the subreaper
    assert time.monotonic() < deadline, 'the escaped grandchild never came back'
    time.sleep(0.02)
seen = sorted(sweeper.leftovers())
whole = sorted(sweeper.leftovers(r.processes()))
walks = dict(sweeper.walks)
ended = sweeper.end_all()
cli.wait(timeout=30)
print(json.dumps({'me': os.getpid(), 'cli': cli.pid, 'escaped': escaped, 'helper': int(open(out + '/helper').read()),
    'seen': seen, 'whole': whole, 'walks': walks, 'ended': sorted(ended), 'subreaper': sweeper.subreaper}))
"""


def _run_driver(tmp_path: Path, mode: str) -> dict[str, object]:
    import json

    unrelated = subprocess.Popen(["sleep", "300"], start_new_session=True)  # not the launch's, not below it
    result: dict[str, object] = {}
    try:
        done = subprocess.run(
            [sys.executable, "-c", DRIVER, str(tmp_path), str(unrelated.pid), mode, CLI],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert unrelated.poll() is None and unrelated.pid not in result["ended"]  # type: ignore[operator]
        return result
    finally:
        unrelated.kill()
        unrelated.wait()
        for name in ("escaped", "helper"):
            if (tmp_path / name).exists() and not gone(int((tmp_path / name).read_text())):
                os.kill(int((tmp_path / name).read_text()), signal.SIGKILL)


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="the subreaper and the tree walk are Linux's")
def test_a_subreaper_finds_an_escaped_grandchild_in_its_own_tree_and_ends_it(tmp_path: Path) -> None:
    if not Path(f"/proc/self/task/{os.getpid()}/children").exists():
        pytest.skip("this kernel has no /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN)")
    got = _run_driver(tmp_path, "tree")
    assert got["subreaper"] is True
    launch = {got["cli"], got["escaped"], got["helper"]}
    # The tree holds exactly what the whole of /proc says is the launch's, the double-forked helper included.
    assert set(got["seen"]) == set(got["whole"]) == launch  # type: ignore[call-overload]
    assert got["walks"] == {"tree": 1, "proc": 0}
    assert launch <= set(got["ended"]) and got["me"] not in got["ended"]  # type: ignore[call-overload,operator]
    for pid in (got["escaped"], got["helper"]):
        assert wait_for(lambda pid=pid: gone(pid), timeout=30, what=f"{pid} to end")  # type: ignore[misc]


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="the subreaper is Linux's")
def test_without_children_files_the_subreaper_reads_all_of_proc_and_still_ends_everything(tmp_path: Path) -> None:
    got = _run_driver(tmp_path, "no-children-files")
    launch = {got["cli"], got["escaped"], got["helper"]}
    assert set(got["seen"]) == set(got["whole"]) == launch  # type: ignore[call-overload]
    assert got["walks"] == {"tree": 0, "proc": 1}
    assert launch <= set(got["ended"])  # type: ignore[call-overload]
    for pid in (got["escaped"], got["helper"]):
        assert wait_for(lambda pid=pid: gone(pid), timeout=30, what=f"{pid} to end")  # type: ignore[misc]


def test_the_tree_is_trusted_only_for_clis_started_below_a_subreaper(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentlaunch.launch import reaper as module

    tree = table((ME, 1, ME, MY_SID), (100, ME, 100, 100), (101, 100, 100, 100))
    whole = {**tree, 300: Proc(300, 1, 300, 300, False)}
    monkeypatch.setattr(module, "own_tree", lambda: tree)
    monkeypatch.setattr(module, "processes", lambda: whole)
    monkeypatch.setattr(module, "_stat", lambda pid: whole.get(pid))
    monkeypatch.setattr(module.os, "getpid", lambda: ME)

    def which(roots: set[int], *, subreaper: bool = True, since: frozenset[int] = frozenset()) -> dict[int, Proc]:
        monkeypatch.setattr(module, "_subreaper_since", since if subreaper else None)
        monkeypatch.setattr(module, "_subreaper_since_pid", ME)
        r = reaper(roots)
        r.subreaper = subreaper
        return r.table()

    assert which({100}) is tree
    assert which({100, 999}) is tree  # a CLI already gone (reaped) leaves nothing outside the tree
    assert which({100}, subreaper=False) is whole  # no subreaper: an orphan may be with init
    assert which({100}, since=frozenset({100})) is whole  # started before agentlaunch became a subreaper
    assert which({100, 300}) is whole  # a CLI that is not below agentlaunch
    monkeypatch.setattr(module, "own_tree", lambda: None)  # no children files, or a tree that kept changing
    assert which({100}) is whole


def test_a_tree_that_keeps_changing_is_not_trusted(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentlaunch.launch import reaper as module

    walks = iter(range(100))
    monkeypatch.setattr(module, "descendants", lambda root: {next(walks): Proc(0, 0, 0, 0, False)})
    assert module.own_tree() is None
    steady = {1: Proc(1, 0, 1, 1, False)}
    monkeypatch.setattr(module, "descendants", lambda root: steady)
    assert module.own_tree() == steady


def test_proc_text_reads_a_whole_file_and_raises_for_a_missing_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reaper's reads of /proc (platform_support.proc_text): every byte of a file longer than one read, as text."""
    from agentlaunch import platform_support
    from agentlaunch.platform_support import proc_text
    from agentlaunch.processes import stat_fields

    fields = stat_fields(os.getpid())
    assert fields is not None and fields[0] in "RS" and int(fields[1]) == os.getppid()
    assert stat_fields(2**22 + 1) is None
    monkeypatch.setattr(platform_support, "PROC", str(tmp_path))
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "big").write_bytes(b"12 34\n" * 40_000)  # 240 kB: several reads
    assert proc_text(7, "big") == "12 34\n" * 40_000
    assert platform_support.proc_names(7) == ["big"]
    with pytest.raises(FileNotFoundError):
        proc_text(7, "missing")
