"""`agentlaunch status`: every running agent, as a table, JSON, a live view, or one line."""

from __future__ import annotations

import json
import time
from typing import Annotated

import typer
from rich.live import Live
from rich.table import Table

from agentlaunch.cli.common import JsonOpt, app, complete_agent, err, out
from agentlaunch.errors import UsageError
from agentlaunch.live.status import ASKING, StatusRecord, line_for, read_records, shown_state
from agentlaunch.visible import for_markup


def _n(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) else "–"


def status_table(records: list[StatusRecord]) -> Table:
    table = Table("agent", "state", "provider", "model", "context", "to compaction", "cost", "calls", "pid", "session")
    for r in records:
        d = r.data
        percent = d.get("percent")
        context = _n(d.get("context")) + (f" ({percent:.1f}%)" if isinstance(percent, int | float) else "")
        cells = (
            r.agent,
            shown_state(r.state),
            str(d.get("provider") or ""),
            str(d.get("model") or ""),
            context,
            _n(d.get("to_compaction")),
            str(d.get("cost") or ""),
            _n(d.get("calls")),
            str(d.get("pid") or ""),
            str(d.get("session_id") or ""),
        )
        # A record is anyone's file: no markup, no escapes. A launch that needs a person stands out.
        table.add_row(*(for_markup(cell) for cell in cells), style="bold yellow" if r.state == ASKING else None)
    if not records:
        table.caption = "no agent is running"
    return table


@app.command()
def status(
    as_json: JsonOpt = False,
    watch: Annotated[bool, typer.Option("--watch", "-w", help="Refresh the table until Ctrl-C.")] = False,
    line: Annotated[
        str | None,
        typer.Option(
            "--line",
            help="Print AGENT's one-line status (for tmux status-right or a prompt); nothing when it is not running.",
            show_default=False,
            metavar="AGENT",
            autocompletion=complete_agent,
        ),
    ] = None,
    interval: Annotated[float, typer.Option("--interval", help="Seconds between refreshes with --watch.", min=0.1)] = 1.0,
) -> None:
    """Show every running agent: state, context, distance to compaction, cost.

    Records whose agentlaunch process is gone are shown once as stale, then
    removed. `--line AGENT` prints one line (agent · state · ctx % · tokens to
    compaction · cost) and exits 0, printing nothing when AGENT is not running.

    Example: agentlaunch status --json   ·   tmux set -g status-right '#(agentlaunch status --line demo)'
    """
    if line is not None:
        if as_json or watch:
            raise UsageError("--line prints one line; it does not combine with --json or --watch")
        text = line_for(line)
        if text:
            print(text)
        return
    if watch and as_json:
        raise UsageError("--watch shows a live table; for scripts use --json (and poll)")
    if as_json:
        print(json.dumps([r.as_dict() for r in read_records()], indent=2, ensure_ascii=False))
        return
    if not watch:
        records = read_records()
        if not records:
            err.print(
                "no agent is running: start one with `agentlaunch run AGENT` or `agentlaunch tmux up AGENT...`", soft_wrap=True
            )
            return
        out.print(status_table(records))
        return
    try:
        with Live(status_table(read_records()), console=out.console, auto_refresh=False, transient=False) as live:
            while True:
                time.sleep(interval)  # a refresh period, not a wait for a condition
                live.update(status_table(read_records()), refresh=True)
    except KeyboardInterrupt:
        pass
