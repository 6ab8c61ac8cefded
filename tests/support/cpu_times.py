"""A pytest plugin, off unless asked for: each test's CPU seconds, for ``bench/bench_suite.py``.

Run: ``python -m pytest -p tests.support.cpu_times`` (with ``-n``, each worker loads it). Each test appends one
JSON line ``{"id", "self", "children"}`` to ``$AGENTLAUNCH_CPU_TIMES`` (default ``suite-cpu.jsonl`` in the
working folder): the CPU its process spent from setup to teardown, and the CPU of the children it waited for (a
CLI under agentlaunch, itself waited for, counts: the kernel adds a reaped child's own waited children). Not
counted: what no process of the test waits for, such as the panes of a tmux server (tmux forks itself away).

Why not ``--durations``: on 2 shared cores a test's wall time is mostly its wait for a core (a template test took
2.6 s alone and 39.5 s in a loaded full run); its CPU seconds barely move with the load.
"""

from __future__ import annotations

import json
import os
import resource
from collections.abc import Iterator

import pytest


def _cpu() -> tuple[float, float]:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    start = _cpu()
    yield
    end = _cpu()
    line = {"id": item.nodeid, "self": round(end[0] - start[0], 3), "children": round(end[1] - start[1], 3)}
    with open(os.environ.get("AGENTLAUNCH_CPU_TIMES", "suite-cpu.jsonl"), "a") as out:  # one short write per line
        out.write(json.dumps(line) + "\n")
