"""Nothing a provider CLI started outlives the launch: a child subreaper and a sweep of what is left.

A CLI may start helpers that leave its process group or session (``setsid``,
a daemonizing double fork). Killing the CLI's group misses them, and one that
holds the CLI's PTY keeps its output open after the CLI is gone. So, on Linux:

- agentlaunch makes itself a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``):
  a descendant whose parent dies is re-parented to agentlaunch, not to init;
- when a launch ends (and when a per-turn CLI's turn ends) :meth:`Reaper.end_all`
  reads the process table and ends what is the launch's: every process in a CLI's
  session or process group, every descendant of a CLI, and every orphan
  re-parented to agentlaunch that is not in agentlaunch's own session (its own
  helpers, a ``tmux`` call say, are). SIGTERM first, SIGKILL after a short
  grace, and each one that is agentlaunch's child is reaped.

Which table: a subreaper keeps every descendant of a CLI it started in its own
tree (an orphan comes back to it, never to init), so when agentlaunch was a
subreaper before each CLI it watches was started, the table is agentlaunch's
own descendants, followed down the ``/proc/PID/task/TID/children`` files
(a few reads, not one per process on the machine), read until two walks agree
(a process that moves while the tree is read is seen by the next walk). Where
that cannot be trusted it is the whole ``/proc``: no subreaper, a CLI started
before agentlaunch became one (an orphan of its then went to init), a CLI not
found below agentlaunch, a kernel without ``children`` files, or a tree that
keeps changing. The rule of what is the launch's is the same on both tables.
The entry point's early start (:mod:`agentlaunch.launch.early.prespawn`) becomes a
subreaper before it spawns, so the CLI it starts is followed in the tree too.

Another launch's processes are never touched: they are neither in a session
this launch's CLIs lead nor descended from them, and their parent is that
other agentlaunch. Elsewhere (no ``/proc``) this does nothing beyond the CLI's
own process group, which :class:`~agentlaunch.launch.transport.Child` ends.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from collections.abc import Iterable

from agentlaunch.platform_support import become_child_subreaper, pidfd, proc_names, proc_path, proc_text
from agentlaunch.processes import process_running, stat_fields

GRACE = 1.0  # seconds a leftover gets to end on SIGTERM before SIGKILL
NO_PIDFD_LOOK = 0.02  # seconds between looks at a process ending without a pidfd (not Linux)
TREE_WALKS = 4  # tree walks that must end in two that agree before the whole /proc is read instead

# This process's children when it became a subreaper (None: it is not one). A child among them may
# have left orphans with init before then: a CLI among them is never followed in the tree alone.
_subreaper_since: frozenset[int] | None = None
_subreaper_since_pid = 0  # a forked child is no subreaper (the kernel clears it): the pid that became one


def become_subreaper() -> bool:
    """Make orphaned descendants this process's children (Linux); False where that is not possible (macOS)."""
    global _subreaper_since, _subreaper_since_pid
    if _subreaper_since is not None and _subreaper_since_pid == os.getpid():
        return True
    if not become_child_subreaper():
        return False
    _subreaper_since, _subreaper_since_pid = frozenset(own_children()), os.getpid()
    return True


class Proc:
    """One process as /proc tells it (a plain class: this module loads before the early start's spawn, without
    typing's NamedTuple)."""

    __slots__ = ("pid", "ppid", "pgid", "sid", "zombie")

    def __init__(self, pid: int, ppid: int, pgid: int, sid: int, zombie: bool) -> None:
        self.pid, self.ppid, self.pgid, self.sid, self.zombie = pid, ppid, pgid, sid, zombie

    def _key(self) -> tuple[int, int, int, int, bool]:
        return (self.pid, self.ppid, self.pgid, self.sid, self.zombie)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Proc) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Proc(pid={self.pid}, ppid={self.ppid}, pgid={self.pgid}, sid={self.sid}, zombie={self.zombie})"


def _stat(pid: int) -> Proc | None:
    fields = stat_fields(pid)
    if fields is None:
        return None
    try:
        return Proc(pid, int(fields[1]), int(fields[2]), int(fields[3]), fields[0] == "Z")
    except (IndexError, ValueError):
        return None


def processes() -> dict[int, Proc]:
    """Every process visible in /proc ({} where there is none)."""
    table: dict[int, Proc] = {}
    try:
        names = proc_names()
    except OSError:
        return table
    for name in names:
        if name.isdigit() and (info := _stat(int(name))) is not None:
            table[info.pid] = info
    return table


def own_children() -> set[int]:
    """This process's children, from each of its threads' ``children`` file (far cheaper than a /proc walk)."""
    return children_of("self") or set()


def children_of(pid: int | str) -> set[int] | None:
    """``pid``'s children, from each of its threads' ``children`` file; None where the kernel has none.

    A process that is gone has no children ({}).
    """
    try:
        tasks = proc_names(pid, "task")
    except OSError:
        return set()
    found: set[int] = set()
    for tid in tasks:
        try:
            found.update(int(kid) for kid in proc_text(pid, "task", tid, "children").split())
        except FileNotFoundError:
            if os.path.exists(proc_path(pid, "task", tid)):
                return None  # no CONFIG_PROC_CHILDREN: the thread is there, its children file is not
        except (OSError, ValueError):
            pass  # the thread ended while read: its children went to a sibling thread (the next walk sees them)
    return found


