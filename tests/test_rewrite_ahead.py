"""The suite's own plumbing: the test modules' asserts rewritten once, ahead of the xdist workers."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from tests.support.rewrite_ahead import rewrite_ahead, rewritten_files


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
