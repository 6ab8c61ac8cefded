"""A CLI silent past ``ready_timeout`` is still starting while its tree uses the CPU, and idle when it does not.

Real processes: a child spinning on the CPU, one asleep (as a CLI on a dialog of its own), one gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from agentlaunch.launch.native.cli_activity import BUSY_CPU, Activity, activity, still_starting
from tests.support.waits import wait_for

SPIN = "import time\nend = time.monotonic() + 60\nwhile time.monotonic() < end:\n    pass\n"


@pytest.fixture
def spinning() -> Iterator[subprocess.Popen[bytes]]:
    child = subprocess.Popen([sys.executable, "-c", SPIN])
    yield child
    child.kill()
    child.wait()


@pytest.fixture
def asleep() -> Iterator[subprocess.Popen[bytes]]:
    child = subprocess.Popen(["sleep", "60"])
    yield child
    child.kill()
    child.wait()


def two_looks(pid: int, clock: int | None = None) -> tuple[Activity | None, Activity | None]:
    """Two looks at ``pid``'s tree, as the launch takes them a second apart: here the second once the spinning
    ``clock`` (``pid`` itself when it spins) has used :data:`BUSY_CPU` since the first. A fixed second was a guess:
    on a loaded machine a spinning process can get less than that of a core in one second."""
    watched = pid if clock is None else clock
    first, start = activity(pid), activity(watched)
    assert start is not None

    def spun() -> bool:
        now = activity(watched)
        return now is not None and now.cpu - start.cpu >= BUSY_CPU

    wait_for(spun, timeout=120, what=f"pid {watched} to use {BUSY_CPU} CPU-s")
    return first, activity(pid)


def test_a_spinning_cli_is_still_starting(spinning: subprocess.Popen[bytes]) -> None:
    first, second = two_looks(spinning.pid)
    assert first is not None and second is not None
    assert second.cpu - first.cpu >= BUSY_CPU
    assert still_starting(first, second)


def test_a_cli_asleep_on_its_screen_is_not(asleep: subprocess.Popen[bytes], spinning: subprocess.Popen[bytes]) -> None:
    first, second = two_looks(asleep.pid, clock=spinning.pid)  # as long as a busy process needs to look busy
    assert first is not None and second is not None
    assert not second.runnable
    assert second.cpu - first.cpu < BUSY_CPU
    assert not still_starting(first, second)


def test_the_tree_counts_what_a_child_of_the_cli_uses() -> None:
    # A shell that waits on a spinning child: the CPU is the child's, counted in the tree of the shell.
    shell = subprocess.Popen(["sh", "-c", f"{sys.executable} -c '{SPIN}'; :"], start_new_session=True)
    try:
        first, second = two_looks(shell.pid)
        assert still_starting(first, second)
        assert first is not None and second is not None and second.cpu - first.cpu >= BUSY_CPU
    finally:
        os.killpg(shell.pid, signal.SIGKILL)
        shell.wait()


def test_the_first_look_gives_one_more_and_a_gone_cli_is_not_starting(asleep: subprocess.Popen[bytes]) -> None:
    now = activity(asleep.pid)
    assert now is not None
    assert still_starting(None, now)  # no earlier look to compare with: looked at again
    asleep.kill()
    asleep.wait()
    assert activity(asleep.pid) is None
    assert not still_starting(now, None)


def test_runnable_now_is_still_starting_whatever_it_used() -> None:
    assert still_starting(Activity(1.0, False), Activity(1.0, True))
    assert not still_starting(Activity(1.0, False), Activity(1.0 + BUSY_CPU / 2, False))
