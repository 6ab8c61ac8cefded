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


def wait_for(condition: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll ``condition`` until it returns something truthy, or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
