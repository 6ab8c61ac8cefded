"""The order the xdist workers run the suite in: the longest test files first, from weights a whole run measured.

``--dist worksteal`` (pyproject's addopts) cuts the collection into one contiguous slice per worker, each as many
tests as the others, and a worker that runs dry takes the back half of the longest queue. Run in the files' order
(``tests/e2e`` first, then the rest by name), a test file of a minute could be taken late and end the run alone while
the other workers waited. Here each test file keeps its tests together (module fixtures: an sshd, a built wheel, a
contract session), and the files run from the heaviest down, in each its long tests first: the first worker's slice
starts with the heaviest files, every queue ends with its lightest, and what a worker steals from another's back is
the light part. The weights are seconds in a whole run (``tests/suite_weights.json``: each file's, the sum of its
tests' wall time from setup to teardown, since a test that waits holds its worker as long as one that computes; and
each test's of :data:`LONG` or more); a file they do not name weighs its tests at a default per test, an e2e test
more than another. Without xdist (``-n 0``) the collection keeps its order.

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


@dataclass(frozen=True)
class Weights:
    """Seconds in a whole run: each test file's (its path from the repository's root), and each long test's."""

    files: dict[str, float] = field(default_factory=dict)
    tests: dict[str, float] = field(default_factory=dict)


def weights(path: Path = WEIGHTS) -> Weights:
    """The weights written in ``path``; none when it is missing."""
    try:
        written = json.loads(path.read_text())
    except FileNotFoundError:
        return Weights()
    return Weights(
        {str(name): float(seconds) for name, seconds in written["files"].items()},
        {str(name): float(seconds) for name, seconds in written["tests"].items()},
    )


def heaviest_first(items: list[pytest.Item], known: Weights) -> list[pytest.Item]:
    """``items`` grouped by file, the files from the heaviest down, in each its long tests first.

    A file's weight is ``known``'s, or each test's default; a file's tests keep the collection's order but for the
    long ones ``known`` names, which come first, the longest first. Equal weights keep the collection's order (every
    worker must collect the same order: xdist compares them)."""
    files: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        files[item.nodeid.split("::")[0]].append(item)

    def weight(file: str) -> float:
        if file in known.files:
            return known.files[file]
        return sum(DEFAULT_E2E if item.get_closest_marker("e2e") else DEFAULT for item in files[file])

    order = sorted(files, key=lambda file: -weight(file))  # sorted() is stable: ties keep the collection's order
    return [item for file in order for item in sorted(files[file], key=lambda item: -known.tests.get(item.nodeid, 0.0))]


def order_for_workers(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker, ``items`` put in :func:`heaviest_first` order (in place); elsewhere, or when the run asked
    for an order of its own (``--ff``, ``--nf``), left as they are."""
    asked = config.getoption("failedfirst", False) or config.getoption("newfirst", False)
    if hasattr(config, "workerinput") and not asked:
        items[:] = heaviest_first(items, weights())


def measured(lines: Iterable[dict[str, float | str]]) -> Weights:
    """Each test file's summed wall seconds (setup to teardown), and each long test's, from ``cpu_times`` lines (those
    that have a start and an end)."""
    files: dict[str, float] = defaultdict(float)
    tests: dict[str, float] = {}
    for line in lines:
        if "start" in line:
            seconds = float(line["end"]) - float(line["start"])
            files[str(line["id"]).split("::")[0]] += seconds
            if seconds >= LONG:
                tests[str(line["id"])] = round(seconds, 1)
    return Weights({file: round(seconds, 1) for file, seconds in sorted(files.items())}, dict(sorted(tests.items())))


def main(argv: list[str]) -> None:
    if len(argv) not in (1, 2):
        raise SystemExit(f"usage: python -m tests.support.suite_order RUN.jsonl [OUT.json]  (default {WEIGHTS})")
    lines = [json.loads(line) for line in Path(argv[0]).read_text().splitlines()]
    note = f"Wall seconds in a whole run with -p tests.support.cpu_times: each test file's, each test's of {LONG} s or more"
    out = Path(argv[1]) if len(argv) == 2 else WEIGHTS
    found = measured(lines)
    out.write_text(json.dumps({"about": note, "files": found.files, "tests": found.tests}, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
