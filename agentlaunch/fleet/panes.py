"""The one place that runs ``tmux list-panes``: every pane of a server (or of one session) in one format.

Each agent's pane carries the pane option ``@agentlaunch_agent`` (``tmux up``, ``fork`` set it), the session its
launch named (``@agentlaunch_session``), the session a fork started from (``@agentlaunch_fork``) and, once
`agentlaunch stop` ended it, ``@agentlaunch_stopped``. :class:`Pane` is one listed pane with all of that;
:func:`parse` reads a listing, :class:`PaneListing` runs one.

A listing runs through whatever ``tmux`` object the caller has: :class:`agentlaunch.live.tmux.Tmux` (subprocess),
a test's own, or :class:`LeanTmux` (``posix_spawn``, for ``status --line`` and ``--json``, which import neither
subprocess nor the CLI), which starts tmux at once so that the records are read while it answers.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from agentlaunch.fleet.states import STOPPED_OPTION, stop_marked

if TYPE_CHECKING:  # only mypy reads these
    from collections.abc import Sequence
    from typing import Protocol

    class Answer(Protocol):  # subprocess.CompletedProcess[str], Ran
        @property
        def returncode(self) -> int: ...
        @property
        def stdout(self) -> str: ...
        @property
        def stderr(self) -> str: ...

    class TmuxLike(Protocol):  # agentlaunch.live.tmux.Tmux, LeanTmux, a test's own
        def run(self, *args: str, check: bool = ...) -> Answer: ...


AGENT_OPTION = "@agentlaunch_agent"  # which agent a pane runs
SESSION_OPTION = "@agentlaunch_session"  # the session its launch named: a pane that died is restarted in it
FORK_OPTION = "@agentlaunch_fork"  # on a fork's pane (`agentlaunch fork`): the session it started from
TILED_OPTION = "@agentlaunch_tiled"  # on the window `tmux up --layout tiled` made
FIELDS = (
    "#{" + AGENT_OPTION + "}",
    "#{session_name}",
    "#{pane_id}",
    "#{pane_dead}",
    "#{pane_dead_status}",
    "#{pane_pid}",
    "#{" + STOPPED_OPTION + "}",
    "#{" + SESSION_OPTION + "}",
    "#{" + FORK_OPTION + "}",
    "#{" + TILED_OPTION + "}",
    "#{window_id}",
    "#{window_name}",
    "#{pane_title}",
)
"""What is listed of each pane, in this order, tab-separated; the title last (a CLI sets it: it may hold a tab)."""
PANE_FORMAT = "\t".join(FIELDS)
MAX_LIST = 16 << 20  # what tmux list-panes prints is read up to this (a few KiB with a hundred panes)
SOCKET_ENV = "AGENTLAUNCH_TMUX_SOCKET"  # the tmux server `tmux up` and the readers use (tmux -L)


class Pane:
    """One pane as tmux listed it (agentlaunch's or not: ``agent`` is "" for a pane of anyone else's)."""

    __slots__ = (
        "agent",
        "dead",
        "exit_status",
        "fork",
        "pane_id",
        "pid",
        "session_id",
        "stopped",
        "tiled",
        "title",
        "tmux_session",
        "window_id",
        "window_name",
    )

    def __init__(
        self,
        agent: str,
        tmux_session: str,
        pane_id: str,
        exit_status: int | None = None,
        stopped: bool = False,
        *,
        dead: bool = True,
        pid: int = 0,
        session_id: str = "",
        fork: str = "",
        tiled: bool = False,
        window_id: str = "",
        window_name: str = "",
        title: str = "",
    ) -> None:
        self.agent, self.tmux_session, self.pane_id, self.exit_status = agent, tmux_session, pane_id, exit_status
        self.stopped = stopped
        """`agentlaunch stop` ended the process the pane runs or ran (:func:`agentlaunch.fleet.states.stop_marked`)."""
        self.dead, self.pid, self.session_id, self.fork, self.tiled = dead, pid, session_id, fork, tiled
        self.window_id, self.window_name, self.title = window_id, window_name, title

    def _key(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return self._key() == other._key() if isinstance(other, Pane) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Pane({', '.join(f'{name}={getattr(self, name)!r}' for name in self.__slots__)})"


def parse(listing: str) -> list[Pane]:
    """Every pane in what ``tmux list-panes -F PANE_FORMAT`` printed (a row that is not one is skipped)."""
    found = []
    for row in listing.splitlines():
        cells = row.split("\t", len(FIELDS) - 1)
        if len(cells) != len(FIELDS):
            continue
        agent, session, pane_id, dead, status, pid, stopped, sid, fork, tiled, window_id, window_name, title = cells
        found.append(
            Pane(
                agent,
                session,
                pane_id,
                int(status) if status.isdigit() else None,
                stop_marked(stopped, pid),
                dead=dead == "1",
                pid=int(pid) if pid.isdigit() else 0,
                session_id=sid,
                fork=fork,
                tiled=tiled == "1",
                window_id=window_id,
                window_name=window_name,
                title=title,
            )
        )
    return found


def list_args(session: str | None = None) -> list[str]:
    """``tmux`` arguments listing every pane of the server, or of ``session`` (matched exactly)."""
    where = ["-a"] if session is None else ["-s", "-t", f"={session}"]
    return ["list-panes", *where, "-F", PANE_FORMAT]


class Listing:
    """What a listing found: the panes, tmux's exit status, and what went wrong (None: fine, or simply no server)."""

    __slots__ = ("code", "error", "panes", "problem")

    def __init__(self, panes: list[Pane], code: int = 0, error: str = "", problem: str | None = None) -> None:
        self.panes, self.code, self.error, self.problem = panes, code, error, problem

    @property
    def agent_panes(self) -> list[Pane]:
        """The panes agentlaunch made for an agent."""
        return [p for p in self.panes if p.agent]

    @property
    def dead(self) -> list[Pane]:
        """The agent panes whose agent died or was stopped (kept open with their error: ``remain-on-exit``)."""
        return [p for p in self.panes if p.agent and p.dead]


