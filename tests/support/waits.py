"""Waiting for a condition (never for a fixed time), and the conditions the tests wait for more than once."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(condition: Callable[[], Any], timeout: float = 30.0, what: str = "condition", every: float = 0.05) -> Any:
    """Poll ``condition`` every ``every`` seconds until it returns something truthy (returned), or fail after ``timeout``
    seconds: the deadline only turns a hang into a failure."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def turn_over(record: dict[str, Any]) -> bool:
    """A status record that waits after a turn (the startup message's, say): ``waiting`` with ``turns``.

    Read both fields from one record: two reads can see the state of one moment and the count of the next (the
    CLI's SessionStart says waiting, then the startup turn begins and counts) while the turn still runs.
    """
    return record.get("state") == "waiting" and bool(record.get("turns"))


async def until(check: Callable[[], Any], timeout: float = 30.0) -> None:
    """:func:`wait_for` inside an event loop: await ``check()`` being truthy (polled every 0.05 s), or fail after
    ``timeout`` seconds."""
    import asyncio

    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.05)
