"""A native interface is `starting` until its CLI reports, and `asking` when it has not within `ready_timeout`.

The CLI is ``tests/support/fake_tui.py`` (a stand-in interface on a real PTY): without ``FAKE_TUI_HOOKS`` it
reports nothing, as a CLI stopped on a dialog of its own; with it, it runs Claude Code's ``SessionStart`` hook.
The bounded time comes from ``config.yaml`` (injected), the states from ``status --json``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.launch.native.native import NOT_READY
from testbed.agent_files import write_agent
from tests.support.cli_runs import run_cli_inprocess
from tests.support.waits import turn_over, wait_for
from tests.test_native_relay import FAKE_TUI, env_with, ready, spawn


@pytest.fixture
def tui_agent(agents_dir: Path, workdir: Path) -> str:
    """The stand-in interface as a claude agent (``spawn`` runs the agent named ``tui``)."""
    write_agent(
        agents_dir,
        "tui",
        {
            "provider": "claude",
            "command": str(FAKE_TUI),
            "working_dir": str(workdir),
            "startup": "Startup for the fake interface.",
        },
    )
    return "tui"


def record(agent: str) -> dict[str, Any]:
    records = json.loads(run_cli_inprocess("status", "--json", timeout=60).stdout)
    return next((r for r in records if r.get("agent") == agent), {})


@pytest.fixture
def ready_timeout(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = isolated_home / "config"
    folder.mkdir(exist_ok=True)
    (folder / "config.yaml").write_text("ready_timeout: 2\nbell: false\n")
    monkeypatch.setenv("AGENTLAUNCH_CONFIG_DIR", str(folder))
    return folder


def test_a_cli_that_never_reports_is_starting_then_asking_with_the_reason(
    agents_dir: Path,
    tui_agent: str,
    ready_timeout: Path,
) -> None:
    child = spawn(agents_dir, env=env_with())
    try:
        ready(child)
        # Before: "waiting" as soon as the launch had started, although the CLI had said nothing.
        first = wait_for(lambda: record("tui").get("state"), timeout=30, what="the status record")
        assert first in ("starting", "asking")
        wait_for(lambda: record("tui").get("state") == "asking", timeout=30, what="asking after ready_timeout")
    finally:
        child.terminate(force=True)


def test_a_cli_still_busy_starting_past_ready_timeout_is_starting_and_asking_once_it_sits_idle(
    agents_dir: Path,
    tui_agent: str,
    ready_timeout: Path,
    tmp_path: Path,
) -> None:
    # A loaded machine: the CLI works on the CPU for 6 s (three times ready_timeout) before it draws anything, then
    # sits on its screen without reporting. Before: asking at 2 s, while it was still starting. Looked at every
    # 50 ms (a look is a status read: looking without a pause took more CPU than the CLI).
    done = tmp_path / "busy-done"
    child = spawn(agents_dir, env=env_with(FAKE_TUI_BUSY_START="6", FAKE_TUI_BUSY_DONE=str(done)))
    try:
        states = []
        while not done.exists():
            state = record("tui").get("state")
            if state == "asking" and not done.exists():
                raise AssertionError(f"asking while the CLI was still busy starting (states seen: {states})")
            if not states or states[-1] != state:
                states.append(state)  # each change once
            time.sleep(0.05)
        assert "starting" in states, states
        ready(child)
        wait_for(lambda: record("tui").get("state") == "asking", timeout=30, what="asking once the CLI sat idle")
        assert record("tui").get("state_reason") == NOT_READY
    finally:
        child.terminate(force=True)


def test_a_cli_that_reports_is_waiting_and_never_asking(
    agents_dir: Path,
    tui_agent: str,
    ready_timeout: Path,
) -> None:
    child = spawn(agents_dir, env=env_with(FAKE_TUI_HOOKS="1", FAKE_TUI_STARTUP_DELAY="0"))
    try:
        ready(child)
        # One record read for both: two reads could see the SessionStart's "waiting" and then the startup turn's
        # count while that turn still ran (its Stop is held 3 s for the transcript), and the state asserted below
        # was then "thinking" (the flake of this test under load).
        wait_for(lambda: turn_over(record("tui")), timeout=30, what="the startup turn over")
        # Well past ready_timeout (2 s) the CLI that reported stays waiting: polled, not slept for a fixed time.
        wait_for(lambda: record("tui").get("updated") and _age(record("tui")) > 3, timeout=30, what="time passing")
        assert record("tui").get("state") == "waiting"
    finally:
        child.terminate(force=True)


def _age(rec: dict[str, Any]) -> float:
    from datetime import UTC, datetime

    since = rec.get("state_since") or rec.get("started")
    return (datetime.now(UTC) - datetime.fromisoformat(str(since))).total_seconds()


@pytest.mark.parametrize("value", ["0", "-3", "true", "soon", ".nan"])
def test_a_ready_timeout_that_is_no_positive_number_is_a_definition_error(tmp_path: Path, value: str) -> None:
    from agentlaunch.definitions.settings import load_settings
    from agentlaunch.errors import DefinitionError

    (tmp_path / "config.yaml").write_text(f"ready_timeout: {value}\n")
    with pytest.raises(DefinitionError, match="ready_timeout: expected seconds, a number above 0"):
        load_settings(tmp_path)


def test_a_ready_timeout_is_read_from_config_yaml(tmp_path: Path) -> None:
    from agentlaunch.definitions.settings import load_settings

    (tmp_path / "config.yaml").write_text("ready_timeout: 7.5\n")
    assert load_settings(tmp_path).ready_timeout == 7.5
    (tmp_path / "config.yaml").write_text("bell: true\n")
    assert load_settings(tmp_path).ready_timeout is None
