"""`agentlaunch status`: every running agent, as a table, JSON, a live view, or one line."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.live import Live
from rich.table import Table

from agentlaunch.cli.common import JsonOpt, app, complete_agent, err, out
from agentlaunch.errors import UsageError
from agentlaunch.live.status import StatusRecord, line_for, read_records, shown_state, waited
from agentlaunch.live.tmux import SOCKET_ENV, DeadPane, Tmux, TmuxMissing, dead_agent_panes
from agentlaunch.usage.cache_clock import warmth_text
from agentlaunch.usage.plan_limits import limits_text
from agentlaunch.visible import for_markup

STATE_STYLES = {"asking": "bold white on red", "stalled": "bold white on red", "waiting": "yellow", "retrying": "magenta"}


def _n(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) else "–"


def cache_cell(record: dict[str, Any], now: datetime) -> str:
    """``warm 4m12s``, or ``cold: next turn ~$0.42`` (what it writes again), or empty before the first call."""
    text = warmth_text(record, now)
    if text is None:
        return ""
    cache = record["cache"]
    cold = cache.get("next_turn_cold_usd")
    if text == "cache cold" and isinstance(cold, int | float):
        return f"cold: next turn ~${cold:.4f}"
    return text.removeprefix("cache ")


def dead_panes(socket: str | None) -> list[DeadPane]:
    """The agents whose tmux pane died (kept open with their error), on the server ``tmux up`` uses; none without tmux."""
    try:
        return dead_agent_panes(Tmux(socket))
    except TmuxMissing:
        return []


def dead_record(pane: DeadPane) -> dict[str, object]:
    """A dead agent as ``status --json`` shows it beside the running ones."""
    return {
        "agent": pane.agent, "state": "dead", "exit_status": pane.exit_status, "tmux_session": pane.session,
        "pane": pane.pane_id, "stale": False, "dead": True,
    }  # fmt: skip


def dead_line(pane: DeadPane) -> str:
    code = f" (exit {pane.exit_status})" if pane.exit_status is not None else ""
    return f"{pane.agent} · dead{code} · tmux {pane.session} {pane.pane_id}"


def status_table(records: list[StatusRecord], dead: list[DeadPane] | None = None) -> Table:
    now = datetime.now(UTC)
    table = Table("agent", "state", "provider", "model", "context", "to compaction", "cost", "plan limits", "cache", "calls",
                  "pid", "session")  # fmt: skip
    for r in records:
        d = r.data
        percent = d.get("percent")
        context = _n(d.get("context")) + (f" ({percent:.1f}%)" if isinstance(percent, int | float) else "")
        cells = (
            r.agent,
            shown_state(r.state, r.data) + (f" {how_long}" if (how_long := waited(r.as_dict(), now)) else ""),
            str(d.get("provider") or ""),
            str(d.get("model") or ""),
            context,
            _n(d.get("to_compaction")),
            str(d.get("cost") or ""),
            limits_text(d, now) or "",
            cache_cell(d, now),
            _n(d.get("calls")),
            str(d.get("pid") or ""),
            str(d.get("session_id") or ""),
        )
        shown = [for_markup(cell) for cell in cells]  # a record is anyone's file: no markup, no escapes
        if r.state in STATE_STYLES:  # the agent needs the person: asking, stalled (red), waiting/done (yellow) stand out
            shown[1] = f"[{STATE_STYLES[r.state]}]{shown[1]}[/]"
        table.add_row(*shown)
    for pane in dead or []:
        code = f" (exit {pane.exit_status})" if pane.exit_status is not None else ""
        where = for_markup(f"tmux {pane.session} {pane.pane_id}")
        table.add_row(for_markup(pane.agent), f"[bold red]dead{code}[/]", *[""] * 9, where)
    if dead:
        table.caption = "dead: its tmux pane is kept with its error; `agentlaunch tmux up AGENT` starts it again"
    if not records and not dead:
        table.caption = "no agent is running"
    return table


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
    as_json: JsonOpt = False, watch: WatchOpt = False, line: StatusLineOpt = None, interval: IntervalOpt = 1.0,
    socket: StatusSocketOpt = None,
) -> None:  # fmt: skip
    """Show every running agent: state, context, distance to compaction, cost, the plan's limits.

    Records whose agentlaunch process is gone are shown once as stale, then
    removed. `--line AGENT` prints one line (agent · state · ctx % · tokens to
    compaction · cost) and exits 0, printing nothing when AGENT is not running.

    Example: agentlaunch status --json   ·   tmux set -g status-right '#(agentlaunch status --line demo)'
    """
    if line is not None:
        if as_json or watch:
            raise UsageError("--line prints one line; it does not combine with --json or --watch")
        print_line(line, socket)
    elif watch and as_json:
        raise UsageError("--watch shows a live table; for scripts use --json (and poll)")
    elif as_json:
        rows = [r.as_dict() for r in read_records()] + [dead_record(p) for p in dead_panes(socket)]
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    elif watch:
        watch_table(interval, socket)
    else:
        records = read_records()
        dead = dead_panes(socket)
        if not records and not dead:
            err.print(
                "no agent is running: start one with `agentlaunch run AGENT` or `agentlaunch tmux up AGENT...`", soft_wrap=True
            )
            return
        out.print(status_table(records, dead))


def print_line(agent: str, socket: str | None) -> None:
    """``status --line AGENT``: its one line, or its dead pane's; nothing when it is not running."""
    text = line_for(agent)
    if not text:  # not running: maybe it died in a tmux pane
        text = next((dead_line(p) for p in dead_panes(socket) if p.agent == agent), "")
    if text:
        print(text)


def watch_table(interval: float, socket: str | None) -> None:
    """``status --watch``: the table, refreshed every ``interval`` seconds until Ctrl-C."""
    try:
        table = status_table(read_records(), dead_panes(socket))
        with Live(table, console=out.console, auto_refresh=False, transient=False) as live:
            while True:
                time.sleep(interval)  # a refresh period, not a wait for a condition
                live.update(status_table(read_records(), dead_panes(socket)), refresh=True)
    except KeyboardInterrupt:
        pass
