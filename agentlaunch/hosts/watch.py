"""Each host's fleet, live: one long-lived ``agentlaunch fleet --watch --json --local`` per host over its shared
connection (``fleet --watch --json`` across hosts, the deck), restarted with backoff when it ends.

A :class:`HostWatch` runs the host's stream of changes (:mod:`agentlaunch.fleet.stream`) in a thread of its own and
hands each line to ``got`` (its ``host`` set to the host's name, an agent's ``host`` too). The host sends a line only
when something changed there: while nothing changes no byte travels but ssh's keep-alives. When the stream ends (the
connection dropped, the host went down, its agentlaunch cannot watch) or does not say ``synced`` within the host's
``timeout``, ``down`` is called with why (``host unreachable: HOST: WHY``), and the watch is started again after 1 s,
then 2, 4... at most :data:`RETRY_MOST`: a host that comes back is read again by itself, and gives all its agents
again then ``synced``. The host's agentlaunch ends its watch when its stdin closes: when the connection drops, or
:meth:`HostWatch.stop` closes it here.

:class:`Merged` makes one stream of this machine's and every host's for ``agentlaunch fleet --watch --json``: a
host that is down has its agents said ``gone`` and one row, ``host-unreachable``, whose ``problem`` says why.
"""

from __future__ import annotations

import json
import subprocess
import threading
from typing import TYPE_CHECKING

from agentlaunch.errors import AgentlaunchError
from agentlaunch.fleet.contract import VERSION
from agentlaunch.fleet.stream import line
from agentlaunch.hosts import ssh
from agentlaunch.hosts.fleet import HostRead, failed, unreachable_agent

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from agentlaunch.fleet.stream import Line
    from agentlaunch.hosts.config import Host

RETRY_FIRST = 1.0
RETRY_MOST = 30.0
"""Seconds between two tries to watch a host that is down: 1, 2, 4... at most this."""
WATCH_ARGS = ("fleet", "--watch", "--json", "--local", "--end-with-stdin")


class HostWatch:
    """One host's stream of changes, kept running in a thread until :meth:`stop`."""

    def __init__(
        self, host: Host, got: Callable[[Line], None], down: Callable[[Host, str], None], *, retry_most: float = RETRY_MOST
    ) -> None:
        self.host, self.got, self.down, self.retry_most = host, got, down, retry_most
        self.stopped = threading.Event()
        self.proc: subprocess.Popen[bytes] | None = None
        self.tries = 0  # streams started (tests and the bench count them)
        self.thread = threading.Thread(target=self._run, name=f"watch-{host.name}", daemon=True)

    def start(self) -> HostWatch:
        self.thread.start()
        return self

    def stop(self, *, wait: bool = True) -> None:
        """End the watch: its stdin closed (the host's agentlaunch ends), its ssh ended; ``wait``: its thread too."""
        self.stopped.set()
        proc = self.proc
        if proc is not None:
            _end(proc)
        if wait:
            self.thread.join(5)

    def _run(self) -> None:
        wait = RETRY_FIRST
        while not self.stopped.is_set():
            synced, problem = self._once()
            if self.stopped.is_set():
                return
            self.down(self.host, problem)
            if synced:
                wait = RETRY_FIRST  # it was up: a drop is tried again soon
            self.stopped.wait(wait)
            wait = min(wait * 2, self.retry_most)

    def _once(self) -> tuple[bool, str]:
        """Run the host's watch until it ends: whether it said ``synced``, and why it ended."""
        host = self.host
        args = ssh.agentlaunch_args(host, WATCH_ARGS, agents=True, socket=True)
        self.tries += 1
        try:
            argv = ssh.ssh_argv(host, ssh.guarded(host, ssh.remote_command(host, args)))
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,  # kept open: the host's watch ends when it closes
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=ssh.ssh_env(),
            )
        except AgentlaunchError as exc:  # the folder of control sockets refused
            return False, f"host unreachable: {host.name}: {exc.message}"
        except OSError:
            return False, "host unreachable: ssh is not installed here (OpenSSH's client)"
        self.proc = proc
        errors: list[bytes] = []
        reader = threading.Thread(target=lambda: errors.extend(proc.stderr or ()), daemon=True)
        reader.start()
        synced, late = threading.Event(), threading.Event()

        def too_late() -> None:
            if not synced.is_set():
                late.set()
                _end(proc)

        timer = threading.Timer(host.timeout, too_late)
        timer.start()
        problem = ""
        try:
            for raw in proc.stdout or ():
                said = self._line(raw)
                if said == "synced":
                    synced.set()
                elif said:
                    problem = said
                    break
        finally:
            timer.cancel()
            code = _end(proc)
            reader.join(2)
            self.proc = None
        return synced.is_set(), f"host unreachable: {host.name}: {problem or self._why(code, b''.join(errors), late.is_set())}"

    def _why(self, code: int, stderr: bytes, late: bool) -> str:
        """Why the host's watch ended, from ssh's exit status and what was written on stderr."""
        host, text = self.host, stderr.decode("utf-8", "replace")
        if late:
            return f"no answer within {host.timeout:g}s"
        if code == 127 and ssh.MISSING in text:
            return f"agentlaunch is not installed there (`{host.agentlaunch}` not found by a non-interactive ssh command)"
        if code == ssh.SSH_FAILED or code < 0:
            return ssh.why(text, host) if text.strip() else "the connection ended"
        if code == 2 and ("--watch" in text or "--end-with-stdin" in text):
            return "its agentlaunch is older than this one (no fleet --watch): install the same version there"
        if code == 0:
            return "its fleet --watch ended"
        return failed(code, text)

    def _line(self, raw: bytes) -> str | None:
        """Hand one line of the host's stream on: ``synced`` for that line, a problem for one that is not the stream."""
        try:
            data = json.loads(raw)
        except ValueError:
            return "its fleet --watch printed what is not JSON"
        if isinstance(data, dict) and data.get("version") != VERSION:
            return f"its agentlaunch speaks fleet contract {data.get('version')!r}, this one {VERSION}: install the same version"
        if not isinstance(data, dict) or not isinstance(data.get("change"), str):
            return "its fleet --watch is not the stream of changes"
        data["host"] = self.host.name
        if isinstance(data.get("agent"), dict):
            data["agent"]["host"] = self.host.name
        self.got(data)
        return "synced" if data["change"] == "synced" else None


