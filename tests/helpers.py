"""Small helpers shared by tests."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml


def write_agent(
    agents_dir: Path, name: str, config: dict[str, object] | str, files: dict[str, str | bytes] | None = None
) -> Path:
    """Create (or replace) an agent folder with agent.yaml and extra files."""
    folder = agents_dir / name
    folder.mkdir(parents=True, exist_ok=True)
    text = config if isinstance(config, str) else yaml.safe_dump(config, sort_keys=False)
    (folder / "agent.yaml").write_text(text)
    for rel, content in (files or {}).items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return folder


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


def wait_for(condition: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll ``condition`` until it returns something truthy, or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def one_gemini_process(request: Any) -> bool:
    """Whether the Gemini CLI a fixture starts for this test may run as one node process (``no_relaunch``).

    Gemini CLI restarts itself in a child node by default (a parent that ignores SIGINT/SIGTERM and a child that
    does the work): about 0.6 CPU-s more per start. A test whose subject is that tree (a signal, a stop, the
    children under agentlaunch) is marked ``gemini_relaunch`` and keeps it; the contract tests and the doctor
    always run Gemini as shipped.
    """
    return request.node.get_closest_marker("gemini_relaunch") is None


def turn_over(record: dict[str, Any]) -> bool:
    """A status record that waits after a turn (the startup message's, say): ``waiting`` with ``turns``.

    Read both fields from one record: two reads can see the state of one moment and the count of the next (the
    CLI's SessionStart says waiting, then the startup turn begins and counts) while the turn still runs.
    """
    return record.get("state") == "waiting" and bool(record.get("turns"))


def die_with(tmux: Callable[..., str], pane: str, code: int) -> None:
    """End ``pane`` (running ``sh -c "read x; exit CODE"`` under remain-on-exit) so that tmux records exit ``code``.

    tmux 3.3a may close a pane on its pty's end before it reaps the exit status, and then never has it (2 of 6 tries
    in one measurement): the same pane is run again until tmux shows the status.
    """

    def status() -> tuple[str, str]:
        dead, _, got = tmux("display-message", "-p", "-t", pane, "#{pane_dead} #{pane_dead_status}").strip().partition(" ")
        return dead, got

    for _ in range(20):
        tmux("send-keys", "-t", pane, "Enter")
        wait_for(lambda: status()[0] == "1", what="the pane dead")
        try:
            wait_for(lambda: status() == ("1", str(code)), timeout=2, what="its exit status")
            return
        except AssertionError:
            tmux("respawn-pane", "-k", "-t", pane, "sh", "-c", f"read x; exit {code}")
    raise AssertionError(f"tmux never recorded exit {code} for {pane}: {status()}")
