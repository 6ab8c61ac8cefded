"""The built wheel works on its own: templates and example agents ship inside it."""

from __future__ import annotations

import ast
import contextlib
import hashlib
import stat
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.venvs import Venv, build_wheel, make_venv, where_agentlaunch_imports_from


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkout's wheel, built once for this module."""
    base = tmp_path_factory.mktemp("wheel")
    return build_wheel(base / "dist", base / "home")


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A fresh venv with the wheel installed (its dependencies come from the running interpreter)."""
    venv = make_venv(tmp_path_factory.mktemp("installed") / "venv")
    subprocess.run(
        [str(venv.python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(wheel)],
        check=True,
        capture_output=True,
        env=venv.env(),
        timeout=300,
    )
    return venv


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A working directory far from the checkout."""
    path = tmp_path / "elsewhere"
    path.mkdir()
    return path


def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


@contextlib.contextmanager
def read_only(root: Path) -> Iterator[None]:
    """``root`` and everything in it without write permission, as a system-wide install is for its users."""
    paths = [root, *root.rglob("*")]
    modes = {p: p.stat().st_mode for p in paths}
    for p in paths:
        p.chmod(modes[p] & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        yield
    finally:
        for p in reversed(paths):
            p.chmod(modes[p])


def test_wheel_ships_templates_and_example_agents(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "agentlaunch/_data/templates/instructions.md.j2" in names
    assert "agentlaunch/_data/agents/demo/agent.yaml" in names


def test_the_installed_command_is_this_python_running_the_entry_point_without_importing_re(installed: Venv) -> None:
    # pip's wrapper for a [project.scripts] entry point imports `re` first: about 7 ms at every command, although
    # `status --line`, `status --json` and the early start import none of their own (scripts/agentlaunch).
    script = installed.bin / "agentlaunch"
    assert script.stat().st_mode & stat.S_IXUSR
    text = script.read_text()
    assert text.splitlines()[0] == f"#!{installed.python}"
    tree = ast.parse(text)
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported == {"sys", "agentlaunch.entry"}, imported


@pytest.mark.timeout(600)
def test_wheel_installs_and_runs_without_the_repository(installed: Venv, elsewhere: Path) -> None:
    env = installed.env(AGENTLAUNCH_AGENTS_DIR=str(elsewhere / "agents"))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(installed.bin / "agentlaunch"), *args], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120
        )

    located = where_agentlaunch_imports_from(installed, elsewhere)
    assert str(installed.root) in located, "the test must exercise the installed wheel, not the source tree"
    assert run("init", str(elsewhere / "agents")).returncode == 0
    result = run("render", "reviewer", "--stdout")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (REPO / "tests" / "golden" / "reviewer.CLAUDE.md").read_text()
    module = subprocess.run(
        [str(installed.python), "-m", "agentlaunch", "--version"], cwd=elsewhere, env=env, capture_output=True, text=True
    )
    assert module.returncode == 0 and module.stdout.startswith("agentlaunch ")


@pytest.mark.timeout(600)
def test_installed_wheel_runs_the_bundled_demo_from_any_directory(installed: Venv, elsewhere: Path) -> None:
    bundled = Path(where_agentlaunch_imports_from(installed, elsewhere)).parent / "_data" / "agents"
    before = tree_digest(bundled)
    # No --agents-dir, no $AGENTLAUNCH_AGENTS_DIR, no ./agents, no ~/.config/agentlaunch/agents.
    with read_only(bundled):
        result = subprocess.run(
            [str(installed.bin / "agentlaunch"), "run", "demo", "hello"],
            cwd=elsewhere,
            env=installed.env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Fake provider here, turn 1.") and result.stdout.endswith('You said: "hello"\n')
    assert result.stdout.count("\n") == 1, "stdout carries the answer only"
    (notice,) = [line for line in result.stderr.splitlines() if "bundled examples" in line]
    assert str(bundled) in notice and "agentlaunch init" in notice
    assert list(elsewhere.iterdir()) == [], "the demo works in a scratch folder of its own"
    assert tree_digest(bundled) == before, "nothing is written into the installed package"