def _end(proc: subprocess.Popen[bytes]) -> int:
    """End ``proc`` (its stdin closed, then SIGTERM): its exit status."""
    if proc.poll() is None:
        try:
            if proc.stdin is not None:
                proc.stdin.close()
        except OSError:
            pass
        proc.terminate()
    try:
        return proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


UNREACHABLE_ID = "host-unreachable"
"""The ``id`` of a host's one row while it is down."""


class Merged:
    """This machine's stream and every host's as one (``fleet --watch --json``): a host that is down is one row."""

    def __init__(self, emit: Callable[[Line], None]) -> None:
        self.emit = emit
        self.lock = threading.Lock()
        self.known: dict[str, set[str]] = {}  # host -> the ids given for it
        self.problem: dict[str, str] = {}  # host -> why it is down, as said on its row
        self.watches: list[HostWatch] = []

    def start(self, hosts: Sequence[Host], *, retry_most: float = RETRY_MOST) -> None:
        self.watches = [HostWatch(h, self.got, self.down, retry_most=retry_most).start() for h in hosts]

    def stop(self) -> None:
        for watch in self.watches:
            watch.stopped.set()
        for watch in self.watches:
            watch.stop()

    def local(self, said: Line) -> None:
        with self.lock:
            self.emit(said)

    def got(self, said: Line) -> None:
        host = str(said["host"])
        with self.lock:
            mine = self.known.setdefault(host, set())
            if UNREACHABLE_ID in mine:  # the host is back
                mine.discard(UNREACHABLE_ID)
                self.emit(line("gone", host, id=UNREACHABLE_ID))
            if said["change"] == "agent":
                mine.add(str(said["id"]))
            elif said["change"] == "gone":
                mine.discard(str(said["id"]))
            self.emit(said)

    def down(self, host: Host, problem: str) -> None:
        with self.lock:
            mine = self.known.setdefault(host.name, set())
            if UNREACHABLE_ID in mine and self.problem.get(host.name) == problem:
                return  # said already: a try of a host still down is not a change
            self.problem[host.name] = problem
            was_down = UNREACHABLE_ID in mine
            for key in sorted(mine - {UNREACHABLE_ID}):
                self.emit(line("gone", host.name, id=key))
            mine.clear()
            mine.add(UNREACHABLE_ID)
            self.emit(line("agent", host.name, id=UNREACHABLE_ID, agent=unreachable_agent(HostRead(host, problem=problem))))
            if not was_down:
                self.emit(line("synced", host.name))
