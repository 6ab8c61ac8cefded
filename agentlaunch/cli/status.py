"""`agentlaunch status`: every running agent, as a table, JSON, a live view, or one line."""

from __future__ import annotations

import time
from typing import Annotated

import typer
from rich.live import Live

from agentlaunch.cli.common import JsonOpt, LocalOpt, app, complete_agent, err, out
from agentlaunch.definitions.settings import load_settings
from agentlaunch.errors import UsageError
from agentlaunch.fleet.panes import Pane, list_panes
from agentlaunch.fleet.records import StatusRecord, read_records
from agentlaunch.fleet.setups import setups
from agentlaunch.hosts.config import Host
from agentlaunch.hosts.fleet import start_status_reads, status_rows
from agentlaunch.live.status_read import agent_line, json_rows, json_text
from agentlaunch.live.status_table import FittedStatus, status_view
from agentlaunch.live.tmux import SOCKET_ENV, Tmux, TmuxMissing


def dead_panes(socket: str | None) -> list[Pane]:
    """The agents whose tmux pane died (kept open with their error), on the server ``tmux up`` uses; none without tmux."""
    try:
        return list_panes(Tmux(socket)).dead
    except TmuxMissing:
        return []


def status_table(
    records: list[StatusRecord], dead: list[Pane] | None = None, remote: list[dict[str, object]] | None = None
) -> FittedStatus:
    """The table of running agents, dead panes and unfinished worktree setups, fitted to the width it is drawn at;
    with ``remote`` (the hosts' rows) a host column."""
    return status_view(records, dead or [], setups(), remote=remote)


def hosts_of(local: bool) -> tuple[Host, ...]:
    """The hosts whose rows ``status`` shows too: config.yaml's, none with ``--local``."""
    return () if local else load_settings().hosts


def read_all(
    socket: str | None, hosts: tuple[Host, ...]
) -> tuple[list[StatusRecord], list[Pane], list[dict[str, object]] | None]:
    """This machine's records and dead panes, and the hosts' rows (None without hosts), the hosts read meanwhile."""
    reads = start_status_reads(hosts) if hosts else None
    records, dead = read_records(), dead_panes(socket)
    return records, dead, status_rows(reads.result()) if reads is not None else None


WatchOpt = Annotated[bool, typer.Option("--watch", "-w", help="Refresh the table until Ctrl-C.")]
StatusLineOpt = Annotated[
    str | None,
    typer.Option(
        "--line",
        help="Print AGENT's one-line status (for tmux status-right or a prompt); nothing when it is not running.",
        show_default=False,
        metavar="AGENT",
        autocompletion=complete_agent,
    ),
]
IntervalOpt = Annotated[float, typer.Option("--interval", help="Seconds between refreshes with --watch.", min=0.1)]
StatusSocketOpt = Annotated[
    str | None,
    typer.Option(
        "--socket",
        "-L",
        envvar=SOCKET_ENV,
        help="The tmux server whose dead agent panes to show (tmux -L).",
        show_default=False,
    ),
]


@app.command()
def status(
    as_json: JsonOpt = False,
    watch: WatchOpt = False,
    line: StatusLineOpt = None,
    interval: IntervalOpt = 1.0,
    socket: StatusSocketOpt = None,
    local: LocalOpt = False,
) -> None:
    """Show every running agent: state, context, distance to compaction, cost, the plan's limits.

    Records whose agentlaunch process is gone are shown once as stale, then
    removed. `--line AGENT` prints one line (agent · state · ctx % · tokens to
    compaction · cost) and exits 0, printing nothing when AGENT is not running.

    With hosts in config.yaml (docs/hosts.md) the table has a host column and --json rows a "host" (null here),
    each host read over ssh at once; one that cannot be read is one row "host unreachable: WHY". --local: this
    machine's agents only. --line is always this machine's.

    Example: agentlaunch status --json   ·   tmux set -g status-right '#(agentlaunch status --line demo)'
    """
    if line is not None:
        if as_json or watch:
            raise UsageError("--line prints one line; it does not combine with --json or --watch")
        print_line(line, socket)
    elif watch and as_json:
        raise UsageError("--watch shows a live table; for scripts use --json (and poll)")
    elif as_json:
        records, dead, remote = read_all(socket, hosts_of(local))
        print(json_text(json_rows(records, dead) + (remote or [])))  # as agentlaunch.live.status_fast prints it
    elif watch:
        watch_table(interval, socket, hosts_of(local))
    else:
        records, dead, remote = read_all(socket, hosts_of(local))
        if not records and not dead and not setups() and not remote:
            err.print(
                "no agent is running: start one with `agentlaunch run AGENT` or `agentlaunch tmux up AGENT...`", soft_wrap=True
            )
            return
        out.print(status_table(records, dead, remote))


def print_line(agent: str, socket: str | None) -> None:
    """``status --line AGENT``: its one line, or its dead pane's; nothing when it is not running."""
    text = agent_line(agent, lambda: dead_panes(socket))  # as agentlaunch.live.status_fast prints it
    if text:
        print(text)


def watch_table(interval: float, socket: str | None, hosts: tuple[Host, ...]) -> None:
    """``status --watch``: the table, refreshed every ``interval`` seconds until Ctrl-C (the hosts read each time)."""
    try:
        table = status_table(*read_all(socket, hosts))
        with Live(table, console=out.console, auto_refresh=False, transient=False) as live:
            while True:
                time.sleep(interval)  # a refresh period, not a wait for a condition
                live.update(status_table(*read_all(socket, hosts)), refresh=True)
    except KeyboardInterrupt:
        pass
