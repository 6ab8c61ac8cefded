"""A CLI that dies mid-turn, or hangs, while a detached helper it started holds the PTY: the launch ends, and the helper too."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.agent_files import write_agent
from tests.support.cli_runs import run_cli
from tests.support.waits import wait_for

TIMEOUT = 60
SCRIPT = Path(__file__).resolve().parent / "support" / "detached_cli.py"


def gone(pid: int) -> bool:
    """``pid`` runs no more (a zombie runs nothing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state == "Z"


def detached_agent(agents_dir: Path, tmp_path: Path, **env: str) -> Path:
    """An agent whose CLI is the detached test CLI; the helper's pid lands in the returned file."""
    wrapper = tmp_path / "detached-cli"
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(SCRIPT))} "$@"\n')
    wrapper.chmod(0o755)
    pid_file = tmp_path / "helper.pid"
    env = {"DETACHED_PID_FILE": str(pid_file), **env}
    config = {"provider": "fake", "working_dir": "@scratch", "command": str(wrapper), "env": env}
    write_agent(agents_dir, "detached", config, {"soul.md": "Hi.\n"})
    return pid_file


def helper_pid(pid_file: Path) -> int:
    return int(wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), what="the helper's pid file"))


def kill_if_left(pid_file: Path) -> None:
    """Never leave a helper behind, whatever the test found (it is ours)."""
    if pid_file.exists() and pid_file.read_text().strip():
        pid = int(pid_file.read_text())
        if not gone(pid):
            os.kill(pid, signal.SIGKILL)


def test_cli_dying_mid_turn_while_a_detached_helper_holds_the_pty_fails_the_turn_and_ends_the_helper(
    agents_dir: Path, tmp_path: Path
) -> None:
    pid_file = detached_agent(agents_dir, tmp_path, DETACHED_MODE="die")
    try:
        done = run_cli("run", "detached", "hello", "--agents-dir", str(agents_dir), timeout=TIMEOUT)
        assert done.returncode == 1, done.stderr
        err = done.stderr.decode()
        assert "the provider CLI exited (code 3) before finishing the turn" in err
        assert "gives up mid-turn" in err  # what it said last is passed on
        pid = helper_pid(pid_file)
        assert wait_for(lambda: gone(pid), timeout=30, what=f"helper {pid} to end")
    finally:
        kill_if_left(pid_file)


def test_timeout_ends_a_hung_cli_and_its_detached_helper(agents_dir: Path, tmp_path: Path) -> None:
    pid_file = detached_agent(agents_dir, tmp_path, DETACHED_MODE="hang", DETACHED_ON_INTERRUPT="exit")
    try:
        done = run_cli("run", "detached", "hello", "--timeout", "1", "--agents-dir", str(agents_dir), timeout=TIMEOUT)
        assert done.returncode == 124, done.stderr
        assert b"longer than 1s" in done.stderr
        pid = helper_pid(pid_file)
        assert wait_for(lambda: gone(pid), timeout=30, what=f"helper {pid} to end")
    finally:
        kill_if_left(pid_file)


@pytest.mark.parametrize(
    ("signals", "code"),
    [((signal.SIGINT, signal.SIGINT), 130), ((signal.SIGTERM,), 143), ((signal.SIGHUP,), 129)],
    ids=["ctrl-c-twice", "sigterm", "sighup"],
)
def test_signals_end_a_hung_cli_that_ignores_interrupts_and_its_detached_helper(
    agents_dir: Path, tmp_path: Path, signals: tuple[int, ...], code: int
) -> None:
    pid_file = detached_agent(agents_dir, tmp_path, DETACHED_MODE="hang")  # the interrupt request is ignored
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentlaunch", "run", "detached", "hello", "--agents-dir", str(agents_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    try:
        pid = helper_pid(pid_file)  # the turn is under way
        proc.send_signal(signals[0])
        if len(signals) > 1:
            # The first Ctrl-C asks the CLI to end the turn; it ignores that, so the second one kills it.
            assert b"interrupting the turn" in proc.stderr.readline()
            proc.send_signal(signals[1])
        assert proc.wait(timeout=TIMEOUT) == code
        assert wait_for(lambda: gone(pid), timeout=30, what=f"helper {pid} to end")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_if_left(pid_file)
