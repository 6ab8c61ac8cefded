"""The structured sources of a native relay on its loop: each one's descriptors and deadline, its reads, and a
source that raises set aside (the relay goes on without it: a source's bug never ends the user's session).

A source hands each of its descriptors (:meth:`~agentlaunch.providers.native.source.NativeSource.filenos`: a hook
socket, a folder watch, the connections of Claude Code's held hooks), not one descriptor that stands for them all:
an epoll set made so is Linux's alone, and the loop's ``selectors.DefaultSelector`` waits on them anywhere (kqueue
on macOS). They are asked for again after each read, since a read accepts and closes connections.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agentlaunch.launch.loop import Loop, Timer
from agentlaunch.providers.native.source import NativeItem, NativeSource


class SourceWaits:
    """What the relay waits on for its sources, and their reads."""

    def __init__(
        self,
        loop: Loop,
        sources: Sequence[NativeSource],
        on_items: Callable[[list[NativeItem]], None],
        on_error: Callable[[NativeSource, Exception], None],
    ) -> None:
        self.loop = loop
        self.sources = list(sources)
        self.on_items, self.on_error = on_items, on_error
        self._timers: dict[int, Timer] = {}
        self._fds: dict[int, NativeSource] = {}
        self._broken: set[int] = set()  # sources that raised

    def start(self) -> None:
        for source in self.sources:
            self._listen_to(source)
            self._arm(source)

    def stop(self) -> None:
        for fd in list(self._fds):
            self.loop.remove_reader(fd)
        self._fds.clear()
        for timer in self._timers.values():
            timer.cancel()

    def read_all(self, *, arm: bool = True) -> None:
        """Read every source at once (what a turn's last report may still hold); ``arm``: wait for them as before."""
        for source in self.sources:
            self._read(source, arm=arm)

    def _listen_to(self, source: NativeSource) -> None:
        """Wait on each of ``source``'s descriptors as they are now, each registered anew: a number closed and given
        to a new descriptor within one read is another file the loop must be told of."""
        self._forget_fds(source)
        if id(source) in self._broken:
            return
        try:
            fds = source.filenos()
        except Exception as exc:
            self._broke(source, exc)
            return
        for fd in fds:
            self._fds[fd] = source
            self.loop.add_reader(fd, lambda: self._read(source))

    def _forget_fds(self, source: NativeSource) -> None:
        for fd, known in list(self._fds.items()):
            if known is source:
                self.loop.remove_reader(fd)
                del self._fds[fd]

    def _arm(self, source: NativeSource) -> None:
        """Wake for ``source`` at its deadline (the one it gives after each read)."""
        key = id(source)
        old = self._timers.pop(key, None)
        if old is not None:
            old.cancel()
        if key in self._broken:
            return
        try:
            when = source.deadline()
        except Exception as exc:
            self._broke(source, exc)
            return
        if when is not None:
            self._timers[key] = self.loop.call_at(when, lambda: self._read(source))

    def _read(self, source: NativeSource, *, arm: bool = True) -> None:
        if id(source) in self._broken:
            return
        try:
            items = source.read()
        except Exception as exc:
            self._broke(source, exc)
            return
        self._listen_to(source)
        if items:
            self.on_items(items)
        if arm:
            self._arm(source)

    def _broke(self, source: NativeSource, error: Exception) -> None:
        self._broken.add(id(source))
        self._forget_fds(source)
        self.on_error(source, error)
