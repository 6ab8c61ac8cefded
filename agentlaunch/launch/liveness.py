"""Is the agent still getting somewhere? ``stalled`` and ``retrying``, kept true on the launch's loop.

A launch in a turn (``thinking``, ``tool``, ``retrying``) that hears nothing
from its CLI for ``stall_timeout`` seconds (``config.yaml``, 300 by default)
becomes ``stalled``, with the reason and the needs-you signals
(:mod:`agentlaunch.live.needs_you`); the first sign of progress puts it back
in the state the CLI last reported. Progress is what the CLI reports: every
event parsed from its output (headless and the line chat: each line it writes
is one), and every item of a native interface's sources (a hook, a
transcript line, a session file's record; :meth:`Liveness.progress`). A native
interface's screen is not progress: its spinner and clock redraw while it
waits on a call that never answers.

An API failure loop the CLI reports (Claude Code's ``api_retry`` message, a
:class:`~agentlaunch.events.Warning` with ``retry``; a native source's
``retrying`` state) becomes ``retrying`` with its cause; the next event of the
call (text, a tool) makes the state ``thinking`` or ``tool`` again.

One timer on the loop at most, set when a turn's state begins and moved on
only when it falls due (progress just notes the time), so a busy stream costs
no timer churn. No thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from agentlaunch.events import Event, Warning
from agentlaunch.sinks import StateChanged

if TYPE_CHECKING:
    from agentlaunch.clock import Clock
    from agentlaunch.sinks import Cancellable, LaunchView, SinkEvent

DEFAULT_STALL_TIMEOUT = 300.0
"""Seconds a turn may go without a report from its CLI before it is ``stalled``."""
WATCHED = ("thinking", "tool", "retrying")
"""The states in which the CLI owes a report: a turn under way."""
STALLED = "stalled"
RETRYING = "retrying"


class WatchedLaunch(Protocol):
    """What liveness reads of the launch (its state, its clock) and asks of it (a state, a timer on its loop)."""

    @property
    def state(self) -> str: ...
    @property
    def clock(self) -> Clock: ...

    def set_state(self, state: str, *, always: bool = False, reason: str | None = None) -> None: ...
    def call_later(self, delay: float, callback: Callable[[], None]) -> Cancellable: ...


class Liveness:
    """A launch's sink that turns silence into ``stalled`` and a reported retry loop into ``retrying``.

    ``launch`` is what it reads and asks of the launch (its state, its clock, its loop's timers); ``timeout`` None
    turns stall detection off (``retrying`` is still told).
    """

    def __init__(self, launch: WatchedLaunch, timeout: float | None) -> None:
        self.launch, self.timeout = launch, timeout
        self.last = 0.0  # the loop clock's time of the CLI's latest report
        self.real: str | None = None  # the state the CLI last reported (what a stall ends back into)
        self._timer: Cancellable | None = None

    def now(self) -> float:
        return self.launch.clock.monotonic()

    # -- what the CLI reports ------------------------------------------------------------------
    def progress(self) -> None:
        """The CLI reported something: a stall is over (back to the state it last reported)."""
        self.last = self.now()
        if self.launch.state == STALLED and self.real in WATCHED:
            self.launch.set_state(self.real)

    def event(self, event: SinkEvent, launch: LaunchView) -> None:
        if isinstance(event, StateChanged):
            self._state(event.state)
            return
        if not isinstance(event, Event):
            return  # the launch's own facts (a notice, a priced call) are no word from the CLI
        self.progress()
        if isinstance(event, Warning) and event.retry and launch.state in (*WATCHED, STALLED):
            self.launch.set_state(RETRYING, reason=event.retry, always=True)

    def _state(self, state: str) -> None:
        if state == STALLED:
            return
        self.real, self.last = state, self.now()
        if state in WATCHED:
            self._arm(self.last)
        elif self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # -- the timer -----------------------------------------------------------------------------
    def _arm(self, start: float) -> None:
        if not self.timeout or self._timer is not None:
            return
        self._timer = self.launch.call_later(max(start + self.timeout - self.now(), 0.0), self._due)

    def _due(self) -> None:
        self._timer = None
        if self.timeout is None or self.launch.state not in WATCHED:
            return
        quiet = self.now() - self.last
        if quiet < self.timeout:
            self._arm(self.last)  # progress came meanwhile: look again when the new silence would be long enough
            return
        from agentlaunch.live.status import duration  # the status record's module: the writer has imported it

        doing = {"thinking": "thinking", "tool": "a tool running", "retrying": "retrying its API call"}[self.launch.state]
        why = f"no report from the CLI for {duration(quiet)} while {doing}: it may hang; look at its pane"
        self.launch.set_state(STALLED, reason=why)
