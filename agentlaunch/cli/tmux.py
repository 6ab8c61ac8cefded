"""`agentlaunch tmux up|down`: several agents side by side in one tmux session."""

from __future__ import annotations

import shlex
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentlaunch import datarecord, paths
from agentlaunch.cli.common import AgentsDirOpt, HostOpt, TemplatesOpt, app, complete_agent, err
from agentlaunch.cli.up_report import report_up, restart_said, said_worktrees
from agentlaunch.definitions.settings import DEFAULT_MAX_STARTING, THROTTLE_EXPECTED, load_settings
from agentlaunch.errors import UsageError
from agentlaunch.live.life import clear_note
from agentlaunch.live.resume import Comeback, plan_comebacks, plan_places, ways_of
from agentlaunch.live.startup_wait import AgentStart, TmuxPanes
from agentlaunch.live.team_start import Pending, start_team
from agentlaunch.live.tmux import DEFAULT_SESSION, SOCKET_ENV, TeamUp, Tmux, attach, validate_agents
from agentlaunch.live.tmux_down import down
from agentlaunch.usage.store import Store
from agentlaunch.visible import for_markup

if TYPE_CHECKING:
    from agentlaunch.cli.up_hosts import HostsUp

tmux_app = typer.Typer(
    help="Run agents in tmux: one window (or tiled pane) per agent, each pane's border showing its live status.",
    no_args_is_help=True,
)
app.add_typer(tmux_app, name="tmux")

SessionOpt = Annotated[
    str,
    typer.Option(
        "--session", "-s", envvar="AGENTLAUNCH_TMUX_SESSION", help="The tmux session's name (letters, digits, _ and -)."
    ),
]
SocketOpt = Annotated[
    str | None,
    typer.Option(
        "--socket",
        "-L",
        envvar=SOCKET_ENV,
        help="Use a separate tmux server with this socket name (tmux -L).",
        show_default=False,
    ),
]


UpAgentsArg = Annotated[
    list[str],
    typer.Argument(
        help="The agents to start; AGENT@HOST starts one on that host of config.yaml (a team on several hosts).",
        autocompletion=complete_agent,
        show_default=False,
    ),
]
UpSessionOpt = Annotated[
    str | None,
    typer.Option(
        "--session",
        "-s",
        envvar="AGENTLAUNCH_TMUX_SESSION",
        show_default=False,
        help=f"The tmux session's name (letters, digits, _ and -; default {DEFAULT_SESSION}, or with --resume "
        "the one each agent ran in).",
    ),
]
LayoutOpt = Annotated[
    str | None,
    typer.Option(
        "--layout", help="windows (default): one window per agent; tiled: one pane each in one window.", show_default=False
    ),
]
AttachOpt = Annotated[
    bool | None,
    typer.Option("--attach/--no-attach", help="Attach afterwards (default: when run from a terminal).", show_default=False),
]
UpWaitOpt = Annotated[
    float,
    typer.Option("--wait", help="Seconds to wait for each new agent to start (0: do not check).", min=0, metavar="SECONDS"),
]
UpWorktreeOpt = Annotated[
    bool, typer.Option("--worktree", help="Run each agent in its own git worktree (branch agentlaunch/AGENT).")
]
UpResumeOpt = Annotated[
    bool, typer.Option("--resume", help="Bring each agent back with its latest session, in the tmux session it ran in.")
]


def throttle_value(value: str) -> int:
    """``--max-starting``'s value: a whole number from 1, else a usage error (exit 2) saying what is expected."""
    number = int(value) if value.strip().lstrip("+-").isdigit() else None
    if number is None or number < 1:
        raise typer.BadParameter(f"{THROTTLE_EXPECTED} (got {value!r})")
    return number


MaxStartingOpt = Annotated[
    int | None,
    typer.Option(
        "--max-starting",
        parser=throttle_value,
        metavar="N",
        show_default=False,
        help=f"Start at most N agents' CLIs at a time, each next one when one reports that it is up (default: "
        f"max_starting in config.yaml, else {DEFAULT_MAX_STARTING}; a number at least the team's size starts all at once).",
    ),
]
UpFreshOpt = Annotated[
    bool,
    typer.Option(
        "--fresh",
        help="Start a dead or stopped pane in a new session (by default it resumes the session it ran, its conversation kept).",
    ),
]


