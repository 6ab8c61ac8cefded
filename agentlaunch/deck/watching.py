"""How the deck's board stays current: it learns of changes from the status records' folder (inotify where there is
one, set up just after the first frame; else the folder's mtime once a second), reads tmux's panes every few seconds
(a pane dying writes no record), and reads the worktrees, today's cost and the definitions (provider, model, a load
problem) in a worker thread every 15 s (:mod:`agentlaunch.deck.worker_reads`). The preview is captured again once a
second, less often while it shows nothing new.
"""

from __future__ import annotations

import asyncio
import contextlib
from concurrent.futures import Future
from typing import TYPE_CHECKING

from textual import work
from textual.timer import Timer

from agentlaunch.deck.board import Board
from agentlaunch.deck.host_rows import HostRows
from agentlaunch.deck.rows import Definitions, Row, Sources, folder_mtime
from agentlaunch.deck.worker_reads import load_definitions, today_costs, worktree_states

if TYPE_CHECKING:  # the folder's watch (ctypes) is imported when first used, after the first frame
    from agentlaunch.dir_watch import DirWatch
    from agentlaunch.hosts.watch import HostWatch
    from agentlaunch.worktrees.git_worktree import WorktreeState

TICK = 1.0  # seconds: countdowns, the preview's capture, the folder's mtime without inotify
PANES_EVERY = 10.0  # seconds between two reads of tmux's panes when no record changed
SLOW_EVERY = 15.0  # seconds between two reads of the worktrees, today's cost and the definitions
SETTLE = 0.1  # seconds a burst of record writes is given before the list is read again
WORKTREES_AFTER_RECORD = 2.0  # seconds: a record's change reads the worktrees again, at most this often


