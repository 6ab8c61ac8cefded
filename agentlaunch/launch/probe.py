"""One run of a provider CLI on the launch's own transport, until something outside it happened (the doctor's capture).

``agentlaunch doctor --live`` measures what ``agentlaunch run`` sends, so it
starts the CLI the same way: on a PTY with stdin a pipe
(:class:`~agentlaunch.launch.transport.Child`), the message written to stdin.
It then waits on a :class:`~agentlaunch.launch.loop.Loop` for one of: the
outside event (``seen()`` turns true; ``wake_fd`` becomes readable whenever it
may have, e.g. written by the capture endpoint on each request), the CLI's
exit, or the deadline. Whatever the CLI printed goes to ``transcript``, and its
last lines are kept for the error message. What the CLI started is ended
afterwards, as a launch ends it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentlaunch.launch.loop import Loop
from agentlaunch.launch.reaper import Reaper
from agentlaunch.launch.transport import Child
from agentlaunch.launch.turn import EXIT_DRAIN, KILL_WAIT

NO_PIDFD_CHECK = 0.1  # seconds between looks at a CLI whose exit no pidfd reports (not Linux)


@dataclass
class ProbeResult:
    exit_code: int | None  # None: it had to be stopped
    seen: bool  # the outside event happened
    timed_out: bool  # the deadline passed before it did
    last_output: list[str]  # the CLI's last non-blank lines


def probe(
    argv: Sequence[str],
    env: dict[str, str],
    cwd: Path,
    stdin: bytes,
    *,
    seen: Callable[[], bool],
    wake_fd: int,
    timeout: float,
    grace: float,
    transcript: Path,
) -> ProbeResult:
    """Run ``argv`` until ``seen()`` (then ``grace`` seconds more, or its exit), its exit, or ``timeout`` seconds."""
    child = Child(argv, env, cwd)  # ProviderMissing when it cannot start
    reaper = Reaper(subreaper=False)
    reaper.watch(child.pid)
    loop = Loop()
    last: deque[str] = deque(maxlen=3)
    result = ProbeResult(exit_code=None, seen=False, timed_out=False, last_output=[])
    exited = False
    with open(transcript, "w", encoding="utf-8") as out:

        def on_output() -> None:
            for item in child.read_available():
                if isinstance(item, str):
                    out.write(item + "\n")
                    if item.strip():
                        last.append(item.strip())
            if child.eof:
                loop.remove_reader(child.master)
                if exited:
                    loop.stop()

        def on_exit() -> None:
            nonlocal exited
            if child.pidfd is not None:
                loop.remove_reader(child.pidfd)
            exited = True
            loop.call_later(EXIT_DRAIN, loop.stop)  # a helper it started may hold the PTY open
            on_output()

        def check_exit() -> None:
            if child.poll() is not None:
                on_exit()
            else:
                loop.call_later(NO_PIDFD_CHECK, check_exit)

        def on_wake() -> None:
            with contextlib.suppress(OSError):
                os.read(wake_fd, 4096)
            if not result.seen and seen():
                result.seen = True
                loop.call_later(grace, loop.stop)  # what we came for; the CLI need not finish

        def on_deadline() -> None:
            if not result.seen:
                result.timed_out = True
                loop.stop()

        def on_writable() -> None:
            fd = child.stdin_fd
            child.flush_stdin()
            if fd is not None and not child.wants_write:
                loop.remove_writer(fd)

        child.send_bytes(stdin)
        child.close_stdin(after_flush=True)
        loop.add_reader(child.master, on_output)
        loop.add_reader(wake_fd, on_wake)
        if child.pidfd is not None:
            loop.add_reader(child.pidfd, on_exit)
        else:
            loop.call_later(NO_PIDFD_CHECK, check_exit)
        if child.wants_write and child.stdin_fd is not None:
            loop.add_writer(child.stdin_fd, on_writable)
        loop.call_later(timeout, on_deadline)
        on_wake()  # it may have happened already
        try:
            loop.run()
        finally:
            loop.close()
            result.exit_code = _stop(child)
            reaper.end_all()
            child.close()
    result.last_output = list(last)
    return result


def _stop(child: Child) -> int:
    """End the CLI's process group (SIGTERM, then SIGKILL); its exit code."""
    code = child.poll()
    if code is not None:
        return code
    for sig in (signal.SIGTERM, signal.SIGKILL):
        child.signal_group(sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            return child.wait(timeout=KILL_WAIT)
    return child.proc.wait()