@tmux_app.command("up")
def tmux_up(
    agents: UpAgentsArg,
    session: UpSessionOpt = None,
    layout: LayoutOpt = None,
    attach_: AttachOpt = None,
    socket: SocketOpt = None,
    wait: UpWaitOpt = 30.0,
    worktree: UpWorktreeOpt = False,
    resume: UpResumeOpt = False,
    fresh: UpFreshOpt = False,
    max_starting: MaxStartingOpt = None,
    agents_dir: AgentsDirOpt = None,
    templates_dir: TemplatesOpt = None,
    host: HostOpt = None,
) -> None:
    """Start each AGENT in the tmux session (created when missing), running `agentlaunch run AGENT`.

    Idempotent: agents already running there are left alone, missing ones
    are added, a dead one (failed, or ended by `agentlaunch stop`) is
    started again in its pane, in the session it ran (its conversation kept;
    --fresh for a new one). Before anything is
    created every agent is checked (its definition, its CLI on PATH, its
    working directory). At most --max-starting agents (3) start at a time:
    the next one starts when one reports that it is up, is asking (its CLI
    waits on its own screen) or failed. `up` waits (up to --wait seconds
    per agent) until each new agent is really running or its pane died, and
    prints one line per agent. A failed agent's pane stays open with its
    error. With --resume (after a reboot, or `tmux down`), each agent gets its latest
    session that had a turn, in its working directory and its tmux session
    and layout; an agent without one starts fresh. A session whose worktree
    was removed (merged) comes back in a new worktree of the same repository,
    resumed when its CLI can resume it there, else in a new session, said
    either way. Exit codes: 0 every agent runs, 1 an agent failed to start or
    a tmux command failed, 2 bad name or throttle, or a session whose folder
    is gone (and was no worktree): --fresh starts a new one, 3 definition
    error, 127 tmux or a provider CLI missing. --host NAME runs `agentlaunch tmux up` on that host of
    config.yaml over ssh (never attached; its agents directory and tmux server): also 11, 12, 13. AGENT@HOST
    starts that agent on HOST so, every host at once: a team on several hosts in one command.

    Example: agentlaunch tmux up reviewer planner --layout tiled   ·   agentlaunch tmux up --resume reviewer planner   ·
    agentlaunch tmux up planner cx@devbox rv@build
    """
    if fresh and resume:
        raise UsageError("--fresh and --resume contradict each other: --resume resumes, --fresh starts new sessions")
    switches = (worktree, resume, fresh)
    if host is not None:
        if any("@" in agent for agent in agents):
            raise UsageError("--host starts every agent on one host, AGENT@HOST names each one's: use one of them")
        raise typer.Exit(up_on(host, agents, session, layout, wait, switches, max_starting))
    raise typer.Exit(up_team(agents, switches, session, layout, socket, wait, max_starting, attach_, agents_dir, templates_dir))


def up_team(
    agents: list[str],
    switches: tuple[bool, bool, bool],
    session: str | None,
    layout: str | None,
    socket: str | None,
    wait: float,
    max_starting: int | None,
    attach_: bool | None,
    agents_dir: Path | None,
    templates_dir: Path | None,
) -> int:
    """`tmux up`'s agents started here, and each AGENT@HOST's on its host meanwhile; the exit status."""
    worktree, resume, fresh = switches
    hosts: HostsUp | None = None
    if any("@" in agent for agent in agents):  # a team on several hosts: each host's agents started there meanwhile
        from agentlaunch.cli.up_hosts import first_failed, team_on_hosts

        agents, hosts = team_on_hosts(
            agents, lambda h, names: up_on(h, names, session, layout, wait, switches, max_starting, label=True)
        )
        if not agents:
            return first_failed(hosts.result())
    tmux = Tmux(socket)
    kept = bring_up(
        tmux,
        agents,
        session=session,
        layout=layout,
        socket=socket,
        wait=wait,
        worktree=worktree,
        resume=resume,
        fresh=fresh,
        max_starting=max_starting,
        agents_dir=agents_dir,
        templates_dir=templates_dir,
    )
    if hosts is not None:  # never attached then: the team is on several hosts
        return next((c for c in [attach_after_up(tmux, kept, False, socket), *hosts.result()] if c), 0)
    return attach_after_up(tmux, kept, attach_, socket)


