"""What a launch never does: leak the environment's secrets, or lose recorded usage when killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from agentlaunch.usage.store import Store
from testbed.agent_files import write_agent
from tests.support.cli_runs import run_cli, run_cli_inprocess

SECRET = "sk-this-is-a-secret-value-0123456789"


def test_secrets_in_the_environment_are_never_printed_or_stored(agents_dir: Path, isolated_home: Path) -> None:
    write_agent(
        agents_dir,
        "secretive",
        {"provider": "fake", "working_dir": "@scratch", "env": {"MY_TOKEN": SECRET}},
        {"soul.md": "Hi.\n"},
    )
    env = {"ANTHROPIC_API_KEY": SECRET, "OPENAI_API_KEY": SECRET}
    outputs = [
        run_cli("run", "secretive", "hello", "--json", "--agents-dir", str(agents_dir), env=env),
        run_cli("run", "secretive", "/fail", "--agents-dir", str(agents_dir), env=env),
        run_cli_inprocess("list", "--json", "--agents-dir", str(agents_dir), env=env),
        run_cli_inprocess("sessions", "--json", env=env),
        run_cli_inprocess("status", "--json", env=env),
    ]
    for result in outputs:
        assert SECRET.encode() not in result.stdout + result.stderr
    for path in (isolated_home / "state").rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_agentlaunch_killed_with_sigkill_keeps_the_calls_already_reported(agents_dir: Path, isolated_home: Path) -> None:
    """Each call is committed as its usage arrives: a SIGKILL loses at most the call in flight."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentlaunch", "run", "demo", "two calls /tool /slow", "--json", "--agents-dir", str(agents_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ),
    )
    assert proc.stdout is not None
    session_id = None
    for line in proc.stdout:
        event = json.loads(line)
        if event["event"] == "session":
            session_id = event["session_id"]
        if event["event"] == "usage":
            break  # the first call was reported; the second is still streaming slowly
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert session_id is not None
    with Store.open(isolated_home / "state" / "usage.sqlite3") as store:
        calls = store.calls_for_session(session_id)
    assert len(calls) == 1 and calls[0].usage.cache_write > 0


def test_a_provider_binary_that_is_not_executable_gives_127(agents_dir: Path, tmp_path: Path) -> None:
    binary = tmp_path / "claude"
    binary.write_text("#!/bin/sh\necho never\n")
    binary.chmod(0o644)
    write_agent(agents_dir, "noexec", {"provider": "claude", "command": str(binary), "working_dir": str(tmp_path)})
    result = run_cli("run", "noexec", "hi", "--agents-dir", str(agents_dir))
    assert result.returncode == 127
    assert b"provider CLI is not executable" in result.stderr and b"npm install -g @anthropic-ai/claude-code" in result.stderr
