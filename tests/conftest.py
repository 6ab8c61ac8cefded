"""Shared fixtures: every test gets its own HOME, state, config and agents directory."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_AGENTS = REPO / "agents"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME, the XDG dirs and agentlaunch's own dirs at a temporary folder."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        monkeypatch.setenv(var, str(home / var.lower()))
    monkeypatch.setenv("AGENTLAUNCH_STATE_DIR", str(home / "state"))
    monkeypatch.setenv("AGENTLAUNCH_CONFIG_DIR", str(home / "config"))
    # `status` also lists dead agent panes of the tmux server `tmux up` uses: never a person's own server.
    monkeypatch.setenv("AGENTLAUNCH_TMUX_SOCKET", f"al-test-none-{os.getpid()}")
    for var in (
        "AGENTLAUNCH_AGENTS_DIR",
        "AGENTLAUNCH_TEMPLATES_DIR",
        "NO_COLOR",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "GEMINI_API_KEY",
        "ANTHROPIC_BASE_URL",
    ):
        monkeypatch.delenv(var, raising=False)
    for var in (
        "AGENTLAUNCH_PRICE_INPUT",
        "AGENTLAUNCH_PRICE_OUTPUT",
        "AGENTLAUNCH_PRICE_CACHE_READ",
        "AGENTLAUNCH_PRICE_CACHE_WRITE",
    ):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def agents_dir(tmp_path: Path) -> Path:
    """A private copy of the example agents."""
    dest = tmp_path / "agents"
    shutil.copytree(EXAMPLE_AGENTS, dest)
    return dest


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path