def attach_after_up(tmux: Tmux, kept: BroughtUp, attach_: bool | None, socket: str | None) -> int:
    """Attach to the first tmux session `up` used (by default only on a terminal), or say how; the exit code."""
    failed, first = kept.failed, kept.session
    should_attach = attach_ if attach_ is not None else sys.stdin.isatty() and sys.stdout.isatty()
    if not should_attach or failed:  # attaching would hide what failed
        hint = ["tmux"] + (["-L", socket] if socket else []) + ["attach", "-t", first]
        err.print(f"[dim]attach with: {' '.join(hint)}[/]", markup=True, highlight=False)
        return 1 if failed else 0
    return attach_or_say(tmux, first, socket)


class BroughtUp:
    """What `tmux up` did: each agent's start (``outcomes``), whether one failed, the first tmux session used."""

    def __init__(self, outcomes: list[AgentStart], failed: bool, session: str, running: list[str]) -> None:
        self.outcomes, self.failed, self.session, self.running = outcomes, failed, session, running


def bring_up(
    tmux: Tmux,
    agents: list[str],
    *,
    session: str | None,
    layout: str | None,
    socket: str | None,
    wait: float,
    worktree: bool = False,
    resume: bool = False,
    fresh: bool = False,
    max_starting: int | None = None,
    agents_dir: Path | None = None,
    templates_dir: Path | None = None,
) -> BroughtUp:
    """`tmux up`'s work (the MCP server's ``start_agent`` too): check every agent, place it, start what is missing,
    wait for each to come up (``wait`` seconds) and report each on stderr; agents already running are left alone."""
    throttle = max_starting or load_settings().max_starting or DEFAULT_MAX_STARTING  # a bad config.yaml: refused now
    folder = paths.agents_dir(agents_dir)
    groups = up_groups(agents, folder, session=session, layout=layout, resume=resume, worktree=worktree)
    plans = plan_places(tmux, groups, agents_dir=folder, templates_dir=templates_dir, worktree=worktree, fresh=fresh)
    outcomes = start_plans(tmux, plans, wait=wait, max_starting=throttle, fresh=fresh)
    failed = report_plans(plans, outcomes, socket)
    running = [name for plan in plans for name in plan.result.running]
    return BroughtUp(outcomes, failed, next(iter(groups))[0], running)


def up_on(
    host: str,
    agents: list[str],
    session: str | None,
    layout: str | None,
    wait: float,
    switches: tuple[bool, bool, bool],
    max_starting: int | None,
    *,
    label: bool = False,
) -> int:
    """``tmux up --host``: `agentlaunch tmux up` on the host, never attached (its exit status); how to attach there.
    ``label``: its lines begin with the host's name (a team on several hosts at once)."""
    from agentlaunch.cli.on_host import flag, host_named, run_on, value

    worktree, resume, fresh = switches
    args = ["tmux", "up", *agents, "--no-attach", *value(session, "--session"), *value(layout, "--layout")]
    args += ["--wait", f"{wait:g}", *flag(worktree, "--worktree"), *flag(resume, "--resume"), *flag(fresh, "--fresh")]
    code = run_on(host, [*args, *value(max_starting, "--max-starting")], what="tmux up", label=label)
    where = host_named(host)
    attach = ["tmux", *(["-L", where.socket] if where.socket else []), "attach", "-t", session or DEFAULT_SESSION]
    err.print(f"on {where.name}: ssh -t {shlex.join([where.ssh, *attach])}", markup=False, highlight=False, soft_wrap=True)
    return code


def report_plans(plans: list[TeamUp], outcomes: list[AgentStart], socket: str | None) -> bool:
    """Each tmux session's report (what `stop` noted of an agent started again cleared first); True if any failed."""
    failed = False
    for plan in plans:
        for agent in (*plan.result.started, *plan.result.restarted):
            clear_note(agent)  # running again: what `stop` left is no longer what happened to it
        mine = [o for o in outcomes if o.agent in plan.result.panes]
        failed = report_up(plan.result, mine, plan.result.session, socket) or failed
        said_worktrees(plan.result.ways, {o.agent for o in mine if o.started})
    return failed


