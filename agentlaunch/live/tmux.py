"""Agents in tmux: one window (or one tiled pane) per agent, found again by a pane option, ended cleanly.

Every tmux call is an argument list. Two tmux habits matter for safety:

- a command given as *several* arguments is executed directly (execvp), not
  through ``sh -c``; the agent command always has several, so no shell ever
  parses a name;
- tmux splits its own command line on any argument that *ends* in ``;``
  (``\\;`` escapes it), and expands formats (``#(cmd)`` runs a shell command)
  in window and session names. Session names are therefore limited to
  letters, digits, ``_`` and ``-``, agent names are checked by the definition
  loader (letters, digits, ``.``, ``_``, ``-``), :func:`literal` doubles ``#``
  where tmux expands formats (``-c`` directory, names, titles; not ``-e`` nor
  the command's arguments), and :func:`tmux_arg` escapes a trailing ``;`` in
  every argument.

Each agent's pane carries the pane option ``@agentlaunch_agent``: that, not
the window name (which a person may change), is how ``up`` knows what runs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agentlaunch import paths
from agentlaunch.errors import AgentlaunchError, ExitCode, UsageError
from agentlaunch.fleet.panes import AGENT_OPTION, FORK_OPTION, SOCKET_ENV, TILED_OPTION, Pane, list_panes
from agentlaunch.live.pane_session import own_session
from agentlaunch.live.status import LINE_OPTION, PANE_TITLE_ENV
from agentlaunch.live.tmux_border import BORDER_FORMAT

if TYPE_CHECKING:
    from agentlaunch.live.comeback import WayBack
    from agentlaunch.live.preflight import ReadyAgent
    from agentlaunch.usage.records import SessionRow

DeadPane = Pane  # a dead agent pane as dead_agent_panes lists it (the name status and status_table import)
__all__ = ["AGENT_OPTION", "BORDER_FORMAT", "FORK_OPTION", "SOCKET_ENV", "TILED_OPTION", "DeadPane", "Pane"]

PLACE_ENV = "AGENTLAUNCH_TMUX_PLACE"  # where a pane is, for its launch's session record (agentlaunch.usage.recorder)
DEFAULT_SESSION = "agentlaunch"
TILED_WINDOW = "agents"
SAFE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # matched whole (fullmatch): "$" would let a trailing newline in
LAYOUTS = ("windows", "tiled")


# Variables a pane needs from the caller's environment (a running server has its own).
PASSED_ENV_PREFIXES = ("AGENTLAUNCH_",)
PASSED_ENV = ("PATH", "NO_COLOR")


class TmuxError(AgentlaunchError):
    """A tmux command failed, or the session asked for does not exist."""

    exit_code = ExitCode.TURN_FAILED


class TmuxMissing(AgentlaunchError):
    """tmux is not installed: the same code as a missing provider CLI (a missing program)."""

    exit_code = ExitCode.PROVIDER_MISSING


def check_name(value: str, what: str) -> str:
    """Refuse a session or socket name tmux would change or misread (``:``, ``.``, ``#``, ``;``, spaces, quotes)."""
    if not SAFE_NAME.fullmatch(value):
        raise UsageError(
            f"{what} name {value!r} is not allowed: use 1 to 64 letters, digits, '_' and '-' "
            "(tmux changes ':' and '.', expands '#', and splits commands on ';')"
        )
    return value


def literal(value: str) -> str:
    """A value for an argument tmux expands as a format (``-c``, ``-n``, ``-T``): ``#`` doubled, so ``#(cmd)`` never runs."""
    return value.replace("#", "##")


def tmux_arg(value: str) -> str:
    """Escape a trailing ``;``, which tmux would otherwise take as a command separator."""
    return value[:-1] + "\\;" if value.endswith(";") else value


@dataclass
class UpResult:
    session: str
    created_session: bool = False
    started: list[str] = field(default_factory=list)
    restarted: list[str] = field(default_factory=list)
    running: list[str] = field(default_factory=list)
    panes: dict[str, str] = field(default_factory=dict)  # agent -> pane id, for every agent started or restarted now
    # agent -> the session a restarted pane resumed (None: it had none with a turn, or --fresh: started fresh)
    resumed: dict[str, SessionRow | None] = field(default_factory=dict)
    ways: dict[str, WayBack] = field(default_factory=dict)  # agent -> how its session came back (where, resumed or not)


class Tmux:
    """One tmux server (the default one, or ``tmux -L SOCKET``), driven with argument lists."""

    def __init__(self, socket: str | None = None, binary: str | None = None) -> None:
        if socket is not None:
            check_name(socket, "tmux socket")
        found = binary or shutil.which("tmux")
        if not found:
            raise TmuxMissing(
                "tmux is not installed (or not on PATH)",
                hint="install it with your system's package manager, e.g. `apt-get install tmux` or `brew install tmux`",
            )
        self.socket = socket
        self.argv = [found] + (["-L", socket] if socket else [])

    def command(self, *args: str) -> list[str]:
        return self.argv + [tmux_arg(a) for a in args]

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(self.command(*args), capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
        if check and proc.returncode != 0:
            raise TmuxError(f"tmux {args[0]} failed: {proc.stderr.strip() or f'exit {proc.returncode}'}")
        return proc

    def sequence(self, commands: Sequence[Sequence[str]]) -> None:
        """Several tmux commands in one call (one round trip), separated by tmux's own ``;``."""
        argv: list[str] = []
        for i, cmd in enumerate(commands):
            if i:
                argv.append(";")
            argv += [tmux_arg(a) for a in cmd]
        proc = subprocess.run(self.argv + argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
        if proc.returncode != 0:
            raise TmuxError(f"tmux failed: {proc.stderr.strip() or f'exit {proc.returncode}'}")

    def has_session(self, name: str) -> bool:
        return self.run("has-session", "-t", f"={name}", check=False).returncode == 0

    def panes(self, session: str) -> list[Pane]:
        """Every pane of ``session`` (the fleet's listing); a :class:`TmuxError` when tmux cannot list them."""
        listing = list_panes(self, session)
        if listing.code != 0:
            raise TmuxError(f"tmux list-panes failed: {listing.error or f'exit {listing.code}'}")
        return listing.panes

    def socket_path(self, session: str) -> str:
        return self.run("display-message", "-p", "-t", f"={session}", "#{socket_path}").stdout.strip()


def dead_agent_panes(tmux: Tmux) -> list[DeadPane]:
    """Every agent pane on this server whose agent died; none when no server runs."""
    return list_panes(tmux).dead


def agent_command(agent: str, agents_dir: Path, templates_dir: Path | None = None, *, worktree: bool = False) -> list[str]:
    """The argv a pane runs: this Python's agentlaunch, so a virtualenv or a test's checkout is the one used."""
    argv = [sys.executable, "-m", "agentlaunch", "run", agent, "--agents-dir", str(agents_dir)]
    if worktree:
        argv.append("--worktree")
    if templates_dir is not None:
        argv += ["--templates-dir", str(templates_dir.expanduser().resolve())]
    return argv


def pane_env(environ: Mapping[str, str]) -> list[str]:
    """``-e NAME=VALUE`` arguments: what a pane needs from the caller (an already running server has its own)."""
    args: list[str] = []
    for name in sorted(environ):
        if name == PLACE_ENV:
            continue  # the caller's own pane's place (up run from inside a pane): each pane gets its own
        if name in PASSED_ENV or name.startswith(PASSED_ENV_PREFIXES):
            args += ["-e", f"{name}={environ[name]}"]
    args += ["-e", f"{PANE_TITLE_ENV}=1"]
    return args


def validate_agents(
    agents: Sequence[str],
    agents_dir: Path,
    cwd: Path | None = None,
    *,
    worktree: bool = False,
    working_dirs: Mapping[str, Path] | None = None,
    worktree_agents: Sequence[str] = (),
) -> list[ReadyAgent]:
    """Check every agent can start (definition, CLI, working directory or worktree); nothing is created when one cannot.

    ``working_dirs`` names an agent's directory outright (a resumed session's), else agent.yaml and ``cwd`` decide;
    ``worktree_agents`` run in their worktree of that directory's repository whatever their agent.yaml says.
    """
    from agentlaunch.live.preflight import check_agents, default_working_dir  # loads definitions: not for `status`

    state_dir = paths.state_dir()
    default = default_working_dir(cwd or Path.cwd(), state_dir)
    given = working_dirs or {}
    return check_agents(
        agents,
        agents_dir,
        state_dir,
        lambda spec: given.get(spec.name) or default(spec),
        worktree=worktree,
        worktree_agents=worktree_agents,
    )


def place_env(session: str, window: str, layout: str) -> list[str]:
    """Where the pane is, for its launch to remember in the session record (``tmux up --resume`` reads it)."""
    return ["-e", f"{PLACE_ENV}={session}\t{window}\t{layout}"]


def _decorate(tmux: Tmux, pane_id: str, window_id: str, agent: str, *, tiled: bool) -> None:
    """Tag the pane with its agent and show its title (the live status line) in the pane border."""
    commands = [
        ["set-option", "-p", "-t", pane_id, AGENT_OPTION, agent],
        ["set-option", "-p", "-t", pane_id, LINE_OPTION, agent],  # the border's line until the agent's status writes it
        ["select-pane", "-t", pane_id, "-T", literal(agent)],
        ["set-option", "-w", "-t", window_id, "pane-border-status", "top"],
        ["set-option", "-w", "-t", window_id, "pane-border-format", BORDER_FORMAT],
        # A pane whose agentlaunch fails stays, so its error can be read; a clean exit closes it.
        ["set-option", "-w", "-t", window_id, "remain-on-exit", "failed"],
    ]
    if tiled:
        commands.append(["set-option", "-w", "-t", window_id, TILED_OPTION, "1"])
    tmux.sequence(commands)


class TeamUp:
    """The agents ``up`` starts in one tmux session, in order (dead panes first), each made by :meth:`start`.

    What the session already has is read once, by :func:`plan_up`; :meth:`start` then makes (or restarts)
    one agent's pane, so a caller can start them all at once or a few at a time.
    """

    def __init__(
        self,
        tmux: Tmux,
        result: UpResult,
        layout: str,
        *,
        exists: bool,
        panes: Sequence[Pane],
        argv: Callable[[str], list[str]],
        env_args: list[str],
        directory: str,
    ) -> None:
        self.tmux, self.result, self.layout, self.exists, self.argv = tmux, result, layout, exists, argv
        self.env_args, self.directory = env_args, directory
        self.dead = {p.agent: p for p in panes if p.agent and p.dead and not p.fork}  # restarted in place (a fork's is not)
        self.tiled_window = next((p.window_id for p in panes if p.tiled), None)
        self.pending: list[str] = []  # what plan_up found to start, dead panes first

    def start(self, name: str) -> str:
        """Make (or restart, in place) ``name``'s pane; its id."""
        session, pane = self.result.session, self.dead.get(name)
        if pane is not None:  # its agentlaunch failed and the pane was kept: start it again in place
            here = place_env(session, pane.window_name, "tiled" if pane.tiled else "windows")
            self.tmux.run(
                "respawn-pane", "-k", "-t", pane.pane_id, "-c", self.directory, *self.env_args, *here, "--", *self.argv(name)
            )
            self.result.restarted.append(name)
            self.result.panes[name] = pane.pane_id
            return pane.pane_id
        plain_name = TILED_WINDOW if self.layout == "tiled" else name
        pane_args = [*self.env_args, *place_env(session, plain_name, self.layout), "-P", "-F", "#{pane_id}\t#{window_id}"]
        if not self.exists:
            how = ["new-session", "-d", "-s", session, "-n", literal(plain_name), "-x", "220", "-y", "60"]
            self.exists = self.result.created_session = True
        elif self.layout == "tiled" and self.tiled_window is not None:
            how = ["split-window", "-d", "-t", self.tiled_window]
        else:
            how = ["new-window", "-d", "-t", f"={session}:", "-n", literal(plain_name)]
        created = self.tmux.run(*how, "-c", self.directory, *pane_args, "--", *self.argv(name))
        pane_id, window_id = created.stdout.strip().split("\t")
        _decorate(self.tmux, pane_id, window_id, name, tiled=self.layout == "tiled")
        if self.layout == "tiled":
            self.tiled_window = window_id
            self.tmux.run("select-layout", "-t", window_id, "tiled")
        self.result.started.append(name)
        self.result.panes[name] = pane_id
        return pane_id

    def start_all(self) -> UpResult:
        """Start every pending agent at once (``restart``, a single agent); ``tmux up`` throttles its starts instead.

        A dead pane is started again in its own session, the one its launch named on the pane, unless ``plan_up`` was
        told ``fresh`` or given ``extra_args`` for it: restarting never drops a conversation.
        """
        for name in self.pending:
            self.start(name)
        return self.result


def plan_up(
    tmux: Tmux,
    agents: Sequence[str],
    *,
    session: str,
    layout: str,
    agents_dir: Path,
    templates_dir: Path | None = None,
    cwd: Path | None = None,
    environ: Mapping[str, str] | None = None,
    worktree: bool = False,
    ways: Mapping[str, WayBack] | None = None,
    fresh: bool = False,
) -> TeamUp:
    """What ``up`` starts in ``session``: every agent checked, nothing created yet; :meth:`TeamUp.start` or
    :meth:`TeamUp.start_all` creates the panes.

    ``ways`` are the sessions some agents resume (:func:`agentlaunch.live.comeback.way_back`: ``-r ID
    --working-dir DIR`` added to their `run`, the directory checked before anything is created); a dead
    pane of another agent resumes the session it ran, unless ``fresh``.
    """
    check_name(session, "tmux session")
    if layout not in LAYOUTS:
        raise UsageError(f"--layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    agents_dir = agents_dir.expanduser().resolve()
    exists = tmux.has_session(session)
    panes = tmux.panes(session) if exists else []
    by_agent = {p.agent: p for p in panes if p.agent and not p.fork}  # a fork's pane is not the agent's own
    dead = [by_agent[a] for a in dict.fromkeys(agents) if a in by_agent and by_agent[a].dead]
    resumed = {} if fresh else pane_sessions([p for p in dead if p.agent not in (ways or {})], session)
    every = {**ways_back([row for row in resumed.values() if row is not None]), **(ways or {})}
    dirs = {a: way.start for a, way in every.items()}
    trees = [a for a, way in every.items() if way.worktree is not None]
    ready = validate_agents(agents, agents_dir, cwd, worktree=worktree, working_dirs=dirs, worktree_agents=trees)
    names = [r.name for r in ready]

    def argv(name: str) -> list[str]:
        extra = every[name].args if name in every else []
        return [*agent_command(name, agents_dir, templates_dir, worktree=worktree and name not in trees), *extra]

    plan = TeamUp(
        tmux,
        UpResult(session),
        layout,
        exists=exists,
        panes=panes,
        argv=argv,
        env_args=pane_env(os.environ if environ is None else environ),
        directory=literal(str((cwd or Path.cwd()).resolve())),
    )
    plan.result.running = [n for n in names if n in by_agent and n not in plan.dead]
    plan.pending = [n for n in names if n in plan.dead] + [n for n in names if n not in by_agent]
    plan.result.resumed = {n: resumed.get(n) for n in names if n in plan.dead and (n in resumed or fresh)}
    plan.result.ways = {n: every[n] for n in names if n in every}
    return plan


def ways_back(rows: Sequence[SessionRow]) -> dict[str, WayBack]:
    """agent -> how each row's session is resumed (in its folder, or a new worktree when its own was removed)."""
    if not rows:
        return {}
    from agentlaunch.live.comeback import way_back  # reads the worktree list and config.yaml: only for a resume

    return {row.agent: way_back(row) for row in rows}


def pane_sessions(panes: Sequence[Pane], session: str) -> dict[str, SessionRow | None]:
    """agent -> the session each dead pane ran (None: none with a turn, so it starts fresh), read from the store."""
    if not panes:
        return {}
    from agentlaunch.usage.store import Store

    with Store.open(paths.store_path()) as store:
        return {p.agent: own_session(store, p.agent, p.session_id, session, p.window_name) for p in panes}


def attach(tmux: Tmux, session: str, environ: Mapping[str, str] | None = None) -> int | None:
    """Attach to ``session`` (switch to it from inside the same tmux); None when that would nest tmux."""
    environ = os.environ if environ is None else environ
    inside = environ.get("TMUX", "")
    if inside:
        if inside.split(",")[0] != tmux.socket_path(session):
            return None  # another tmux server: attaching would nest one tmux in another
        return subprocess.call(tmux.command("switch-client", "-t", f"={session}"))
    return subprocess.call(tmux.command("attach-session", "-t", f"={session}"))
