"""The launch's one event loop: it waits on file descriptors and deadlines, nothing else.

Every source of a launch is a file descriptor: the CLI's PTY master (its
output), its stdin pipe (writable when it can take more of a long prompt),
its pidfd (readable when it exits), and the signal wakeup pipe (see
:mod:`agentlaunch.launch.signals`). A relay of the user's own terminal is one
more reader. Deadlines (``--timeout``, the grace an interrupted CLI gets, the
drain after the CLI's exit) are timers: the loop's ``select`` waits exactly
until the nearest one, so it never wakes to poll.

Callbacks run one at a time on the loop's thread and are never interrupted
by a signal (the handlers only record); a callback stops the loop with
:meth:`Loop.stop`.
"""

from __future__ import annotations

import heapq
import itertools
import selectors
from collections.abc import Callable

from agentlaunch.clock import Clock, SystemClock

Callback = Callable[[], None]


class Timer:
    """A deadline registered with :meth:`Loop.call_at`; :meth:`cancel` forgets it."""

    __slots__ = ("when", "callback", "cancelled")

    def __init__(self, when: float, callback: Callback) -> None:
        self.when, self.callback, self.cancelled = when, callback, False

    def cancel(self) -> None:
        self.cancelled = True


class Loop:
    """A select loop over readers, writers and timers (one per launch, reused turn after turn)."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or SystemClock()
        self._selector = selectors.DefaultSelector()
        self._readers: dict[int, Callback] = {}
        self._writers: dict[int, Callback] = {}
        self._timers: list[tuple[float, int, Timer]] = []
        self._order = itertools.count()  # ties between timers go to the one set first
        self._stopped = False

    # -- sources -----------------------------------------------------------------
    def add_reader(self, fd: int, callback: Callback) -> None:
        """Call ``callback`` whenever ``fd`` is readable (until :meth:`remove_reader`)."""
        self._readers[fd] = callback
        self._update(fd)

    def remove_reader(self, fd: int) -> None:
        if self._readers.pop(fd, None) is not None:
            self._update(fd)

    def add_writer(self, fd: int, callback: Callback) -> None:
        """Call ``callback`` whenever ``fd`` can take more bytes (until :meth:`remove_writer`)."""
        self._writers[fd] = callback
        self._update(fd)

    def remove_writer(self, fd: int) -> None:
        if self._writers.pop(fd, None) is not None:
            self._update(fd)

    def _update(self, fd: int) -> None:
        mask = (selectors.EVENT_READ if fd in self._readers else 0) | (selectors.EVENT_WRITE if fd in self._writers else 0)
        try:
            registered = self._selector.get_key(fd).events
        except KeyError:
            registered = 0
        if mask == registered:
            return
        if not mask:
            self._selector.unregister(fd)
        elif registered:
            self._selector.modify(fd, mask)
        else:
            self._selector.register(fd, mask)

    # -- deadlines ---------------------------------------------------------------
    def call_at(self, when: float, callback: Callback) -> Timer:
        """Call ``callback`` once the clock's monotonic time reaches ``when``."""
        timer = Timer(when, callback)
        heapq.heappush(self._timers, (when, next(self._order), timer))
        return timer

    def call_later(self, delay: float, callback: Callback) -> Timer:
        return self.call_at(self.clock.monotonic() + delay, callback)

    def _next_timeout(self) -> float | None:
        while self._timers and self._timers[0][2].cancelled:
            heapq.heappop(self._timers)
        if not self._timers:
            return None
        return max(self._timers[0][0] - self.clock.monotonic(), 0.0)

    def _run_due_timers(self) -> None:
        now = self.clock.monotonic()
        while self._timers and not self._stopped and self._timers[0][0] <= now:
            _, _, timer = heapq.heappop(self._timers)
            if not timer.cancelled:
                timer.cancelled = True
                timer.callback()

    # -- running -----------------------------------------------------------------
    def stop(self) -> None:
        """End :meth:`run` once the callback that called this returns."""
        self._stopped = True

    def run(self) -> None:
        """Dispatch events until a callback calls :meth:`stop`.

        A loop with no source and no timer left would wait for ever: that is a
        bug in the caller, reported as one.
        """
        self._stopped = False
        while not self._stopped:
            timeout = self._next_timeout()
            if timeout is None and not self._readers and not self._writers:
                raise RuntimeError("event loop has nothing to wait for")
            for key, events in self._selector.select(timeout):
                fd = key.fd
                if events & selectors.EVENT_WRITE and fd in self._writers:
                    self._writers[fd]()
                if self._stopped:
                    break
                if events & selectors.EVENT_READ and fd in self._readers:
                    self._readers[fd]()
                if self._stopped:
                    break
            self._run_due_timers()

    def close(self) -> None:
        self._selector.close()
