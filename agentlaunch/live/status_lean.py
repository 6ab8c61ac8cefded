"""``agentlaunch status --line AGENT`` and ``status --json`` before the CLI framework is imported.

:mod:`agentlaunch.entry` hands these two forms here first: they run in a tmux status bar or a prompt,
every few seconds, and answer on the standard library only (no typer, rich, pydantic nor jinja2). Any
other form of ``status`` (the table, ``--watch``, ``--help``, a misspelt or repeated option, a socket
name tmux would refuse) returns None and goes through the full CLI, which prints what it always did
and gives its usage errors. What is printed is formatted in :mod:`agentlaunch.live.status_read`, the
same functions :mod:`agentlaunch.cli.status` prints with.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from agentlaunch.live.status_read import STOPPED_OPTION, agent_line, json_rows, json_text, read_records, stop_marked

if TYPE_CHECKING:
    from collections.abc import Sequence

SOCKET_ENV = "AGENTLAUNCH_TMUX_SOCKET"  # the same variable as agentlaunch.live.tmux.SOCKET_ENV (a test holds it)
AGENT_OPTION = "@agentlaunch_agent"  # agentlaunch.live.tmux.AGENT_OPTION
PANE_FORMAT = "\t".join(("#{" + AGENT_OPTION + "}", "#{session_name}", "#{pane_id}", "#{pane_dead}", "#{pane_dead_status}",
                         "#{pane_pid}", "#{" + STOPPED_OPTION + "}"))  # fmt: skip
SOCKET_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
MAX_LIST = 16 << 20  # what tmux list-panes prints is read up to this (a few KiB with a hundred panes)


class Pane:
    """A dead agent pane (``DeadPane`` in :mod:`agentlaunch.live.tmux`; a plain class: no dataclasses' import)."""

    __slots__ = ("agent", "exit_status", "pane_id", "session", "stopped")

    def __init__(self, agent: str, session: str, pane_id: str, exit_status: int | None, stopped: bool = False) -> None:
        self.agent, self.session, self.pane_id, self.exit_status = agent, session, pane_id, exit_status
        self.stopped = stopped
        """`agentlaunch stop` ended it (:func:`agentlaunch.live.status_read.stop_marked`)."""


def parse(args: Sequence[str]) -> tuple[str, str | None, str | None] | None:
    """``("line", AGENT, SOCKET)`` or ``("json", None, SOCKET)`` for the forms answered here; None for any other.

    A stand-in for Typer, for these two forms only: `status --line` runs in a tmux status bar every few seconds, and
    the full CLI (typer, rich) printing the same took 126 ms of CPU against this path's 37 ms (`--json` with 20
    agents: 138 against 41 ms; ``bench/bench_status.py --compile``, 15 rounds, load 33 on 2 cores, 2026-12-06).
    ``tests/test_fast_paths.py`` holds its reading of generated command lines to click's: where it gives one, click
    gives the same."""
    values: dict[str, str] = {}
    as_json = False
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--json" and not as_json:
            as_json = True
            continue
        name, eq, value = arg.partition("=")
        name = {"-L": "--socket"}.get(name, name) if not eq else name
        if name not in ("--line", "--socket") or name in values:
            return None
        if not eq:
            if not rest:
                return None
            value = rest.pop(0)
        if not value or value.startswith("-"):
            return None  # click's reading of these is the full CLI's to give
        values[name] = value
    socket = values.get("--socket", os.environ.get(SOCKET_ENV) or None)
    if socket is not None and not (len(socket) <= 64 and set(socket) <= SOCKET_CHARS):
        return None  # the full CLI says why tmux would refuse the name
    line = values.get("--line")
    if line is not None and as_json:
        return None  # a usage error, the full CLI's
    if line is not None:
        return ("line", line, socket)
    return ("json", None, socket) if as_json else None


def answer(args: Sequence[str]) -> int | None:
    """Print what ``status ARGS`` prints and return its exit status; None when the full CLI must answer."""
    if any(key.startswith("_AGENTLAUNCH_COMPLETE") for key in os.environ):
        return None
    form = parse(args)
    if form is None:
        return None
    kind, agent, socket = form
    if kind == "line" and agent is not None:
        text = agent_line(agent, lambda: dead_panes(socket))
        if text:
            print(text)
    else:
        listing = PaneListing(socket)  # tmux answers while the records are read
        print(json_text(json_rows(read_records(), listing.panes())))
    return 0


def dead_panes(socket: str | None) -> list[Pane]:
    """The agents whose tmux pane died, as :func:`agentlaunch.live.tmux.dead_agent_panes` lists them; none without tmux."""
    return PaneListing(socket).panes()


class PaneListing:
    """``tmux list-panes`` started at once and read later: ``status --json`` reads the records meanwhile."""

    def __init__(self, socket: str | None) -> None:
        self.pid: int | None = None
        self.read_end = -1
        from shutil import which  # here: `status --line` lists no panes

        tmux = which("tmux")
        if tmux is not None:
            argv = [tmux, *(["-L", socket] if socket else []), "list-panes", "-a", "-F", PANE_FORMAT]
            self.pid, self.read_end = spawn_quietly(argv)

    def panes(self) -> list[Pane]:
        """The dead agent panes tmux listed (none when tmux is missing, failed or no server runs)."""
        out, code = collect(self.pid, self.read_end)
        return dead_panes_listed(out.decode("utf-8", "replace")) if code == 0 else []


def dead_panes_listed(listing: str) -> list[Pane]:
    """The dead agent panes in what ``tmux list-panes -a -F PANE_FORMAT`` printed (the full CLI's reading too)."""
    found = []
    for row in listing.splitlines():
        cells = row.split("\t")
        if len(cells) == 7 and cells[0] and cells[3] == "1":
            code = int(cells[4]) if cells[4].isdigit() else None
            found.append(Pane(cells[0], cells[1], cells[2], code, stop_marked(cells[6], cells[5])))
    return found


def run_quietly(argv: list[str]) -> tuple[bytes, int]:
    """Run ``argv`` with stdin and stderr on /dev/null; its stdout and exit status (127: it did not start)."""
    return collect(*spawn_quietly(argv))


def spawn_quietly(argv: list[str]) -> tuple[int | None, int]:
    """Start ``argv`` (``posix_spawn``: no subprocess import), stdin and stderr on /dev/null: its pid and stdout's pipe."""
    read_end, write_end = os.pipe()
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_DUP2, write_end, 1),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_CLOSE, read_end),
        (os.POSIX_SPAWN_CLOSE, write_end),
    ]
    try:
        pid: int | None = os.posix_spawn(argv[0], argv, os.environ, file_actions=actions)
    except OSError:
        pid = None
    os.close(write_end)
    if pid is None:
        os.close(read_end)
        return None, -1
    return pid, read_end


def collect(pid: int | None, read_end: int) -> tuple[bytes, int]:
    """What the process ``pid`` printed on ``read_end`` (at most :data:`MAX_LIST` kept) and its exit status."""
    if pid is None:
        return b"", 127
    chunks: list[bytes] = []
    size = 0
    try:
        while chunk := os.read(read_end, 1 << 16):
            if size < MAX_LIST:
                chunks.append(chunk)
                size += len(chunk)
    finally:
        os.close(read_end)
    _, status = os.waitpid(pid, 0)
    return b"".join(chunks), os.waitstatus_to_exitcode(status)