def descendants(root: int) -> dict[int, Proc] | None:
    """``root`` (absent when gone) and every process below it, by ``children`` files; None where they are missing."""
    table: dict[int, Proc] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        info = _stat(pid)
        if info is None or pid in table:
            continue
        table[pid] = info
        kids = children_of(pid)
        if kids is None:
            return None
        todo.extend(kids)
    return table


def own_tree() -> dict[int, Proc] | None:
    """This process and its descendants, read until two walks agree; None where the tree cannot be followed."""
    me = os.getpid()
    last: dict[int, Proc] | None = None
    for _ in range(TREE_WALKS):
        table = descendants(me)
        if table is None:
            return None
        if last is not None and table.keys() == last.keys():
            return table
        last = table
    return None


class Reaper:
    """Which processes are this launch's, and ending them."""

    def __init__(self, *, subreaper: bool = True) -> None:
        self.me = os.getpid()
        self.my_sid = os.getsid(0)
        self.subreaper = become_subreaper() if subreaper else False
        self.roots: set[int] = set()  # the CLIs this launch started (session leaders: start_new_session)
        # Children agentlaunch had before this launch began are not the launch's (a test runner's, say).
        self.before = own_children()
        self.walks = {"tree": 0, "proc": 0}  # which table each look read (the tests read it)

    def table(self) -> dict[int, Proc]:
        """The processes the launch's may be among: agentlaunch's own tree when that is all of them, else all of /proc."""
        since = _subreaper_since if self.subreaper and _subreaper_since_pid == self.me == os.getpid() else None
        if since is not None and not (self.roots & since):
            tree = own_tree()
            # A CLI that is there but not below agentlaunch (not its child after all): it may have others elsewhere.
            if tree is not None and all(root in tree or _stat(root) is None for root in self.roots):
                self.walks["tree"] += 1
                return tree
        self.walks["proc"] += 1
        return processes()

    def watch(self, pid: int) -> None:
        """``pid`` is a CLI this launch started: its session, group and descendants are the launch's."""
        self.roots.add(pid)

    def leftovers(self, table: dict[int, Proc] | None = None, *, keep: Iterable[int] = ()) -> set[int]:
        """The launch's processes still present (zombies included), except ``keep``."""
        table = self.table() if table is None else table
        ours = {
            p.pid
            for p in table.values()
            if p.sid in self.roots
            or p.pgid in self.roots
            or p.pid in self.roots
            or (p.ppid == self.me and p.sid != self.my_sid and p.pid not in self.before)
        }
        children: dict[int, list[int]] = {}
        for p in table.values():
            children.setdefault(p.ppid, []).append(p.pid)
        todo = list(ours)
        while todo:
            for kid in children.get(todo.pop(), ()):
                if kid not in ours:
                    ours.add(kid)
                    todo.append(kid)
        return ours - set(keep) - {self.me}

    def reap_orphans(self, keep: Iterable[int] = ()) -> None:
        """Collect exited orphans re-parented to agentlaunch (never a child another part of it waits for)."""
        kept = set(keep) | self.roots
        kids = children_of("self")
        found = processes().values() if kids is None else filter(None, map(_stat, kids))
        for p in found:
            if p.zombie and p.ppid == self.me and p.pid not in kept and p.pid in self.leftovers({p.pid: p}):
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(p.pid, os.WNOHANG)

    def end_all(self, also: Iterable[int] = (), *, keep: Iterable[int] = (), grace: float = GRACE) -> set[int]:
        """End every process of the launch (and ``also``, found earlier), reap its children; the pids ended."""
        ended: set[int] = set()
        extra = set(also)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            table = self.table()
            targets = self.leftovers(table, keep=keep) | {pid for pid in extra if pid in table}
            targets -= set(keep) | {self.me}
            if not targets:
                break
            live = {pid for pid in targets if not table[pid].zombie}
            for pid in live:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sig)
            ended |= targets
            self._wait_gone(live, grace if sig == signal.SIGTERM else GRACE)
            self._reap(targets)
        return ended

    def _wait_gone(self, pids: set[int], grace: float) -> None:
        """Wait up to ``grace`` seconds for ``pids`` to exit (pidfds: no polling where the kernel has them; elsewhere
        a look every :data:`NO_PIDFD_LOOK` seconds at those it has none for)."""
        fds: list[int] = []
        unopened: set[int] = set()
        try:
            for pid in pids:
                if (fd := pidfd(pid)) is not None:
                    fds.append(fd)
                else:
                    unopened.add(pid)
            deadline = time.monotonic() + grace
            while fds or unopened:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                unopened = {pid for pid in unopened if process_running(pid)}
                wait = min(left, NO_PIDFD_LOOK) if unopened else left
                if not fds:
                    time.sleep(wait)
                    continue
                done = select.select(fds, [], [], wait)[0]
                for fd in done:
                    fds.remove(fd)
                    os.close(fd)
        finally:
            for fd in fds:
                os.close(fd)

    def _reap(self, pids: Iterable[int]) -> None:
        for pid in pids:
            info = _stat(pid)
            if info is not None and info.ppid == self.me and info.zombie:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)
