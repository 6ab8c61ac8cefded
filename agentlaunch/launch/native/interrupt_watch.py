"""A person's Esc (or Ctrl-C) that ends a CLI's API retry loop, which the CLI itself reports nowhere.

Measured on Claude Code 2.1.332 against the fake API answering 529: in its retry loop the interface writes one
``api-request`` transcript line per attempt (agentlaunch's ``retrying``) and draws a countdown ("Retrying in 3
seconds…") that changes its screen about once a second. Esc there ends the turn and puts the prompt back in the
input box, and then no hook runs (no Stop, no Notification within 75 s), the status line is not run again, and the
transcript gets no ``[Request interrupted by user]`` line, which it gets for an Esc in an ordinary turn: the agent
sat idle at its prompt while agentlaunch said ``retrying``, then ``stalled`` (needs you).

What tells it is the relay's own view: the person's key, then the CLI's screen going still. An Esc key that reached
the CLI while it was ``retrying`` is followed, :data:`QUIET` seconds after the CLI's last output, by ``waiting``; an
Esc that only closed a menu leaves the countdown drawing, and the state as it was. Looked at for :data:`LIMIT`
seconds at most.
"""

from __future__ import annotations

from collections.abc import Callable

from agentlaunch.launch.loop import Loop, Timer

INTERRUPT_KEYS = frozenset({b"\x1b", b"\x1b[27u", b"\x1b[27;1u", b"\x03"})
"""Esc as a terminal sends it alone (plain, and in the kitty keyboard protocol's form), and Ctrl-C."""
QUIET = 2.5
"""Seconds without output after which the interface is taken to be idle: the retry loop's countdown draws every
second (measured: 31-191 bytes a second in the loop, nothing for 3 s after the Esc, then one 164-byte notice)."""
LIMIT = 15.0  # seconds after the key within which the screen must go still
RETRY_INTERRUPTED = "its API retry loop was interrupted (Esc): the prompt is back in its input box"


class InterruptWatch:
    """After an interrupt key in ``retrying``: ``waiting`` once the CLI's output has been still for :data:`QUIET`."""

    def __init__(
        self, loop: Loop, state: Callable[[], str], last_output: Callable[[], float], interrupted: Callable[[], None]
    ) -> None:
        self.loop, self.state, self.last_output, self.interrupted = loop, state, last_output, interrupted
        self._timer: Timer | None = None
        self._since = 0.0

    def keys(self, data: bytes) -> None:
        """The person's keys, as they go to the CLI."""
        if data not in INTERRUPT_KEYS or self.state() != "retrying":
            return
        self._since = self.loop.clock.monotonic()
        self._look_at(self._since + QUIET)

    def _look_at(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.loop.call_later(max(when - self.loop.clock.monotonic(), 0.0), self._look)

    def _look(self) -> None:
        self._timer = None
        if self.state() != "retrying":
            return  # the CLI said something itself (an answer, a hook): it decides
        now = self.loop.clock.monotonic()
        still_since = max(self.last_output(), self._since)
        if now - still_since >= QUIET:
            self.interrupted()
        elif now - self._since < LIMIT:
            self._look_at(still_since + QUIET)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
