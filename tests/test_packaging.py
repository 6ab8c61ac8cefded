"""The built wheel works on its own: templates and example agents ship inside it."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.mark.timeout(600)
def test_wheel_installs_and_runs_without_the_repository(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(REPO)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = dist.glob("agentlaunch-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "agentlaunch/_data/templates/instructions.md.j2" in names
    assert "agentlaunch/_data/agents/demo/agent.yaml" in names

    venv = tmp_path / "venv"
    # System site-packages supply the dependencies; the wheel itself is what is tested.
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["AGENTLAUNCH_AGENTS_DIR"] = str(elsewhere / "agents")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(venv / "bin" / "agentlaunch"), *args], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120
        )

    located = subprocess.run(
        [str(py), "-c", "import agentlaunch; print(agentlaunch.__file__)"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(venv) in located, "the test must exercise the installed wheel, not the source tree"
    assert run("init", str(elsewhere / "agents")).returncode == 0
    result = run("render", "reviewer", "--stdout")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (REPO / "tests" / "golden" / "reviewer.CLAUDE.md").read_text()
    module = subprocess.run([str(py), "-m", "agentlaunch", "--version"], cwd=elsewhere, env=env, capture_output=True, text=True)
    assert module.returncode == 0 and module.stdout.startswith("agentlaunch ")