def start_plans(tmux: Tmux, plans: list[TeamUp], *, wait: float, max_starting: int, fresh: bool) -> list[AgentStart]:
    """Start every planned agent, at most ``max_starting`` at a time (all at once with --wait 0), and watch them."""
    for plan in plans:
        for agent, row in plan.result.resumed.items():
            said = restart_said(agent, row, fresh=fresh, way=plan.result.ways.get(agent))
            err.print(for_markup(said), markup=True, highlight=False, soft_wrap=True)
    pending = [Pending(agent, partial(plan.start, agent)) for plan in plans for agent in plan.pending]
    if wait > 0:
        return start_team(TmuxPanes(tmux), pending, max_starting=max_starting, timeout=wait, say=progress)
    if len(pending) > max_starting:
        progress(
            f"--wait 0: all {len(pending)} started at once (the throttle of {max_starting} waits for each agent "
            "to report that it is up, which --wait 0 does not check)"
        )
    return [AgentStart(p.agent, p.launch(), True, "started (not checked: --wait 0)") for p in pending]


def progress(line: str) -> None:
    err.print(f"[dim]{for_markup(line)}[/]", markup=True, highlight=False, soft_wrap=True)


def up_groups(
    agents: list[str], folder: Path, *, session: str | None, layout: str | None, resume: bool, worktree: bool
) -> dict[tuple[str, str], list[Comeback]]:
    """(tmux session, layout) -> the agents started there, with what their `run` gets (--resume: where they ran)."""
    groups: dict[tuple[str, str], list[Comeback]] = {}
    if not resume:
        place = (DEFAULT_SESSION if session is None else session, layout or "windows")
        groups[place] = [Comeback(a, *place, None) for a in agents]
        return groups
    from agentlaunch.live.comeback import way_back  # the worktree list and config.yaml: read for a resume only

    with Store.open(paths.store_path()) as store:
        plans = plan_comebacks(store, agents, session=session, layout=layout)
    plans = [datarecord.replace(p, way=way_back(p.row)) if p.row is not None else p for p in plans]  # a folder gone: refused now
    ways = ways_of(plans)
    # Every agent, whichever tmux session it goes to, is checked before anything is created.
    validate_agents(
        [p.agent for p in plans],
        folder.expanduser().resolve(),
        worktree=worktree,
        working_dirs={a: w.start for a, w in ways.items()},
        worktree_agents=[a for a, w in ways.items() if w.worktree is not None],
    )
    for plan in plans:
        err.print(for_markup(plan.said()), markup=True, highlight=False, soft_wrap=True)
        groups.setdefault((plan.session, plan.layout), []).append(plan)
    return groups


def attach_or_say(tmux: Tmux, session: str, socket: str | None) -> int:
    """Attach to ``session``; inside another tmux server, say how to instead (0)."""
    code = attach(tmux, session)
    if code is None:
        err.print(
            "[yellow]not attaching:[/] this terminal is inside another tmux server; "
            f"detach first, or run: tmux -L {socket} attach -t {session}",
            markup=True,
            highlight=False,
        )
        code = 0
    return code


@tmux_app.command("down")
def tmux_down(
    session: Annotated[str, typer.Argument(help="The tmux session to end.", envvar="AGENTLAUNCH_TMUX_SESSION")] = DEFAULT_SESSION,
    socket: SocketOpt = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for the agents to end.", min=0)] = 20.0,
) -> None:
    """End every agent in the session cleanly (SIGTERM; their sessions stay resumable), then kill the session.

    Prints the command that brings them back (`agentlaunch tmux up --resume
    AGENT...`), leaving out agents whose session had no turn yet.

    Exit codes: 0 done, 1 no such session or an agent did not end in time,
    2 bad name, 127 tmux missing.

    Example: agentlaunch tmux down agentlaunch
    """
    result = down(Tmux(socket), session, timeout=timeout)
    if result.ended:
        err.print(f"ended {', '.join(result.ended)}", highlight=False)
        with Store.open(paths.store_path()) as store:
            rows = {agent: store.get_session(sid) for agent, sid in result.sessions.items()}
        worth = [a for a in result.ended if (row := rows.get(a)) is not None and row.turns > 0]
        if fresh := [a for a in result.ended if a not in worth]:
            err.print(f"nothing to resume for {', '.join(fresh)} (no turn yet)", highlight=False)
        if worth:
            again = ["agentlaunch", "tmux", "up", "--resume", *worth] + (["--socket", socket] if socket else [])
            err.print(f"resume them with: {' '.join(again)}", highlight=False, soft_wrap=True)
    err.print(f"killed tmux session {session}", highlight=False)
    if result.still_running:
        err.print(
            f"[bold red]error:[/] still running after {timeout:g}s (ended by tmux's SIGHUP): {', '.join(result.still_running)}",
            markup=True,
            highlight=False,
        )
        raise typer.Exit(1)
