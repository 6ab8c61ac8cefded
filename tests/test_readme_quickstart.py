"""The README's quick-start command works as written, for a new user in a fresh virtualenv.

The command is read from the README (its first ``sh`` block), so this test
fails when the README changes and the command breaks. It is one line,
``INSTALL && RUN``: the install runs in the clone (its ``.`` is the clone),
the run from a directory that is not the clone, so the agent can come only
from the example agents installed with the package.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.venvs import make_venv, where_agentlaunch_imports_from


def quick_start() -> str:
    """The first ``sh`` block of README.md, which must be a single command line."""
    match = re.search(r"^```sh\n(.*?)^```", (REPO / "README.md").read_text(), re.M | re.S)
    assert match, "README.md has no ```sh block"
    lines = [line for line in match.group(1).splitlines() if line.strip()]
    assert len(lines) == 1, f"the quick start is one command line, got {lines}"
    return lines[0]


def test_the_quick_start_is_install_then_run() -> None:
    install, run = quick_start().split(" && ")
    assert install.split()[:2] == ["pip", "install"]
    assert run.split()[:2] == ["agentlaunch", "run"]


@pytest.mark.timeout(600)
def test_the_readme_quick_start_runs_as_written(tmp_path: Path) -> None:
    install, run = quick_start().split(" && ")
    venv = make_venv(tmp_path / "venv")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    installed = subprocess.run(["bash", "-c", install], cwd=REPO, env=venv.env(), capture_output=True, text=True, timeout=480)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert str(venv.root) in where_agentlaunch_imports_from(venv, elsewhere), "the run must use the installed package"

    result = subprocess.run(["bash", "-c", run], cwd=elsewhere, env=venv.env(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip(), "the answer is on stdout"
    assert "bundled examples" in result.stderr and "bundled examples" not in result.stdout
