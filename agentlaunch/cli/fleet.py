"""`agentlaunch fleet`: every agent, running or not, with its state and where it runs; `--json`, the versioned contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agentlaunch import paths
from agentlaunch.cli.common import AgentsDirOpt, JsonOpt, app, out
from agentlaunch.definitions.names import agent_names
from agentlaunch.errors import AgentlaunchError
from agentlaunch.fleet.contract import fleet_json, ordered
from agentlaunch.fleet.model import Agent, read_fleet
from agentlaunch.live.tmux import SOCKET_ENV, Tmux, TmuxMissing
from agentlaunch.visible import visible

FleetSocketOpt = Annotated[
    str | None,
    typer.Option(
        "--socket", "-L", envvar=SOCKET_ENV, help="The tmux server whose agent panes to read (tmux -L).", show_default=False
    ),
]


def defined(agents_dir: Path | None) -> tuple[list[str], str | None]:
    """The agents the agents directory defines, and what went wrong reading it (None: fine)."""
    folder = paths.agents_dir(agents_dir)
    if not folder.is_dir():
        return [], None
    try:
        return agent_names(folder), None
    except AgentlaunchError as exc:
        return [], f"agents: {exc.message.splitlines()[0]}"


def plain(agent: Agent) -> str:
    """One agent on one line: ``cx ⑂ 2 · waiting · tmux agentlaunch %3 · session 0b7c3a52``."""
    parts = [agent.label, agent.state]
    if agent.pane is not None:
        parts.append(f"tmux {agent.pane.tmux_session} {agent.pane.pane_id}")
    if agent.session_id:
        parts.append(f"session {agent.session_id[:8]}")
    if agent.problem:
        parts.append(agent.problem)
    return visible(" · ".join(parts))


@app.command()
def fleet(as_json: JsonOpt = False, socket: FleetSocketOpt = None, agents_dir: AgentsDirOpt = None) -> None:
    """Every agent: the running sessions, the dead or stopped panes, the worktree setups, the agents defined.

    `--json` prints {"version": 1, "agents": [...], "problems": [...]}: a versioned contract for scripts and
    other hosts (`ssh HOST agentlaunch fleet --json`), its fields documented in docs/fleet.md.

    Example: agentlaunch fleet --json | jq -r '.agents[] | select(.needs_you) | .label'
    """
    try:
        tmux: Tmux | None = Tmux(socket)
    except TmuxMissing:
        tmux = None
    names, problem = defined(agents_dir)
    found = read_fleet(tmux=tmux, names=names)
    if problem is not None:
        found.problems.append(problem)
    if as_json:
        typer.echo(json.dumps(fleet_json(found), indent=2, ensure_ascii=False))
        return
    for agent in ordered(found.agents):
        out.print(plain(agent), markup=False, highlight=False, soft_wrap=True)
    for said in found.problems:
        out.print(visible(said), markup=False, highlight=False, soft_wrap=True)