class WatchedBoard(Board):
    """The board, read again when a record changes, on its timers, and by its worker threads."""

    def __init__(
        self,
        sources: Sources,
        *,
        watch: bool = True,
        first: Future[tuple[float, list[Row]]] | None = None,
    ) -> None:
        """``watch``: inotify on the status folder (else its mtime once a second)."""
        super().__init__(sources, first=first)
        self.use_watch = watch
        self.dir_watch: DirWatch | None = None
        self.pending: Timer | None = None
        self.worktrees_due: Timer | None = None
        self.worktrees_read = 0.0  # the loop's time of the last read of the worktrees
        self.host_watches: list[HostWatch] = []
        self.hosts_due: Timer | None = None

    def on_mount(self) -> None:
        self.reload()
        self.set_interval(TICK, self.tick)
        self.set_interval(SLOW_EVERY, self.read_slow)
        self.call_after_refresh(self.start_watch)  # the watch (ctypes' import), git, the store and the definitions:
        self.call_after_refresh(self.read_slow)  # after the first frame, not before it
        self.call_after_refresh(self.start_hosts)  # and each host's watch (ssh)

    def start_watch(self) -> None:
        """inotify on the status folder (its parent until it exists), else the folder's mtime on each tick; the list
        read again when the folder changed since it was read (a record written before the watch was up)."""
        from agentlaunch.dir_watch import open_watch

        if not self.use_watch or (watch := open_watch()) is None:
            return
        self.dir_watch = watch
        self._watch_folders()
        with contextlib.suppress(RuntimeError):  # the deck closing
            asyncio.get_running_loop().add_reader(watch.fd, self._on_watch)
        if folder_mtime(self.sources.status_dir) != self.folder_mtime:
            self.reload()

    def _watch_folders(self) -> None:
        from agentlaunch.dir_watch import GONE, MASK

        if self.dir_watch is not None and not self.dir_watch.watch(self.sources.status_dir, MASK | GONE):
            self.dir_watch.watch(self.sources.state_dir)

    def _on_watch(self) -> None:
        if self.dir_watch is not None and self.dir_watch.drain():
            self._watch_folders()
            if self.pending is None:  # a burst of writes is read once
                self.pending = self.set_timer(SETTLE, self._settled)

    def _settled(self) -> None:
        self.pending = None
        self.reload(panes_again=False)  # a state change: tmux's panes are listed again only when a record came or went
        self.worktrees_soon()  # an agent's turn changes its worktree: its branch column is not left 15 s behind

    def worktrees_soon(self) -> None:
        """Read the worktrees again in a worker thread, at most once per :data:`WORKTREES_AFTER_RECORD` (a busy team
        rewrites its records many times a second); the last change of a burst is always read."""
        if self.worktrees_due is not None:
            return
        wait = max(self.worktrees_read + WORKTREES_AFTER_RECORD - self._now(), SETTLE)  # Textual: no timer of 0 s
        self.worktrees_due = self.set_timer(wait, self._worktrees_now)

    def _worktrees_now(self) -> None:
        self.worktrees_due = None
        self.worktrees_read = self._now()  # a burst meanwhile waits for the next round
        self.read_worktrees()

    @work(thread=True, exclusive=True, group="worktrees")
    def read_worktrees(self) -> None:
        worktrees = worktree_states(self.sources.state_dir)
        self.from_thread(self._got_slow, worktrees, self.today, self.sources.definitions)

    def start_hosts(self) -> None:
        """One watch per host of config.yaml (:class:`~agentlaunch.hosts.watch.HostWatch`): its agents become rows as
        its lines come, greyed with why while it is down, current again when it is back."""
        from agentlaunch.hosts.watch import HostWatch

        if self.sources.hosts_problem:
            self.say(self.sources.hosts_problem)
        if not self.sources.hosts or self.host_watches:
            return
        self.host_rows = HostRows(self.sources.hosts)
        got = lambda line: self.from_thread(self._host_line, line)  # noqa: E731 - from the watch's thread
        lost = lambda host, why: self.from_thread(self._host_lost, host.name, why)  # noqa: E731
        self.host_watches = [HostWatch(host, got, lost).start() for host in self.sources.hosts]

    def _host_line(self, line: dict[str, object]) -> None:
        if self.host_rows.got(line) and self.hosts_due is None:  # a host's burst of lines (all its agents) drawn once
            self.hosts_due = self.set_timer(SETTLE, self._hosts_settled)

    def _host_lost(self, host: str, why: str) -> None:
        self.host_rows.lost(host, why)
        self._hosts_settled()

    def _hosts_settled(self) -> None:
        self.hosts_due = None
        self.rows = self.merged()
        self.draw()

    def on_unmount(self) -> None:
        for watch in self.host_watches:
            watch.stop(wait=False)
        for timer in (self.pending, self.worktrees_due, self.hosts_due):
            if timer is not None:
                timer.stop()
        if self.dir_watch is not None:
            with contextlib.suppress(RuntimeError, ValueError):
                asyncio.get_running_loop().remove_reader(self.dir_watch.fd)
            self.dir_watch.close()

    def tick(self) -> None:
        """Once a second: a folder that changed without inotify, tmux every few seconds, then countdowns and the preview."""
        if self.dir_watch is None and folder_mtime(self.sources.status_dir) != self.folder_mtime:
            self.reload()
            return
        if self._now() - self.last_panes >= PANES_EVERY:
            self.reload()
            return
        self.since_capture += 1
        self.draw(preview=self.since_capture >= self.capture_every)

    @work(thread=True, exclusive=True, group="slow")
    def read_slow(self) -> None:
        import agentlaunch.deck.picker  # noqa: F401 - imported here, off the loop: n's first press does not wait for it

        src = self.sources
        definitions = load_definitions(src.agents_dir, src.state_dir, dict(src.definitions))
        worktrees, today = worktree_states(src.state_dir), today_costs(src.store_path)
        self.from_thread(self._got_slow, worktrees, today, definitions)

    def _got_slow(self, worktrees: dict[str, WorktreeState], today: dict[str, float], definitions: Definitions) -> None:
        self.worktrees_read = self._now()
        if (worktrees, today, definitions) != (self.worktrees, self.today, self.sources.definitions):
            self.say_definitions(self.sources.definitions, definitions)
            self.worktrees, self.today, self.sources.definitions = worktrees, today, definitions
            self.reload()

    def say_definitions(self, before: Definitions, after: Definitions) -> None:
        """A definition that broke (or loads again) while the deck is open, said on the message line; its row keeps
        its columns (a few words there, the whole problem here)."""
        if not before:
            return  # the first load: a broken one is said when its row is selected
        for name, (_, _, _, problem) in after.items():
            was = before.get(name, (0.0, "", "", None))[3]
            if problem is not None and problem != was:
                self.say(f"{name}: {problem}")
            elif problem is None and was is not None:
                self.say(f"{name}: its definition loads again")
