"""A pytest plugin, off unless asked for: each test's CPU seconds, for ``bench/bench_suite.py``.

Run: ``python -m pytest -p tests.support.cpu_times`` (with ``-n``, each worker loads it). Each test appends one
JSON line ``{"id", "self", "children", "worker", "start", "end"}`` to ``$AGENTLAUNCH_CPU_TIMES`` (default
``suite-cpu.jsonl`` in the working folder): the CPU its process spent from setup to teardown, and the CPU of the
children it waited for (a
CLI under agentlaunch, itself waited for, counts: the kernel adds a reaped child's own waited children). Not
counted without help: what no process of the test waits for, such as a tmux server and its panes (tmux forks itself
away); the worker is made a child subreaper, and the orphans it inherits are waited for after each test, so their CPU
is counted too (for the test during which they ended). ``worker`` (xdist's ``gw0``..., ``main`` without xdist),
``start`` and ``end`` (wall clock, seconds since the epoch, from setup to teardown) show the run's timeline: which
worker ran what when, and how long the last tests ran with the other workers idle (``bench/bench_suite.py``).

Why not ``--durations``: on 2 shared cores a test's wall time is mostly its wait for a core (a template test took
2.6 s alone and 39.5 s in a loaded full run); its CPU seconds barely move with the load.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import os
import resource
import subprocess
import time
from collections.abc import Iterator

import pytest

PR_SET_CHILD_SUBREAPER = 36


def pytest_configure(config: pytest.Config) -> None:
    """Make each worker a child subreaper: a tmux server (which forks itself away) and its panes are reparented here
    when their parent exits, and :func:`reap_orphans` waits for them, so the kernel counts their CPU."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def reap_orphans() -> None:
    """Wait for the zombies reparented to this process that no ``Popen`` of the test owns (a tmux server, its panes)."""
    zombies = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] == "Z" and int(fields[1]) == os.getpid():
                zombies.add(int(entry))
    if zombies:
        zombies -= {p.pid for p in gc.get_objects() if isinstance(p, subprocess.Popen) and p.returncode is None}
    for pid in zombies:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def _cpu() -> tuple[float, float]:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    began, start = time.time(), _cpu()
    yield
    reap_orphans()
    end = _cpu()
    line = {
        "id": item.nodeid,
        "self": round(end[0] - start[0], 3),
        "children": round(end[1] - start[1], 3),
        "worker": getattr(item.config, "workerinput", {}).get("workerid", "main"),
        "start": round(began, 3),
        "end": round(time.time(), 3),
    }
    with open(os.environ.get("AGENTLAUNCH_CPU_TIMES", "suite-cpu.jsonl"), "a") as out:  # one short write per line
        out.write(json.dumps(line) + "\n")
