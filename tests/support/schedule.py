"""The order xdist's workers get the tests in: each worker's share starts with its longest tests.

``--dist worksteal`` hands each of the N workers one contiguous N-th of the collection at the start, and a worker
that runs dry steals the second half of the longest queue left. In file order the longest tests (the e2e ones,
10-35 s each) sat together in ``tests/e2e``: one or two workers got most of them, and a 30-s test taken late
finished alone at the end of the run. Here each worker's share begins with long tests dealt by longest-first
(each to the share with the least recorded time so far), then the short tests in file order; what is stolen from
a share's end is short.

The recorded times are ``tests/durations.json`` (``python -m tests.support.schedule LOG`` writes it from a
``--durations=0`` run's output). A test missing from it counts as short, so an old file costs balance, never a
test. A module whose tests share a module- or class-scoped fixture moves as one (its fixture is set up once).
"""

from __future__ import annotations

import heapq
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

DURATIONS = Path(__file__).resolve().parent.parent / "durations.json"
LONG = 1.0
"""Seconds from which a test (or a module that moves as one) is dealt out first."""
_LINE = re.compile(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(\S+)")


def recorded(path: Path = DURATIONS) -> dict[str, float]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _unit(item: pytest.Item) -> str:
    """The test's own id, or its module's when it shares a module- or class-scoped fixture with its neighbours."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    shared = any(d and d[-1].scope in ("module", "class") for d in defs)
    return item.nodeid.split("::")[0] if shared else item.nodeid


def shares(n: int, total: int) -> list[int]:
    """How many tests worksteal first sends each of ``n`` workers, in order (its ``len(pending) // remaining``)."""
    sizes = []
    for i in range(n):
        sizes.append(total // (n - i))
        total -= sizes[-1]
    return sizes


def deal(items: Sequence[pytest.Item], workers: int, times: dict[str, float]) -> list[pytest.Item]:
    """``items`` ordered so that each worker's first share starts with its part of the long tests."""
    if workers < 2 or not times:
        return list(items)
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault(_unit(item), []).append(item)
    cost = {key: sum(times.get(i.nodeid, 0.0) for i in group) for key, group in units.items()}
    long = sorted((key for key in units if cost[key] >= LONG), key=lambda key: -cost[key])
    heads: list[list[pytest.Item]] = [[] for _ in range(workers)]
    heap = [(0.0, w) for w in range(workers)]
    for key in long:
        spent, w = heapq.heappop(heap)
        heads[w].extend(units[key])
        heapq.heappush(heap, (spent + cost[key], w))
    dealt = set(long)
    rest = [item for key, group in units.items() if key not in dealt for item in group]
    ordered: list[pytest.Item] = []
    for w, size in enumerate(shares(workers, len(items))):
        take = max(size - len(heads[w]), 0)
        ordered += heads[w] + rest[:take]
        rest = rest[take:]
    return ordered + rest


def write_durations(log: Path, out: Path = DURATIONS) -> int:
    """``tests/durations.json`` from a ``--durations=0`` output: each test's setup+call+teardown, the long ones."""
    total: dict[str, float] = {}
    for line in log.read_text(errors="replace").splitlines():
        match = _LINE.match(line)
        if match:
            total[match.group(3)] = total.get(match.group(3), 0.0) + float(match.group(1))
    kept = {k: round(v, 1) for k, v in sorted(total.items()) if v >= LONG / 2}
    out.write_text(json.dumps(kept, indent=0, sort_keys=True) + "\n")
    return len(kept)


if __name__ == "__main__":
    print(f"{write_durations(Path(sys.argv[1]))} tests in {DURATIONS}")
