"""Real git repositories for the tests that share one between agents (git must be installed)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path


def git(cwd: Path, *args: str) -> str:
    """``git ARGS`` in ``cwd`` with a throwaway identity; its stdout (raises on failure)."""
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "protocol.file.allow=always", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def make_repo(path: Path, files: Mapping[str, str] | None = None) -> Path:
    """A new repository at ``path`` with ``files`` (name -> text) committed; a README when none are given."""
    path.mkdir(parents=True)
    git(path, "init", "-q")
    for name, text in (files or {"README": "a project\n"}).items():
        (path / name).write_text(text)
        git(path, "add", name)
    git(path, "commit", "-qm", "start")
    return path


def run_at_once(agents: Sequence[str], prompt: str, cwd: Path, env: Mapping[str, str]) -> list[tuple[int, str, str]]:
    """``agentlaunch run AGENT PROMPT`` for every agent at the same time: (exit code, stdout, stderr) of each."""
    started = [
        subprocess.Popen(
            [sys.executable, "-m", "agentlaunch", "run", agent, prompt],
            cwd=cwd,
            env=dict(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for agent in agents
    ]
    results = []
    for proc in started:
        out, err = proc.communicate(timeout=240)
        results.append((proc.returncode, out.decode(), err.decode()))
    return results