def listing_of(code: int, stdout: str, stderr: str) -> Listing:
    """A listing from tmux's answer: a server that is not running is no problem (nothing runs there)."""
    if code == 0:
        return Listing(parse(stdout))
    said = stderr.strip()
    gone = not said or "no server running" in said or "error connecting" in said
    return Listing([], code, said, None if gone else f"tmux: {said.splitlines()[0]}")


class PaneListing:
    """``tmux list-panes`` of ``tmux`` (every pane, or ``session``'s): started at once when ``tmux`` can
    (:class:`LeanTmux`), else when :meth:`result` is asked. Without tmux (``None``): no pane."""

    def __init__(self, tmux: TmuxLike | None, session: str | None = None) -> None:
        self.tmux, self.args = tmux, list_args(session)
        self.started = tmux.start(*self.args) if isinstance(tmux, LeanTmux) else None

    def result(self) -> Listing:
        if self.tmux is None:
            return Listing([])
        try:
            ran = self.started.result() if self.started is not None else self.tmux.run(*self.args, check=False)
        except OSError as exc:
            return Listing([], 127, str(exc), f"tmux: {exc.strerror or exc}")
        return listing_of(ran.returncode, ran.stdout, ran.stderr)


def list_panes(tmux: TmuxLike | None, session: str | None = None) -> Listing:
    """Every pane of ``tmux`` (or of its ``session``), as one listing."""
    return PaneListing(tmux, session).result()


def panes_of(tmux: TmuxLike | None, agent: str) -> list[Pane]:
    """Every pane of ``agent`` on the server, a fork's too (none when no server runs)."""
    return [p for p in list_panes(tmux).panes if p.agent == agent]


# -- tmux on the standard library, for status --line and --json ---------------------------------


def which(program: str) -> str | None:
    """``program`` on ``$PATH`` (shutil.which's answer for a bare name, without importing shutil)."""
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder or os.curdir, program)
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    return None


class Ran:
    """A finished tmux command: its exit status and what it printed (stderr is not kept: /dev/null)."""

    __slots__ = ("returncode", "stderr", "stdout")

    def __init__(self, returncode: int, stdout: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, ""


class Started:
    """A tmux command started and not yet waited for."""

    def __init__(self, argv: list[str]) -> None:
        self.pid, self.read_end = spawn_quietly(argv)

    def result(self) -> Ran:
        out, code = collect(self.pid, self.read_end)
        return Ran(code, out.decode("utf-8", "replace"))


class LeanTmux:
    """A tmux server (``-L SOCKET`` or the default) driven with ``posix_spawn``: no subprocess' import."""

    def __init__(self, binary: str, socket: str | None = None) -> None:
        self.argv = [binary, *(["-L", socket] if socket else [])]

    @classmethod
    def found(cls, socket: str | None) -> LeanTmux | None:
        """The server on ``socket`` when tmux is on ``$PATH``, else None."""
        binary = which("tmux")
        return cls(binary, socket) if binary is not None else None

    def start(self, *args: str) -> Started:
        return Started([*self.argv, *args])

    def run(self, *args: str, check: bool = False) -> Ran:
        return self.start(*args).result()


def run_quietly(argv: Sequence[str]) -> tuple[bytes, int]:
    """Run ``argv`` with stdin and stderr on /dev/null; its stdout and exit status (127: it did not start)."""
    return collect(*spawn_quietly(list(argv)))


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
