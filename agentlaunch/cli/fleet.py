"""`agentlaunch fleet`: every agent, running or not, with its state and where it runs; `--json`, the versioned contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from agentlaunch import paths
from agentlaunch.cli.common import AgentsDirOpt, JsonOpt, LocalOpt, app, out
from agentlaunch.definitions.names import agent_names
from agentlaunch.definitions.settings import load_settings
from agentlaunch.errors import AgentlaunchError, UsageError
from agentlaunch.fleet.contract import fleet_json
from agentlaunch.fleet.model import read_fleet
from agentlaunch.hosts.fleet import UNREACHABLE, fleet_agents, start_fleet_reads
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


def plain(agent: dict[str, Any]) -> str:
    """One agent of the contract on one line: ``cx ⑂ 2 · waiting · tmux agentlaunch %3 · session 0b7c3a52``, and
    ``· on HOST`` for another host's."""
    parts = [str(agent.get("label")), str(agent.get("state")).replace("-", " ")]
    tmux = agent.get("tmux")
    if isinstance(tmux, dict):
        parts.append(f"tmux {tmux.get('session')} {tmux.get('pane')}")
    if isinstance(agent.get("session_id"), str):
        parts.append(f"session {agent['session_id'][:8]}")
    if agent.get("problem") and agent.get("state") != UNREACHABLE:
        parts.append(str(agent["problem"]))
    if agent.get("host"):
        parts.append(str(agent["problem"]) if agent.get("state") == UNREACHABLE else f"on {agent['host']}")
    return visible(" · ".join(parts))


WatchOpt = Annotated[
    bool,
    typer.Option(
        "--watch",
        help="With --json: every agent, then one JSON line per change as it happens, until Ctrl-C (docs/fleet.md).",
    ),
]
EndWithStdinOpt = Annotated[bool, typer.Option("--end-with-stdin", hidden=True)]  # a host's watch: ssh's channel closed


@app.command()
def fleet(
    as_json: JsonOpt = False,
    socket: FleetSocketOpt = None,
    agents_dir: AgentsDirOpt = None,
    local: LocalOpt = False,
    watch: WatchOpt = False,
    end_with_stdin: EndWithStdinOpt = False,
) -> None:
    """Every agent: the running sessions, the dead or stopped panes, the worktree setups, the agents defined; then
    each host's of config.yaml (read over ssh, in parallel; a host not read is one row, "host unreachable: WHY").

    `--json` prints {"version": 1, "agents": [...], "problems": [...]}: a versioned contract for scripts and
    other hosts (`ssh HOST agentlaunch fleet --json --local`), its fields documented in docs/fleet.md.

    `--watch --json` prints every agent and then each change, one JSON line each, as it happens (docs/fleet.md,
    "The stream of changes"); each host's over one long-lived ssh, started again when it drops.

    Example: agentlaunch fleet --json | jq -r '.agents[] | select(.needs_you) | .label'
    """
    hosts = () if local else load_settings().hosts
    if watch:
        if not as_json:
            raise UsageError("fleet --watch gives JSON lines: add --json (status --watch is the table that refreshes)")
        from agentlaunch.cli.fleet_watch import watch_fleet

        watch_fleet(socket, lambda: defined(agents_dir), hosts, end_with_stdin=end_with_stdin)
        return
    reads = start_fleet_reads(hosts) if hosts else None  # the hosts answer while this machine's fleet is read
    try:
        tmux: Tmux | None = Tmux(socket)
    except TmuxMissing:
        tmux = None
    names, problem = defined(agents_dir)
    found = read_fleet(tmux=tmux, names=names)
    if problem is not None:
        found.problems.append(problem)
    data = fleet_json(found)
    if reads is not None:
        agents, problems = fleet_agents(reads.result())
        data["agents"] += agents
        data["problems"] += problems
    if as_json:
        typer.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    for agent in data["agents"]:
        out.print(plain(agent), markup=False, highlight=False, soft_wrap=True)
    for said in data["problems"]:
        out.print(visible(said), markup=False, highlight=False, soft_wrap=True)
