"""Rewrite the test modules' asserts once, on the xdist controller, before the workers collect them.

pytest rewrites every test module's ``assert`` statements on import (its collection's main cost: about 10 CPU-s for
this suite) and caches the result in ``__pycache__`` as a hash-checked pyc. The workers start together and each
rewrote every module itself: on a fresh clone nothing is cached yet, and under ``PYTHONDONTWRITEBYTECODE`` (set on
the project's machines) pytest never writes the cache at all, so each of the four workers paid the full cost, every
run. Done once here, the workers read the pycs (about 2.4 CPU-s each to collect).

The pycs are the ones pytest itself writes without ``PYTHONDONTWRITEBYTECODE``: the same path, format and
source-hash check, in the (git-ignored) ``__pycache__`` folders or under ``sys.pycache_prefix``. It uses pytest's
private rewrite functions; when they change, nothing is written and the workers rewrite as before.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pytest


def rewritten_files(paths: Iterable[Path]) -> list[Path]:
    """The test modules and conftests under ``paths`` (files or folders), each once, in a stable order."""
    found: set[Path] = set()
    for path in paths:
        if path.is_file() and path.suffix == ".py":
            found.add(path)
        elif path.is_dir():
            found.update(p for p in path.rglob("*.py") if p.name.startswith("test_") or p.name == "conftest.py")
    return sorted(found)


def rewrite_ahead(config: pytest.Config, files: Iterable[Path]) -> int:
    """Write pytest's rewritten pyc for each of ``files`` whose cached one is missing or stale; how many it wrote."""
    try:
        from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc, _rewrite_test, _write_pyc, assertstate_key, get_cache_dir

        state = config.stash[assertstate_key]
    except (ImportError, KeyError):  # another pytest, or --assert=plain: the workers do as they always did
        return 0
    written = 0
    for fn in files:
        folder = get_cache_dir(fn)
        pyc = folder / (fn.name[:-3] + PYC_TAIL)
        if _read_pyc(fn, pyc) is not None:
            continue
        try:
            os.makedirs(folder, exist_ok=True)
            source_hash, code = _rewrite_test(fn, config)
        except (OSError, SyntaxError):
            continue  # the worker's own import reports it, as it would have
        written += bool(_write_pyc(state, code, source_hash, pyc))
    return written
