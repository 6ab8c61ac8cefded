"""The order the xdist workers run the suite in: one slice per worker, each as long as the others by weights a whole
run measured.

``--dist worksteal`` (pyproject's addopts) cuts the collection into one contiguous slice per worker, each as many
tests as the others, and a worker that runs dry takes the back half of the longest queue. In the files' order
(``tests/e2e`` first, then the rest by name) the first worker's slice held every e2e test: the others ran dry within
minutes and took e2e tests from its back, and the run ended with e2e tests of 10-40 s each, one worker after
another done (docs/performance-log.md: a whole run's timeline, and its tests replayed over xdist's rules in both
orders). Here the collection is put in the order that slicing makes balanced: the test files are dealt to one bin per
worker, heaviest first, each to the lightest bin so far; in a bin the files run from the heaviest down, each file's
tests together (module fixtures: an sshd, a built wheel, a contract session) and its long ones first, so every queue
ends with its lightest tests and what a worker steals at the end is light. Each bin begins with its heaviest files
that start no CLI, about :data:`PAD` seconds of them: on a fresh machine the CLIs' install (44 s in a CI run) goes on
meanwhile, and no worker waits for it. A bin longer than its slice (by count) gives its last, lightest tests to one
that is shorter.

The weights are seconds in a whole run (``tests/suite_weights.json``: each file's, the sum of its tests' wall time from
setup to teardown, since a test that waits holds its worker as long as one that computes; and each test's of
:data:`LONG` or more); a file they do not name weighs its tests at the run's mean per test, an e2e test's or
another's (:data:`DEFAULT_E2E` and :data:`DEFAULT` without weights). Without xdist (``-n 0``) the collection keeps its order.

Refresh the weights from a run with ``-p tests.support.cpu_times``:
``python -m tests.support.suite_order suite-cpu.jsonl`` writes ``tests/suite_weights.json``.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

WEIGHTS = Path(__file__).resolve().parent.parent / "suite_weights.json"
DEFAULT_E2E = 5.0
"""Seconds for each test of a file the weights do not name, when it is an end-to-end test (a real CLI's start)."""
DEFAULT = 0.2
"""Seconds for each test of any other file the weights do not name."""
LONG = 3.0
"""A test this long or longer is named in the weights on its own: its file runs it before its shorter tests."""
PAD = 45.0
"""Seconds of tests that start no CLI at the head of each worker's slice: the CLIs' install on a fresh machine."""


@dataclass(frozen=True)
class Weights:
    """Seconds in a whole run: each test file's (its path from the repository's root), and each long test's."""

    files: dict[str, float] = field(default_factory=dict)
    tests: dict[str, float] = field(default_factory=dict)
    e2e_test: float = DEFAULT_E2E
    """Each test's of a file not named, when it is an e2e test: the run's mean, where it says one."""
    other_test: float = DEFAULT
    """Each other test's of a file not named."""


def weights(path: Path = WEIGHTS) -> Weights:
    """The weights written in ``path``; none when it is missing."""
    try:
        written = json.loads(path.read_text())
    except FileNotFoundError:
        return Weights()
    defaults = written.get("defaults", {})
    return Weights(
        {str(name): float(seconds) for name, seconds in written["files"].items()},
        {str(name): float(seconds) for name, seconds in written["tests"].items()},
        float(defaults.get("e2e_test", DEFAULT_E2E)),
        float(defaults.get("other_test", DEFAULT)),
    )


def balanced(items: list[pytest.Item], known: Weights, workers: int) -> list[pytest.Item]:
    """``items`` in the order whose ``workers`` slices (as worksteal cuts them: as many tests each) weigh alike.

    Equal weights keep the collection's order, and nothing else decides: every worker must collect the same order
    (xdist compares them)."""
    files: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        files[item.nodeid.split("::")[0]].append(item)

    def weight(file: str) -> float:
        if file in known.files:
            return known.files[file]
        return sum(known.e2e_test if item.get_closest_marker("e2e") else known.other_test for item in files[file])

    loads = [0.0] * workers
    bins: list[list[str]] = [[] for _ in range(workers)]
    for file in sorted(files, key=lambda file: -weight(file)):  # sorted() is stable: ties keep the collection's order
        lightest = min(range(workers), key=lambda i: loads[i])
        bins[lightest].append(file)
        loads[lightest] += weight(file)
    queues: list[list[pytest.Item]] = []
    for held in bins:
        pad: list[str] = []
        padded = 0.0
        for file in held:
            if padded < PAD and not any(item.get_closest_marker("e2e") for item in files[file]):
                pad.append(file)
                padded += weight(file)
        order = pad + [file for file in held if file not in pad]
        queues.append([item for file in order for item in sorted(files[file], key=lambda i: -known.tests.get(i.nodeid, 0.0))])
    sizes, left = [], len(items)
    for i in range(workers):
        sizes.append(left // (workers - i))
        left -= sizes[-1]
    spare = [item for queue, size in zip(queues, sizes, strict=True) for item in queue[size:]]
    for queue, size in zip(queues, sizes, strict=True):
        del queue[size:]
        while len(queue) < size:
            queue.append(spare.pop())  # a bin's end: its lightest tests
    return [item for queue in queues for item in queue]


def order_for_workers(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker, ``items`` put in :func:`balanced` order for the run's workers (in place); elsewhere, or
    when the run asked for an order of its own (``--ff``, ``--nf``), left as they are."""
    asked = config.getoption("failedfirst", False) or config.getoption("newfirst", False)
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and not asked:
        items[:] = balanced(items, weights(), int(workerinput["workercount"]))


def measured(lines: Iterable[dict[str, float | str]]) -> Weights:
    """Each test file's summed wall seconds (setup to teardown), and each long test's, from ``cpu_times`` lines (those
    that have a start and an end)."""
    files: dict[str, float] = defaultdict(float)
    tests: dict[str, float] = {}
    means: dict[bool, list[float]] = {True: [], False: []}
    for line in lines:
        if "start" in line:
            seconds = float(line["end"]) - float(line["start"])
            files[str(line["id"]).split("::")[0]] += seconds
            means[str(line["id"]).startswith("tests/e2e/")].append(seconds)
            if seconds >= LONG:
                tests[str(line["id"])] = round(seconds, 1)
    e2e, other = (round(sum(m) / len(m), 2) if m else None for m in (means[True], means[False]))
    return Weights(
        {file: round(seconds, 1) for file, seconds in sorted(files.items())},
        dict(sorted(tests.items())),
        DEFAULT_E2E if e2e is None else e2e,
        DEFAULT if other is None else other,
    )


def main(argv: list[str]) -> None:
    if len(argv) not in (1, 2):
        raise SystemExit(f"usage: python -m tests.support.suite_order RUN.jsonl [OUT.json]  (default {WEIGHTS})")
    lines = [json.loads(line) for line in Path(argv[0]).read_text().splitlines()]
    note = f"Wall seconds in a whole run with -p tests.support.cpu_times: each test file's, each test's of {LONG} s or more"
    out = Path(argv[1]) if len(argv) == 2 else WEIGHTS
    found = measured(lines)
    defaults = {"e2e_test": found.e2e_test, "other_test": found.other_test}
    written = {"about": note, "defaults": defaults, "files": found.files, "tests": found.tests}
    out.write_text(json.dumps(written, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
