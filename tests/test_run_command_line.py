"""`agentlaunch run`'s command line through the `agentlaunch` command: its errors and exit codes, its variables, and
the launch it starts with the garbage collector on."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentlaunch import entry
from tests.support.cli_runs import run_cli


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["demo", "-c", "-r", "abc", "hi"], 2, "error: use --continue or --resume ID, not both"),
        (["demo", "hi", "-p", "again"], 2, "error: give the prompt either as an argument or with -p, not both"),
        (["demo", "   "], 2, "error: the prompt is empty"),
        (["no-such-agent", "hi"], 3, "no-such-agent"),
        (["demo", "hi", "--budget-usd", "-1"], 2, "error:"),
        (["demo", "hi", "--timeout", "soon"], 2, "'soon' is not a valid float"),  # click's own words
        (["demo", "hi", "--no-such-option"], 2, "No such option: --no-such-option"),
        (["demo", "hi", "--quiet=yes"], 2, "Option '--quiet' does not take a value"),
    ],
)
def test_a_bad_command_line_gets_its_error_and_exit_code(
    agents_dir: Path, tmp_path: Path, args: list[str], code: int, message: str
) -> None:
    # A launch keeps its plan first: a CLI the early start may start for the bad line is ended unused.
    assert run_cli("run", "demo", "hello", "--quiet", "--agents-dir", str(agents_dir), cwd=tmp_path).returncode == 0
    done = run_cli("run", *args, "--agents-dir", str(agents_dir), cwd=tmp_path)
    assert done.returncode == code, done.stderr.decode()[-2000:]
    assert message in done.stderr.decode() and "Traceback" not in done.stderr.decode()


def test_the_environment_s_agents_dir_is_read(agents_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "AGENTLAUNCH_AGENTS_DIR": str(agents_dir)}
    for _ in range(2):  # the second from the first's plan, started early
        done = subprocess.run(
            [sys.executable, "-m", "agentlaunch", "run", "demo", "hello", "-q"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            timeout=120,
        )
        assert done.returncode == 0 and done.stdout.strip(), done.stderr.decode()[-2000:]


def test_the_launch_runs_with_the_garbage_collector_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """entry turns it off for the imports of `run` only: the launch itself (a session may last days) collects."""
    import agentlaunch.cli

    seen: list[bool] = []
    monkeypatch.setattr(agentlaunch.cli, "load_commands", lambda args: lambda *a, **k: seen.append(gc.isenabled()))
    gc.disable()
    try:
        assert entry.run_cli(["run", "demo"]) == 0
    finally:
        on = gc.isenabled()
        gc.enable()
        gc.unfreeze()
    assert seen == [True] and on
