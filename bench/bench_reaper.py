"""Benchmark the reaper's share of a headless per-turn launch: its own tree against a walk of all of /proc.

Run: ``python bench/bench_reaper.py [--runs N]``

This process becomes a child subreaper (as ``agentlaunch run`` does) and, for
each launch, starts a CLI stand-in (``true``, a session leader), waits for it
and makes the reaper's calls of one headless turn of a per-turn CLI, in
agentlaunch's order: the SIGCHLD handler's :meth:`Reaper.reap_orphans`, the
turn's end (:meth:`Reaper.end_all`), then the launch's close
(:meth:`Reaper.leftovers`, :meth:`Reaper.end_all`). Launches alternate between
the tree walk (what a launch does now) and the same reaper made to read all
of ``/proc`` for each look (what it did before: the four full walks); only
the reaper's calls are timed, wall and CPU. Prints the medians, their ratio
and how many processes ``/proc`` held. Linux only.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentlaunch.launch import reaper as module  # noqa: E402


def one_launch(whole_proc: bool) -> tuple[float, float, dict[str, int]]:
    """The reaper's calls of one headless turn and close: (wall s, CPU s, which tables it read)."""
    sweeper = module.Reaper(subreaper=True)
    if whole_proc:

        def whole() -> dict[int, module.Proc]:
            sweeper.walks["proc"] += 1
            return module.processes()

        sweeper.table = whole  # type: ignore[method-assign]
    cli = subprocess.Popen(["true"], start_new_session=True)
    sweeper.watch(cli.pid)
    os.waitid(os.P_PID, cli.pid, os.WEXITED | os.WNOWAIT)  # exited, left a zombie for the reaper to find
    wall, cpu = time.perf_counter(), time.process_time()
    if whole_proc:
        module.processes()  # the SIGCHLD handler's walk, as reap_orphans did it before (it reads its children now)
    sweeper.reap_orphans(keep=[cli.pid])
    cli.wait()  # the driver's stop() of the exited CLI (not timed apart: a waitpid)
    sweeper.end_all()  # the turn's end
    sweeper.end_all(sweeper.leftovers())  # the launch's close
    return time.perf_counter() - wall, time.process_time() - cpu, sweeper.walks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="alternating pairs (default 30)")
    args = parser.parse_args()
    if not Path("/proc/self/task").exists() or not module.become_subreaper():
        print("needs Linux's /proc and PR_SET_CHILD_SUBREAPER", file=sys.stderr)
        return 2
    one_launch(False), one_launch(True)  # warm-up, not counted
    tree: list[tuple[float, float]] = []
    full: list[tuple[float, float]] = []
    walks: dict[bool, dict[str, int]] = {}
    for _ in range(args.runs):
        for whole, into in ((False, tree), (True, full)):
            wall, cpu, walks[whole] = one_launch(whole)
            into.append((wall, cpu))
    count = sum(name.isdigit() for name in os.listdir("/proc"))
    print(f"{args.runs} alternating pairs · {count} processes in /proc · load average {os.getloadavg()[0]:.2f}")
    print(f"tables read a launch: tree {walks[False]}, whole /proc {walks[True]} (+1 walk in the SIGCHLD handler)")
    for i, what in enumerate(("wall", "cpu")):
        t, f = median(x[i] for x in tree) * 1000, median(x[i] for x in full) * 1000
        print(f"{what:4}  own tree {t:7.2f} ms · all of /proc {f:7.2f} ms · ratio {t / f:.3f} (saved {f - t:.1f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
