"""The no-Linux lane's unit part: the unit tests of the modules that had Linux-only code paths, run in a Python that
has none of Linux's own primitives (``tests/support/no_linux/sitecustomize.py``; the lane's end-to-end part is
:mod:`tests.support.no_linux_lane`).

One nested pytest of four small files (about 10 CPU-s), not a second run of the suite: the held hooks' socket and
Claude Code's source that waits on it (an epoll set before), the platform module's fallbacks, and Gemini's source
without inotify. Modules whose tests read ``/proc`` themselves (the relay's, the reaper's) stay out: there the test,
not agentlaunch, would fail.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.no_linux_lane import without_linux

UNITS = (
    "tests/test_hook_held.py",
    "tests/test_claude_held_hooks.py",
    "tests/test_platform_support.py",
    "tests/test_native_gemini.py",
)


@pytest.mark.no_linux
@pytest.mark.timeout(600)
def test_the_platform_touching_units_pass_without_linux_primitives(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    log = tmp_path / "processes.log"
    without_linux(monkeypatch, log)
    # anyio's plugin imports trio where it is installed (the system Python of a machine that has it): trio picks its
    # I/O by sys.platform, epoll on Linux, which the proxy took away (on a Mac it takes kqueue). The units use no anyio.
    argv = [sys.executable, "-m", "pytest", "-n", "0", "-p", "no:cacheprovider", "-p", "no:anyio", "-q", *UNITS]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "pytest" in log.read_text(encoding="utf-8"), "the nested run did not load the no-Linux proxy"
    assert "inotify is not available here" in done.stdout  # the proxy's: Gemini's source read on its timer
