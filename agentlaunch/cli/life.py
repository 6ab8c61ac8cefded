"""`agentlaunch stop AGENT` / `restart AGENT`: one agent's life on its own, the rest of the team untouched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agentlaunch import paths
from agentlaunch.cli.common import AgentArg, AgentsDirOpt, JsonOpt, TemplatesOpt, app, err
from agentlaunch.cli.tmux import SocketOpt, report_up, restart_said
from agentlaunch.live.life import AgentPane, agent_panes, chosen_session, clear_note, live_record, stop_agent
from agentlaunch.live.startup_wait import TmuxPanes, wait_started
from agentlaunch.live.tmux import Tmux, TmuxError, resume_args, up
from agentlaunch.usage.store import Store
from agentlaunch.visible import for_markup

StopTimeoutOpt = Annotated[
    float, typer.Option("--timeout", help="Seconds to wait for the agent to end.", min=0, metavar="SECONDS")
]
RestartSessionOpt = Annotated[
    str | None,
    typer.Option("--session", help="Resume this session of AGENT (its id or a unique start) instead of the pane's own.",
                 show_default=False),
]  # fmt: skip
RestartWaitOpt = Annotated[
    float, typer.Option("--wait", help="Seconds to wait for the agent to start (0: do not check).", min=0, metavar="SECONDS")
]


@app.command()
def stop(agent: AgentArg, socket: SocketOpt = None, timeout: StopTimeoutOpt = 20.0, as_json: JsonOpt = False) -> None:
    """End AGENT's provider CLI cleanly: its conversation stays resumable, its tmux pane stays with the reason.

    agentlaunch ends the CLI as `tmux down` does (SIGTERM to the agent's launch, which records the
    session and exits 143); a `tmux up` pane is kept, dead, titled "stopped (agentlaunch stop)".
    `agentlaunch restart AGENT` brings it back in the same session; `send` to it says it was stopped.

    Exit codes: 0 stopped, 1 it did not end within --timeout, 2 it runs several sessions, 7 it is not running.

    Example: agentlaunch stop reviewer && agentlaunch restart reviewer
    """
    tmux = _tmux_or_none(socket)
    done = stop_agent(tmux, agent, timeout=timeout)
    if as_json:
        typer.echo(json.dumps({"agent": done.agent, "session_id": done.session_id, "ended": done.ended,
                               "pane": done.pane, "tmux_session": done.tmux_session}))  # fmt: skip
    elif done.ended:
        where = f" (pane {done.pane} kept)" if done.pane else ""
        sid = f"; session {done.session_id[:8]} resumable" if done.session_id else ""
        err.print(for_markup(f"stopped {agent}{where}{sid}: agentlaunch restart {agent} brings it back"),
                  markup=True, highlight=False, soft_wrap=True)  # fmt: skip
    if not done.ended:
        err.print(f"[bold red]error:[/] {for_markup(agent)} did not end within {timeout:g}s", markup=True, highlight=False)
        raise typer.Exit(1)


@app.command()
def restart(
    agent: AgentArg, session: RestartSessionOpt = None, socket: SocketOpt = None, wait: RestartWaitOpt = 30.0,
    agents_dir: AgentsDirOpt = None, templates_dir: TemplatesOpt = None,
) -> None:  # fmt: skip
    """Bring AGENT back in its tmux pane, in the session it ran (or --session ID), its conversation kept.

    A running agent is stopped first (as `agentlaunch stop`), so an edited definition takes effect
    in the same conversation. The pane is found on the tmux server (--socket); an agent with no
    pane there is started by `agentlaunch tmux up --resume AGENT` instead.

    Exit codes: 0 running again, 1 it failed to start or has no pane, 2 a session that is not
    AGENT's (or never had a turn), 3 definition error, 127 tmux or its CLI missing.

    Example: agentlaunch restart reviewer   ·   agentlaunch restart reviewer --session 1a2b3c4d
    """
    tmux = Tmux(socket)
    place = _pane_of(tmux, agent)
    with Store.open(paths.store_path()) as store:
        row = chosen_session(store, agent, session, place)  # a bad --session is refused before anything is stopped
    if live_record(agent) is not None:
        stop_agent(tmux, agent, timeout=20.0)
    folder = paths.agents_dir(agents_dir)
    result = up(
        tmux, [agent], session=place.session, layout="windows", agents_dir=folder, templates_dir=templates_dir,
        extra_args={agent: resume_args(row)} if row else {}, working_dirs={agent: Path(row.working_dir)} if row else {},
        fresh=row is None, cwd=Path(row.working_dir) if row else None,
    )  # fmt: skip
    err.print(for_markup(restart_said(agent, row, fresh=False)), markup=True, highlight=False, soft_wrap=True)
    outcomes = wait_started(TmuxPanes(tmux, place.session), result.panes, timeout=wait) if wait > 0 else []
    clear_note(agent)
    if report_up(result, outcomes, place.session, socket):
        raise typer.Exit(1)


def _pane_of(tmux: Tmux, agent: str) -> AgentPane:
    """``agent``'s pane on this server (a dead one first): restart happens in place."""
    panes = sorted(agent_panes(tmux, agent), key=lambda p: not p.pane.dead)
    if not panes:
        raise TmuxError(
            f"{agent} has no pane on this tmux server" + (f" (socket {tmux.socket})" if tmux.socket else ""),
            hint=f"agentlaunch tmux up --resume {agent} starts it with its latest session",
        )
    return panes[0]


def _tmux_or_none(socket: str | None) -> Tmux | None:
    """The tmux server, or None when tmux is not installed (an agent in a plain terminal is stopped all the same)."""
    from agentlaunch.live.tmux import TmuxMissing

    try:
        return Tmux(socket)
    except TmuxMissing:
        return None
