"""The real provider CLIs for end-to-end tests, installed once at pinned versions.

``ensure_cli("claude")`` returns the path of the binary. It installs the pinned
npm package into ``$AGENTLAUNCH_TEST_CLI_CACHE`` (default
``<repo>/.cache/provider-clis``) when the binary is missing or reports another
version, under a file lock so parallel test processes install only once. When
npm is missing or the install fails the test is skipped, or failed when
``AGENTLAUNCH_REQUIRE_REAL_CLIS=1``.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path
from typing import Literal, NoReturn

import pytest

CliName = Literal["claude", "codex", "gemini"]

PINNED: dict[str, tuple[str, str]] = {
    # name: (npm package spec, text `--version` prints)
    "claude": ("@anthropic-ai/claude-code@2.1.328", "2.1.328"),
    "codex": ("@openai/codex@0.169.0", "0.169.0"),
    "gemini": ("@google/gemini-cli@0.61.0", "0.61.0"),
}

REPO = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT = 900
_found: dict[tuple[str, Path], Path] = {}  # checked once per test process


def cache_dir() -> Path:
    """``$AGENTLAUNCH_TEST_CLI_CACHE``, else ``<repo>/.cache/provider-clis``."""
    value = os.environ.get("AGENTLAUNCH_TEST_CLI_CACHE")
    return Path(value).expanduser() if value else REPO / ".cache" / "provider-clis"


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("AGENTLAUNCH_REQUIRE_REAL_CLIS") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def _reports_version(binary: Path, version: str) -> bool:
    if not binary.exists():
        return False
    try:
        done = subprocess.run(
            [str(binary), "--version"], check=False, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and version in done.stdout


def ensure_cli(name: CliName) -> Path:
    """Path of the pinned ``name`` CLI, installing it first when needed."""
    if name not in PINNED:
        raise ValueError(f"unknown provider CLI {name!r}")
    spec, version = PINNED[name]
    root = cache_dir()
    if (name, root) in _found:
        return _found[name, root]
    binary = root / "node_modules" / ".bin" / name
    if not _reports_version(binary, version):
        _install(spec, version, root, binary)
    _found[name, root] = binary
    return binary


def _install(spec: str, version: str, root: Path, binary: Path) -> None:
    """``npm install`` ``spec`` into ``root`` under a file lock, unless another process just did."""
    npm = shutil.which("npm")
    if npm is None:
        _unavailable(f"npm not found; cannot install {spec}")
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if _reports_version(binary, version):  # another process installed it meanwhile
                return
            try:
                done = subprocess.run(
                    [npm, "install", "--prefix", str(root), "--no-audit", "--no-fund", spec],
                    check=False,
                    capture_output=True,
                    text=True,
                    timeout=INSTALL_TIMEOUT,
                    stdin=subprocess.DEVNULL,
                )
            except (OSError, subprocess.SubprocessError) as exc:
                _unavailable(f"npm install {spec} failed: {exc}")
            if done.returncode != 0:
                _unavailable(f"npm install {spec} failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
            if not _reports_version(binary, version):
                _unavailable(f"{binary} does not report version {version} after npm install {spec}")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
