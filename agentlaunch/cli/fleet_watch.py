"""``agentlaunch fleet --watch --json``: this machine's stream of changes and every host's, one JSON line each
(:mod:`agentlaunch.fleet.stream`, :mod:`agentlaunch.hosts.watch`), until Ctrl-C or the reader closes the stream."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from typing import TYPE_CHECKING

from agentlaunch import paths
from agentlaunch.fleet.model import read_fleet
from agentlaunch.fleet.records import status_folder
from agentlaunch.fleet.stream import keyed, watch_local
from agentlaunch.hosts.watch import Merged
from agentlaunch.live.tmux import Tmux, TmuxMissing

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentlaunch.fleet.stream import Agents, Line
    from agentlaunch.hosts.config import Host


def watch_fleet(
    socket: str | None,
    defined: Callable[[], tuple[list[str], str | None]],
    hosts: tuple[Host, ...],
    *,
    end_with_stdin: bool,
) -> None:
    """Write the stream on stdout: the hosts' watches started first, then this machine's, until the end. ``defined``:
    the agents defined, and what went wrong reading them."""
    try:
        tmux: Tmux | None = Tmux(socket)
    except TmuxMissing:
        tmux = None
    closed = threading.Event()
    wake_read, wake_write = os.pipe()  # closed when a host's line finds the reader gone: the local watch ends

    def write(said: Line) -> None:
        if closed.is_set():
            return
        try:
            sys.stdout.write(json.dumps(said, ensure_ascii=False) + "\n")
            sys.stdout.flush()
        except BrokenPipeError:
            closed.set()
            with contextlib.suppress(OSError):
                os.close(wake_write)

    def read() -> tuple[Agents, list[str]]:
        names, problem = defined()
        found = read_fleet(tmux=tmux, names=names)
        return keyed(found), found.problems + ([problem] if problem is not None else [])

    merged = Merged(write)
    merged.start(hosts)
    state = paths.state_dir()
    try:
        watch_local(read, merged.local, status_folder(state), str(state), ends=[wake_read, *([0] if end_with_stdin else [])])
    except KeyboardInterrupt:
        pass
    finally:
        merged.stop()
        os.close(wake_read)
        with contextlib.suppress(OSError):
            os.close(wake_write)
        if closed.is_set():  # the reader is gone: Python's last flush of stdout would complain
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
