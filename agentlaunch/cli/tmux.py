"""`agentlaunch tmux up|down`: several agents side by side in one tmux session."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from agentlaunch import paths
from agentlaunch.cli.common import AgentsDirOpt, TemplatesOpt, app, complete_agent, err
from agentlaunch.live.tmux import DEFAULT_SESSION, SOCKET_ENV, Tmux, attach, down, up

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


@tmux_app.command("up")
def tmux_up(
    agents: Annotated[list[str], typer.Argument(help="The agents to start.", autocompletion=complete_agent, show_default=False)],
    session: SessionOpt = DEFAULT_SESSION,
    layout: Annotated[
        str, typer.Option("--layout", help="windows: one window per agent; tiled: one pane each in one window.")
    ] = "windows",
    attach_: Annotated[
        bool | None,
        typer.Option("--attach/--no-attach", help="Attach afterwards (default: when run from a terminal).", show_default=False),
    ] = None,
    socket: SocketOpt = None,
    agents_dir: AgentsDirOpt = None,
    templates_dir: TemplatesOpt = None,
) -> None:
    """Start each AGENT in the tmux session (created when missing), running `agentlaunch run AGENT`.

    Idempotent: agents already running there are left alone, missing ones
    are added. Every agent is validated before anything is created. Exit
    codes: 0 done, 1 a tmux command failed, 2 bad name, 3 definition error,
    127 tmux missing.

    Example: agentlaunch tmux up reviewer planner --layout tiled
    """
    tmux = Tmux(socket)
    folder = paths.agents_dir(agents_dir)
    result = up(tmux, agents, session=session, layout=layout, agents_dir=folder, templates_dir=templates_dir)
    parts = []
    if result.started:
        parts.append("started " + ", ".join(result.started))
    if result.restarted:
        parts.append("restarted " + ", ".join(result.restarted))
    if result.running:
        parts.append("already running " + ", ".join(result.running))
    where = f"tmux session {session}" + (f" (socket {socket})" if socket else "")
    err.print(f"{where}: {'; '.join(parts)}", highlight=False, soft_wrap=True)
    should_attach = attach_ if attach_ is not None else sys.stdin.isatty() and sys.stdout.isatty()
    if not should_attach:
        hint = ["tmux"] + (["-L", socket] if socket else []) + ["attach", "-t", session]
        err.print(f"[dim]attach with: {' '.join(hint)}[/]", markup=True, highlight=False)
        return
    code = attach(tmux, session)
    if code is None:
        err.print(
            "[yellow]not attaching:[/] this terminal is inside another tmux server; "
            f"detach first, or run: tmux -L {socket} attach -t {session}",
            markup=True,
            highlight=False,
        )
        return
    raise typer.Exit(code)


@tmux_app.command("down")
def tmux_down(
    session: Annotated[str, typer.Argument(help="The tmux session to end.", envvar="AGENTLAUNCH_TMUX_SESSION")] = DEFAULT_SESSION,
    socket: SocketOpt = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for the agents to end.", min=0)] = 20.0,
) -> None:
    """End every agent in the session cleanly (SIGTERM; their sessions stay resumable), then kill the session.

    Exit codes: 0 done, 1 no such session or an agent did not end in time,
    2 bad name, 127 tmux missing.

    Example: agentlaunch tmux down agentlaunch
    """
    result = down(Tmux(socket), session, timeout=timeout)
    if result.ended:
        err.print(f"ended {', '.join(result.ended)} (resume with `agentlaunch run AGENT -c`)", highlight=False)
    err.print(f"killed tmux session {session}", highlight=False)
    if result.still_running:
        err.print(
            f"[bold red]error:[/] still running after {timeout:g}s (ended by tmux's SIGHUP): {', '.join(result.still_running)}",
            markup=True,
            highlight=False,
        )
        raise typer.Exit(1)
