"""`agentlaunch stop AGENT` / `restart AGENT` / `fork AGENT`: one agent's life on its own, the rest of the team untouched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentlaunch import paths
from agentlaunch.cli.common import AgentArg, AgentsDirOpt, HostOpt, JsonOpt, TemplatesOpt, app, err
from agentlaunch.cli.on_host import flag, run_on, value
from agentlaunch.cli.tmux import SocketOpt
from agentlaunch.cli.up_report import report_up, restart_said, said_worktrees
from agentlaunch.errors import UsageError
from agentlaunch.fleet.model import FORK_MARK
from agentlaunch.live.fork import confirmed_session, fork_pane, fork_source, main_pane, respawn_fork, start_fork
from agentlaunch.live.known import refuse_unknown
from agentlaunch.live.life import (
    AgentNotRunning,
    AgentPane,
    Stopped,
    chosen_session,
    clear_note,
    live_record,
    own_given,
    stop_agent,
)
from agentlaunch.live.resume import turns_text
from agentlaunch.live.startup_wait import TmuxPanes, wait_started
from agentlaunch.live.tmux import Tmux, TmuxError, UpResult, plan_up, ways_back
from agentlaunch.providers.descriptors import describe
from agentlaunch.usage.session_ids import unique_prefix
from agentlaunch.usage.store import Store
from agentlaunch.visible import for_markup

if TYPE_CHECKING:
    from agentlaunch.definitions.spec import AgentSpec

StopTimeoutOpt = Annotated[
    float, typer.Option("--timeout", help="Seconds to wait for the agent to end.", min=0, metavar="SECONDS")
]
RestartSessionOpt = Annotated[
    str | None,
    typer.Option(
        "--session", help="Resume this session of AGENT (its id or a unique start) instead of the pane's own.", show_default=False
    ),
]
StopSessionOpt = Annotated[
    str | None,
    typer.Option(
        "--session", help="The session to stop (its id or unique start) when AGENT runs more than one.", show_default=False
    ),
]
ForkSessionOpt = Annotated[
    str | None,
    typer.Option(
        "--session",
        help="Fork this session of AGENT (its id or unique start) instead of the one its pane runs.",
        show_default=False,
    ),
]
RestartWaitOpt = Annotated[
    float, typer.Option("--wait", help="Seconds to wait for the agent to start (0: do not check).", min=0, metavar="SECONDS")
]


@app.command()
def stop(
    agent: AgentArg,
    socket: SocketOpt = None,
    timeout: StopTimeoutOpt = 20.0,
    session: StopSessionOpt = None,
    as_json: JsonOpt = False,
    agents_dir: AgentsDirOpt = None,
    host: HostOpt = None,
) -> None:
    """End AGENT's provider CLI cleanly: its conversation stays resumable, its tmux pane stays with the reason.

    agentlaunch ends the CLI as `tmux down` does (SIGTERM to the agent's launch, which records the
    session and exits 143); a `tmux up` pane is kept, dead, titled "stopped (agentlaunch stop)".
    `agentlaunch restart AGENT` brings it back in the same session; `send` to it says it was stopped.

    Exit codes: 0 stopped, 1 it did not end within --timeout, 2 it runs several sessions (a fork beside
    it, say) and --session names none, 3 no agent of that name (listed as `run` does), 7 it is not running;
    with --host NAME (on that host of config.yaml, over ssh) also 11, 12 and 13 (docs/scripting.md).

    Example: agentlaunch stop reviewer && agentlaunch restart reviewer
    """
    if host is not None:
        args = ["stop", agent, *value(timeout, "--timeout"), *value(session, "--session"), *flag(as_json, "--json")]
        raise typer.Exit(run_on(host, args, what="stop"))
    done = stop_one(agent, socket=socket, timeout=timeout, session=session, agents_dir=agents_dir)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "agent": done.agent,
                    "session_id": done.session_id,
                    "ended": done.ended,
                    "pane": done.pane,
                    "tmux_session": done.tmux_session,
                }
            )
        )
    elif done.ended:
        where = f" (pane {done.pane} kept)" if done.pane else ""
        sid = f"; session {done.session_id[:8]} resumable" if done.session_id else ""
        err.print(
            for_markup(f"stopped {agent}{where}{sid}: agentlaunch restart {agent} brings it back"),
            markup=True,
            highlight=False,
            soft_wrap=True,
        )
    if not done.ended:
        err.print(f"[bold red]error:[/] {for_markup(agent)} did not end within {timeout:g}s", markup=True, highlight=False)
        raise typer.Exit(1)


@app.command()
def restart(
    agent: AgentArg,
    session: RestartSessionOpt = None,
    socket: SocketOpt = None,
    wait: RestartWaitOpt = 30.0,
    agents_dir: AgentsDirOpt = None,
    templates_dir: TemplatesOpt = None,
    host: HostOpt = None,
) -> None:
    """Bring AGENT back in its tmux pane, in the session it ran (or --session ID), its conversation kept.

    A running agent is stopped first (as `agentlaunch stop`), so an edited definition takes effect
    in the same conversation. The pane is found on the tmux server (--socket); an agent with no
    pane there is started by `agentlaunch tmux up --resume AGENT` instead. --session ID of a fork
    (`agentlaunch fork`) brings the fork back in its own window. An agent whose worktree was removed
    (merged: the deck's M) comes back in a new worktree of the same repository, made from its
    current HEAD: in its session when its CLI can resume it there, else in a new one; it says which.

    Exit codes: 0 running again, 1 it failed to start or has no pane, 2 a session that is not
    AGENT's (or never had a turn), or whose folder is gone and was no worktree (`agentlaunch tmux up
    AGENT --fresh` starts a new session), 3 definition error or no agent of that name, 127 tmux or its CLI missing.

    Example: agentlaunch restart reviewer   ·   agentlaunch restart reviewer --session 1a2b3c4d
    """
    if host is not None:
        raise typer.Exit(run_on(host, ["restart", agent, *value(session, "--session"), "--wait", f"{wait:g}"], what="restart"))
    if restart_agent(agent, session=session, socket=socket, wait=wait, agents_dir=agents_dir, templates_dir=templates_dir):
        raise typer.Exit(1)


def stop_one(
    agent: str, *, socket: str | None, timeout: float, session: str | None = None, agents_dir: Path | None = None
) -> Stopped:
    """`stop`'s work (the MCP server's ``stop_agent`` too): end ``agent``'s CLI cleanly; AgentNotRunning when it does
    not run, or run's definition error for a name that is no agent."""
    tmux = _tmux_or_none(socket)
    try:
        return stop_agent(tmux, agent, timeout=timeout, session=session)
    except AgentNotRunning:
        refuse_unknown(agent, agents_dir)  # a typo is named as one, as `run` does
        raise


def restart_agent(
    agent: str,
    *,
    session: str | None,
    socket: str | None,
    wait: float,
    agents_dir: Path | None = None,
    templates_dir: Path | None = None,
) -> bool:
    """`restart`'s work (the MCP server's ``restart_agent`` too), reported on stderr; True when it failed to start."""
    tmux = Tmux(socket)
    refuse_unknown(agent, agents_dir)
    with Store.open(paths.store_path()) as store:
        given = own_given(store, agent, session, "restart resumes", "resume") if session else None  # refused first
        place = (fork_pane(tmux, agent, given.session_id) if given else None) or _pane_of(tmux, agent)
        row = given or chosen_session(store, agent, None, place)
    # Where it comes back, before anything is stopped: a folder gone (and no worktree of its) is refused here.
    ways = ways_back([row]) if row is not None and not place.pane.fork else {}
    running = place.pane.session_id if not place.pane.dead else (row.session_id if row else None)
    if running is not None and live_record(agent, running or None) is not None:
        stop_agent(tmux, agent, timeout=20.0, session=running or None)
    folder = paths.agents_dir(agents_dir)
    said = restart_said(agent, row, fresh=False, way=ways.get(agent))
    err.print(for_markup(said), markup=True, highlight=False, soft_wrap=True)
    if place.pane.fork and row is not None:
        result = UpResult(place.session, restarted=[agent])
        result.panes[agent] = respawn_fork(tmux, place, row, agents_dir=folder, templates_dir=templates_dir)
    else:
        result = plan_up(
            tmux,
            [agent],
            session=place.session,
            layout="windows",
            agents_dir=folder,
            templates_dir=templates_dir,
            ways=ways,
            fresh=row is None,
            cwd=ways[agent].start if ways else None,
        ).start_all()
    outcomes = wait_started(TmuxPanes(tmux, place.session), result.panes, timeout=wait) if wait > 0 else []
    clear_note(agent)
    if report_up(result, outcomes, place.session, socket):
        return True
    said_worktrees(result.ways, result.panes)  # none failed
    return False


@app.command()
def fork(
    agent: AgentArg,
    session: ForkSessionOpt = None,
    socket: SocketOpt = None,
    wait: RestartWaitOpt = 30.0,
    agents_dir: AgentsDirOpt = None,
    templates_dir: TemplatesOpt = None,
    host: HostOpt = None,
) -> None:
    """Start a new session from AGENT's conversation, in a new tmux window beside it; AGENT keeps running.

    The fork starts from the session AGENT's pane runs (or --session ID, one of AGENT's own), in a
    window named AGENT-fork of the same tmux session: Claude Code resumes it with --fork-session,
    Codex with `codex fork`. Gemini CLI 0.61 has no fork: refused (exit 2). The fork keeps the
    conversation's recorded system prompt on Claude Code (an edited soul does not reach it).
    Reach it with `agentlaunch send AGENT --session ID`; `tmux down` ends it with the rest.

    Exit codes: 0 the fork runs, 1 it failed to start, 2 no such agent, a session that is not AGENT's
    or never had a turn, or a provider that cannot fork, 3 definition error, 127 tmux or its CLI missing;
    with --host NAME (on that host of config.yaml, over ssh) also 11, 12 and 13 (docs/scripting.md).

    Example: agentlaunch fork reviewer   ·   agentlaunch fork reviewer --session 1a2b3c4d
    """
    if host is not None:
        raise typer.Exit(run_on(host, ["fork", agent, *value(session, "--session"), "--wait", f"{wait:g}"], what="fork"))
    folder = paths.agents_dir(agents_dir)
    spec = _known_agent(folder, agent)
    describe(spec.provider).refuse_fork(agent)
    tmux = Tmux(socket)
    place = main_pane(tmux, agent)
    with Store.open(paths.store_path()) as store:
        row = fork_source(store, agent, session, place)
    made = start_fork(tmux, agent, row, session=place.session if place else None, agents_dir=folder, templates_dir=templates_dir)
    said = f"{agent}: forking session {row.session_id[:8]} ({turns_text(row)}) in window {made.window} (pane {made.pane_id})"
    err.print(for_markup(f"{said}; {agent} keeps running"), markup=True, highlight=False, soft_wrap=True)
    result = UpResult(made.session, started=[agent], panes={agent: made.pane_id})
    outcomes = wait_started(TmuxPanes(tmux, made.session), result.panes, timeout=wait) if wait > 0 else []
    failed = report_up(result, outcomes, made.session, socket)
    if failed:
        raise typer.Exit(1)
    with Store.open(paths.store_path()) as store:
        new = confirmed_session(tmux, made.pane_id, store, timeout=max(wait, 5.0))
        short = unique_prefix(store, new) if new else ""
    if new:
        err.print(
            f"the fork is session {new}: agentlaunch send {agent} --session {short} PROMPT", highlight=False, soft_wrap=True
        )
    else:
        err.print(
            f"the fork's session id is not known yet: agentlaunch status lists it (as {agent} {FORK_MARK} N)",
            highlight=False,
            soft_wrap=True,
        )


def _known_agent(folder: Path, agent: str) -> AgentSpec:
    """``agent``'s definition; an agent that has none is a usage error (exit 2), as for any unknown name."""
    from agentlaunch.definitions.names import agent_names, not_found
    from agentlaunch.definitions.spec import load_agent

    if agent not in (agent_names(folder) if folder.is_dir() else []):
        raise UsageError(not_found(folder, agent))  # `run`'s words; a usage error here, as fork documents
    return load_agent(folder, agent, paths.state_dir())


def _pane_of(tmux: Tmux, agent: str) -> AgentPane:
    """``agent``'s own pane on this server (not a fork's; a dead one first): restart happens in place."""
    place = main_pane(tmux, agent)
    if place is None:
        raise TmuxError(
            f"{agent} has no pane on this tmux server" + (f" (socket {tmux.socket})" if tmux.socket else ""),
            hint=f"agentlaunch tmux up --resume {agent} starts it with its latest session",
        )
    return place


def _tmux_or_none(socket: str | None) -> Tmux | None:
    """The tmux server, or None when tmux is not installed (an agent in a plain terminal is stopped all the same)."""
    from agentlaunch.live.tmux import TmuxMissing

    try:
        return Tmux(socket)
    except TmuxMissing:
        return None
