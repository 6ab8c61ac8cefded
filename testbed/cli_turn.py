"""One turn of a provider CLI run directly (no agentlaunch), for the contract tests: its exit code and JSON events."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

Event = dict[str, Any]
T = TypeVar("T", bound="Turn")


@dataclass
class Turn:
    returncode: int
    events: list[Event]
    stdout: str
    stderr: str

    def of_type(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.get("type") == kind]


def parse_events(stdout: str) -> list[Event]:
    """Every stdout line is JSON (the CLIs' noise goes to stderr): parsing each line pins that too."""
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def run_turn(kind: type[T], argv: Sequence[str], env: dict[str, str], cwd: Path) -> T:
    """Run ``argv`` to its end, stdin at EOF, and read its events."""
    done = subprocess.run(list(argv), env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=100)
    return kind(done.returncode, parse_events(done.stdout), done.stdout, done.stderr)
