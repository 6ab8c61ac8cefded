"""Time as a launch sees it, one contract for every stage: deadlines from ``monotonic``, shown and stored times from ``now``.

Tests hand in a clock of their own; everything else uses :class:`SystemClock`.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Protocol


class Clock(Protocol):
    """Time as the launch sees it: ``monotonic`` for deadlines, ``now`` for what is shown and stored."""

    def monotonic(self) -> float: ...

    def now(self) -> datetime: ...


class SystemClock:
    """The real clock (local, aware ``now``)."""

    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime:
        return datetime.now().astimezone()
