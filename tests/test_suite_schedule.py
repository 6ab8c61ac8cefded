"""The suite's own plumbing: xdist shares that start with their longest tests, and assert rewriting done ahead."""

from __future__ import annotations

import json
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.rewrite_ahead import rewrite_ahead, rewritten_files
from tests.support.schedule import deal, recorded, shares, write_durations


@dataclass
class FakeDef:
    scope: str


@dataclass
class FakeInfo:
    name2fixturedefs: dict[str, list[FakeDef]] = field(default_factory=dict)


@dataclass
class FakeItem:
    nodeid: str
    _fixtureinfo: FakeInfo = field(default_factory=FakeInfo)


def items(*ids: str, module_scoped: tuple[str, ...] = ()) -> list[Any]:
    return [FakeItem(i, FakeInfo({"wheel": [FakeDef("module")]} if i.split("::")[0] in module_scoped else {})) for i in ids]


def test_shares_are_worksteals_first_split() -> None:
    assert shares(4, 1881) == [470, 470, 470, 471]
    assert shares(2, 5) == [2, 3]
    assert sum(shares(3, 10)) == 10


def test_each_share_starts_with_its_long_tests_and_every_test_stays_once() -> None:
    ids = [f"a.py::t{i}" for i in range(10)] + ["e.py::long1", "e.py::long2", "e.py::long3"]
    times = {"e.py::long1": 30.0, "e.py::long2": 20.0, "e.py::long3": 15.0, "a.py::t0": 0.2}
    ordered = [i.nodeid for i in deal(items(*ids), 2, times)]
    assert sorted(ordered) == sorted(ids)
    first, second = ordered[:6], ordered[6:]  # worksteal's split of 13 tests over 2 workers: 6, then 7
    assert first[0] == "e.py::long1" and second[:2] == ["e.py::long2", "e.py::long3"]  # longest-first, least-loaded
    short = [i for i in ordered if i.startswith("a.py")]
    assert short == [f"a.py::t{i}" for i in range(10)]  # the short tests keep file order


def test_a_module_with_a_module_scoped_fixture_moves_as_one() -> None:
    ids = ["p.py::a", "p.py::b", "p.py::c", "x.py::long", "y.py::s1", "y.py::s2"]
    times = {"p.py::a": 0.6, "p.py::b": 0.6, "x.py::long": 5.0}
    ordered = [i.nodeid for i in deal(items(*ids, module_scoped=("p.py",)), 2, times)]
    at = ordered.index("p.py::a")
    assert ordered[at:at + 3] == ["p.py::a", "p.py::b", "p.py::c"]


def test_one_worker_or_no_record_keeps_file_order() -> None:
    ids = ["a.py::x", "b.py::y"]
    assert [i.nodeid for i in deal(items(*ids), 1, {"b.py::y": 9.0})] == ids
    assert [i.nodeid for i in deal(items(*ids), 4, {})] == ids


def test_durations_come_from_a_durations_report(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text("== slowest durations ==\n12.50s call     tests/x.py::t\n0.40s setup    tests/x.py::t\n"
                   "0.10s call     tests/y.py::u\n(0.00 durations hidden)\n")  # fmt: skip
    out = tmp_path / "durations.json"
    assert write_durations(log, out) == 1
    assert json.loads(out.read_text()) == {"tests/x.py::t": 12.9}
    assert recorded(out) == {"tests/x.py::t": 12.9}
    assert recorded(tmp_path / "missing.json") == {}


def test_rewrite_ahead_writes_the_pyc_pytest_reads_and_only_once(pytestconfig: pytest.Config, tmp_path: Path) -> None:
    from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc, get_cache_dir

    source = tmp_path / "test_sample.py"
    source.write_text("def test_x():\n    assert 1 + 1 == 2\n")
    (tmp_path / "helper.py").write_text("X = 1\n")
    files = rewritten_files([tmp_path])
    assert files == [source]
    assert rewrite_ahead(pytestconfig, files) == 1
    pyc = get_cache_dir(source) / ("test_sample" + PYC_TAIL)
    code = _read_pyc(source, pyc)
    assert code is not None
    (function,) = [c for c in code.co_consts if isinstance(c, types.CodeType)]
    assert any(name.startswith("@py_assert") for name in function.co_varnames)  # rewritten, not plain
    assert rewrite_ahead(pytestconfig, files) == 0  # up to date: left alone
    source.write_text("def test_x():\n    assert 2 == 2\n")
    assert rewrite_ahead(pytestconfig, files) == 1  # its source changed: written again
