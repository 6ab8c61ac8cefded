"""What a launch's CLI printed that was no event it knows: its last lines, and the unknown event types seen.

The last lines (those that say "error" first) are the likeliest reason a CLI that exited gave
(:meth:`Launch.last_words <agentlaunch.launch.session.Launch.last_words>`); an unknown event type is shown
once per launch, not once per line.
"""

from __future__ import annotations

from collections import deque


class CliOutput:
    """The CLI's last non-event lines, and the unknown event types already shown."""

    def __init__(self) -> None:
        self._last: deque[str] = deque(maxlen=3)
        self._errors: deque[str] = deque(maxlen=2)  # lines that say "error": the likeliest reason it exited
        self._unknown_seen: set[str] = set()

    def keep(self, line: str) -> None:
        """A line that was not an event (a Diagnostic)."""
        self._last.append(line)
        if "error" in line.lower():
            self._errors.append(line)

    def first_unknown(self, kind: str) -> bool:
        """True the first time an unknown event of ``kind`` comes (it is shown once)."""
        if kind in self._unknown_seen:
            return False
        self._unknown_seen.add(kind)
        return True

    def last_words(self) -> tuple[str, ...]:
        return tuple(self._errors or self._last)
