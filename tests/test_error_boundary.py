"""One error boundary: an AgentlaunchError anywhere in a command becomes its message, hint and exit code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentlaunch.cli import app
from agentlaunch.errors import ExitCode
from tests.support.cli_runs import run_cli

runner = CliRunner()


def _unusable_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    state = blocker / "state"  # below a regular file: no one can create it, root included
    monkeypatch.setenv("AGENTLAUNCH_STATE_DIR", str(state))
    return state


def test_a_raised_error_is_its_message_hint_and_code_for_the_app_and_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = _unusable_state_dir(tmp_path, monkeypatch)
    result = runner.invoke(app, ["sessions"])
    assert result.exit_code == ExitCode.STATE
    assert isinstance(result.exception, SystemExit)  # reported, not escaped
    assert f"error: {state}: cannot create the state directory: Not a directory" in result.stderr
    assert "hint: set AGENTLAUNCH_STATE_DIR to a writable directory" in result.stderr
    assert "Traceback" not in result.output
    done = run_cli("sessions")
    assert done.returncode == ExitCode.STATE
    assert done.stderr.decode().splitlines() == result.stderr.splitlines()


def test_a_bug_is_not_dressed_up_as_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import agentlaunch.cli.run as run_module

    def broken(path: Path) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(run_module.Store, "open", broken)
    result = runner.invoke(app, ["sessions"])
    assert isinstance(result.exception, RuntimeError) and result.exit_code == 1


def test_a_working_dir_that_cannot_take_the_instructions_file_is_a_state_error(agents_dir: Path, tmp_path: Path) -> None:
    import yaml

    config = yaml.safe_load((agents_dir / "demo" / "agent.yaml").read_text())
    (agents_dir / "demo" / "agent.yaml").write_text(yaml.safe_dump({**config, "delivery": "file"}))  # into the working dir
    done = run_cli("run", "demo", "hi", "--working-dir", "/proc/self", "--agents-dir", str(agents_dir), cwd=tmp_path)
    err = done.stderr.decode()
    assert done.returncode == ExitCode.STATE, err
    # /proc/self resolves to /proc/PID; the reason is the system's own words.
    assert re.search(r"error: /proc/\d+: cannot write CLAUDE.md there \(\w[^)]*\); nothing was written", err), err
    assert "definition" not in err and "Traceback" not in err


def test_an_unusable_state_dir_stops_a_launch_with_a_state_error(
    agents_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = _unusable_state_dir(tmp_path, monkeypatch)
    done = run_cli("run", "demo", "hi", "--agents-dir", str(agents_dir), cwd=tmp_path)
    err = done.stderr.decode()
    assert done.returncode == ExitCode.STATE, err
    assert f"{state}" in err and "Not a directory" in err and "Traceback" not in err


def test_a_system_prompt_file_that_cannot_be_written_is_a_state_error(agents_dir: Path, tmp_path: Path) -> None:
    from testbed.agent_files import write_agent

    write_agent(agents_dir, "sp", {"provider": "claude", "command": "/bin/true"})  # claude's default delivery: system-prompt
    state = Path(str(tmp_path / "state"))
    target = state / "system-prompts" / "sp" / "CLAUDE.md"
    target.mkdir(parents=True)  # a directory where the file would go
    work = tmp_path / "work"
    work.mkdir()
    done = run_cli("run", "sp", "hi", "--agents-dir", str(agents_dir), cwd=work, env={"AGENTLAUNCH_STATE_DIR": str(state)})
    err = done.stderr.decode()
    assert done.returncode == ExitCode.STATE, err
    assert f"error: {target}: cannot read the existing file (Is a directory)" in err
