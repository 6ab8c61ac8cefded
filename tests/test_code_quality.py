"""The code stays clean under ruff (lint and one format for the whole tree) and strict mypy (configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "ruff", "check", "agentlaunch", "tests", "testbed", "bench"],
        [sys.executable, "-m", "ruff", "format", "--check", "agentlaunch", "tests", "testbed", "bench", "scripts/agentlaunch"],
        [sys.executable, "-m", "mypy", "--strict"],  # the packages of pyproject's [tool.mypy]: agentlaunch
    ],
    ids=["ruff", "ruff-format", "mypy-strict"],
)
def test_linters_pass(command: list[str]) -> None:
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_two_test_modules_share_a_basename() -> None:
    """The test folders are not packages: pytest imports each module by its basename, and a second module of the
    same name anywhere under tests/ is an 'import file mismatch' that fails the whole run."""
    seen: dict[str, str] = {}
    clashes = []
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        rel = path.relative_to(REPO).as_posix()
        if path.name in seen:
            clashes.append(f"{seen[path.name]} and {rel}")
        seen.setdefault(path.name, rel)
    assert clashes == []
