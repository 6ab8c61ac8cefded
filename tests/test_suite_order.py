"""The workers' order of the suite (tests/support/suite_order.py): test files from the heaviest down, each whole."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest

from tests.conftest import REPO
from tests.support import suite_order


class Item:
    """What the order reads of a collected test: its node id and whether it is marked e2e."""

    def __init__(self, nodeid: str, e2e: bool = False) -> None:
        self.nodeid, self.e2e = nodeid, e2e

    def get_closest_marker(self, name: str) -> object | None:
        return object() if name == "e2e" and self.e2e else None


def ids(items: list[pytest.Item]) -> list[str]:
    return [item.nodeid for item in items]


def test_files_go_from_the_heaviest_down_each_with_its_tests_together_its_long_ones_first() -> None:
    collected = [
        Item("tests/test_a.py::one"),
        Item("tests/test_b.py::one"),
        Item("tests/test_a.py::two"),  # a file's tests stay together, in the order they came
        Item("tests/test_c.py::one"),
        Item("tests/test_d.py::one"),
        Item("tests/test_b.py::two"),
        Item("tests/test_b.py::three"),
        Item("tests/test_b.py::four"),
    ]
    known = suite_order.Weights(
        {"tests/test_a.py": 1.0, "tests/test_b.py": 30.0, "tests/test_c.py": 1.0, "tests/test_d.py": 1.5},
        {"tests/test_b.py::three": 20.0, "tests/test_b.py::two": 8.0},  # b's long tests
    )
    ordered = suite_order.heaviest_first(cast(list[pytest.Item], collected), known)
    assert ids(ordered) == [
        "tests/test_b.py::three",
        "tests/test_b.py::two",
        "tests/test_b.py::one",  # b's other tests in the order they came
        "tests/test_b.py::four",
        "tests/test_d.py::one",
        "tests/test_a.py::one",  # equal weights (a and c) keep the collection's order
        "tests/test_a.py::two",
        "tests/test_c.py::one",
    ]


def test_a_file_the_weights_do_not_name_weighs_its_tests_at_the_defaults_an_e2e_test_more() -> None:
    new_e2e = [Item("tests/e2e/test_new.py::one", e2e=True)]  # 5.0 by default
    new_units = [Item(f"tests/test_new.py::t{i}") for i in range(20)]  # 20 x 0.2 = 4.0
    known = suite_order.Weights({"tests/test_old.py": 4.5})
    collected = cast(list[pytest.Item], [*new_units, Item("tests/test_old.py::one"), *new_e2e])
    ordered = suite_order.heaviest_first(collected, known)
    assert [nodeid.split("::")[0] for nodeid in dict.fromkeys(ids(ordered))] == [
        "tests/e2e/test_new.py",
        "tests/test_old.py",
        *["tests/test_new.py"] * 20,
    ]
    assert (
        suite_order.heaviest_first(collected, suite_order.Weights())[0].nodeid == "tests/e2e/test_new.py::one"
    )  # no weights at all


def test_a_missing_weights_file_is_no_weights(tmp_path: Path) -> None:
    assert suite_order.weights(tmp_path / "absent.json") == suite_order.Weights({}, {})


def test_the_weights_are_written_from_a_cpu_times_run_each_files_summed_wall_seconds_and_each_long_tests(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run.jsonl"
    lines = [
        {"id": "tests/test_a.py::one", "self": 0.1, "children": 0.0, "worker": "gw0", "start": 100.0, "end": 102.5},
        {"id": "tests/test_a.py::two[x]", "self": 0.1, "children": 0.0, "worker": "gw1", "start": 101.0, "end": 101.5},
        {"id": "tests/e2e/test_b.py::one", "self": 2.0, "children": 9.0, "worker": "gw0", "start": 103.0, "end": 133.0},
        {"id": "tests/test_old.py::one", "self": 0.2, "children": 0.0},  # a line of before the timeline: no weight
    ]
    run.write_text("".join(json.dumps(line) + "\n" for line in lines))
    expected = suite_order.Weights(
        {"tests/e2e/test_b.py": 30.0, "tests/test_a.py": 3.0},
        {"tests/e2e/test_b.py::one": 30.0},  # 3 s and more; tests/test_a.py::one took 2.5
    )
    assert suite_order.measured(json.loads(line) for line in run.read_text().splitlines()) == expected
    out = tmp_path / "weights.json"
    written = subprocess.run([sys.executable, "-m", "tests.support.suite_order", str(run), str(out)], cwd=REPO)
    assert written.returncode == 0 and suite_order.weights(out) == expected
    usage = subprocess.run([sys.executable, "-m", "tests.support.suite_order"], cwd=REPO, capture_output=True, text=True)
    assert usage.returncode == 1 and "usage: python -m tests.support.suite_order RUN.jsonl" in usage.stderr


def test_the_committed_weights_are_read_and_name_test_files() -> None:
    known = suite_order.weights()
    assert known.files, "tests/suite_weights.json: python -m tests.support.suite_order RUN.jsonl writes it"
    assert all(file.startswith("tests/") and file.endswith(".py") and s >= 0 for file, s in known.files.items())
    assert all(test.split("::")[0] in known.files and s >= suite_order.LONG for test, s in known.tests.items())


class Config:
    """What the order reads of pytest's config: a worker has ``workerinput``; ``--ff`` and ``--nf`` are options."""

    def __init__(self, worker: bool, **options: bool) -> None:
        if worker:
            self.workerinput = {"workerid": "gw0"}
        self.options = options

    def getoption(self, name: str, default: bool) -> bool:
        return self.options.get(name, default)


def test_only_an_xdist_worker_reorders_and_not_when_the_run_asked_for_failed_or_new_tests_first() -> None:
    known = suite_order.weights()
    light, heavy = sorted(known.files, key=known.files.__getitem__)[0], max(known.files, key=known.files.__getitem__)
    collected = cast(list[pytest.Item], [Item(f"{light}::one"), Item(f"{heavy}::one")])
    for config, first in [
        (Config(worker=True), heavy),
        (Config(worker=False), light),  # -n 0: the collection's order
        (Config(worker=True, failedfirst=True), light),
        (Config(worker=True, newfirst=True), light),
    ]:
        items = list(collected)
        suite_order.order_for_workers(cast(pytest.Config, config), items)
        assert items[0].nodeid == f"{first}::one"
