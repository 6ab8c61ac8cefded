"""Running an ``agentlaunch`` command for a test: as a real process, or in this process through click's runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, input: bytes | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    """Run `python -m agentlaunch` in a subprocess with the test's environment."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "agentlaunch", *args], cwd=cwd, env=full_env, input=input, capture_output=True, timeout=timeout
    )


def run_cli_inprocess(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, input: bytes | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    """``run_cli`` without the subprocess: the same command through click in this process, the same result.

    For a command whose test proves nothing a real process would add (no exit code of a real process, signal,
    terminal, stdin of a terminal, early start or import cost): it saves the 0.3-0.5 s of a Python start.
    As in ``agentlaunch.entry``: only the named command's module is loaded, and a ``SystemExit`` becomes the
    exit code (a message in it goes to stderr). ``env`` is laid over ``os.environ`` and ``cwd`` entered for the
    call; both, and anything the command itself changed in ``os.environ``, are put back after it. ``timeout``
    is accepted for the same signature; pytest-timeout bounds the test.
    """
    from typer.main import get_command
    from typer.testing import CliRunner

    from agentlaunch.cli import load_commands
    from agentlaunch.entry import exit_code

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    runner = CliRunner()
    try:
        os.environ.update(env or {})
        if cwd is not None:
            os.chdir(cwd)
        command = get_command(load_commands(args))
        with runner.isolation(input=input) as (stdout, stderr, _):
            try:
                command.main(args=list(args), prog_name="agentlaunch")
                code = 0
            except SystemExit as exc:
                code = exit_code(exc)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
            out, err = stdout.getvalue(), stderr.getvalue()
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(["agentlaunch", *args], code, out, err)
