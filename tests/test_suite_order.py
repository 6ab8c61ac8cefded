"""The workers' order of the suite (tests/support/suite_order.py): slices that weigh alike, each file whole."""

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


def test_files_are_dealt_heaviest_first_to_the_lightest_slice_and_run_heaviest_first_in_it() -> None:
    collected = [
        Item("tests/e2e/test_a.py::one", e2e=True),
        Item("tests/e2e/test_b.py::one", e2e=True),
        Item("tests/e2e/test_a.py::two", e2e=True),  # a file's tests stay together
        Item("tests/e2e/test_c.py::one", e2e=True),
        Item("tests/e2e/test_d.py::one", e2e=True),
        Item("tests/e2e/test_b.py::two", e2e=True),
        Item("tests/e2e/test_c.py::two", e2e=True),
        Item("tests/e2e/test_d.py::two", e2e=True),
    ]
    known = suite_order.Weights(
        {"tests/e2e/test_a.py": 30.0, "tests/e2e/test_b.py": 25.0, "tests/e2e/test_c.py": 10.0, "tests/e2e/test_d.py": 8.0},
        {"tests/e2e/test_a.py::two": 20.0},  # a's long test: first in its file
    )
    ordered = suite_order.balanced(cast(list[pytest.Item], collected), known, workers=2)
    # a (30) to the first slice, b (25) to the second, c (10) to the second (25 < 30), d (8) to the first (30 < 35)
    assert ids(ordered) == [
        "tests/e2e/test_a.py::two",
        "tests/e2e/test_a.py::one",
        "tests/e2e/test_d.py::one",
        "tests/e2e/test_d.py::two",
        "tests/e2e/test_b.py::one",
        "tests/e2e/test_b.py::two",
        "tests/e2e/test_c.py::one",
        "tests/e2e/test_c.py::two",
    ]


def test_each_slice_begins_with_its_heaviest_files_that_start_no_cli_while_the_clis_install() -> None:
    collected = [
        Item("tests/e2e/test_e.py::one", e2e=True),
        Item("tests/e2e/test_f.py::one", e2e=True),
        Item("tests/test_u1.py::one"),
        Item("tests/test_u2.py::one"),
    ]
    known = suite_order.Weights(
        {"tests/e2e/test_e.py": 50.0, "tests/e2e/test_f.py": 40.0, "tests/test_u1.py": 30.0, "tests/test_u2.py": 20.0}
    )
    ordered = suite_order.balanced(cast(list[pytest.Item], collected), known, workers=2)
    assert ids(ordered) == [
        "tests/test_u2.py::one",
        "tests/e2e/test_e.py::one",
        "tests/test_u1.py::one",
        "tests/e2e/test_f.py::one",
    ]


def test_a_slice_with_more_tests_than_worksteal_gives_it_hands_its_last_ones_to_a_shorter_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(suite_order, "PAD", 0.0)
    collected = [Item("tests/e2e/test_x.py::one", e2e=True), Item("tests/e2e/test_z.py::one", e2e=True)]
    collected += [Item(f"tests/test_y.py::t{i}") for i in range(4)]
    known = suite_order.Weights({"tests/e2e/test_x.py": 40.0, "tests/e2e/test_z.py": 30.0, "tests/test_y.py": 2.0})
    ordered = suite_order.balanced(cast(list[pytest.Item], collected), known, workers=2)
    # slices of 3 and 3 tests: x alone weighed most (40 against 30 + 2), and takes the second slice's last two
    assert ids(ordered) == [
        "tests/e2e/test_x.py::one",
        "tests/test_y.py::t3",
        "tests/test_y.py::t2",
        "tests/e2e/test_z.py::one",
        "tests/test_y.py::t0",
        "tests/test_y.py::t1",
    ]


def test_a_file_the_weights_do_not_name_weighs_its_tests_at_the_defaults_an_e2e_test_more() -> None:
    new_e2e = [Item("tests/e2e/test_new.py::one", e2e=True)]  # 5.0 by default
    new_units = [Item(f"tests/test_new.py::t{i}") for i in range(20)]  # 20 x 0.2 = 4.0
    collected = cast(list[pytest.Item], [*new_units, *new_e2e])
    assert suite_order.balanced(collected, suite_order.Weights(), workers=2)[0].nodeid == "tests/e2e/test_new.py::one"
    named = suite_order.Weights({"tests/test_new.py": 6.0})  # named: its weight, not the defaults'
    assert suite_order.balanced(collected, named, workers=2)[0].nodeid == "tests/test_new.py::t0"
    light_e2e = suite_order.Weights(e2e_test=1.0)  # the run's mean an e2e test, where the weights say one
    assert suite_order.balanced(collected, light_e2e, workers=2)[0].nodeid == "tests/test_new.py::t0"


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
        e2e_test=30.0,  # the run's mean per e2e test, and per other test: a file it did not name weighs so much a test
        other_test=1.5,
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
            self.workerinput = {"workerid": "gw0", "workercount": 2}
        self.options = options

    def getoption(self, name: str, default: bool) -> bool:
        return self.options.get(name, default)


def test_only_an_xdist_worker_reorders_and_not_when_the_run_asked_for_failed_or_new_tests_first() -> None:
    known = suite_order.weights()
    e2e = sorted(file for file in known.files if file.startswith("tests/e2e/"))
    light, heavy = min(e2e, key=known.files.__getitem__), max(e2e, key=known.files.__getitem__)
    collected = cast(list[pytest.Item], [Item(f"{light}::one", e2e=True), Item(f"{heavy}::one", e2e=True)])
    for config, first in [
        (Config(worker=True), heavy),
        (Config(worker=False), light),  # -n 0: the collection's order
        (Config(worker=True, failedfirst=True), light),
        (Config(worker=True, newfirst=True), light),
    ]:
        items = list(collected)
        suite_order.order_for_workers(cast(pytest.Config, config), items)
        assert items[0].nodeid == f"{first}::one"
