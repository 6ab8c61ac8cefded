"""The usage history: `agentlaunch usage` reports over the SQLite store."""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime
from typing import Annotated

import typer
from rich.table import Table

from agentlaunch import paths
from agentlaunch.cli.common import HostOpt, JsonOpt, app, complete_agent, err, out
from agentlaunch.cli.usage_hosts import usage_on_hosts
from agentlaunch.errors import UsageError
from agentlaunch.usage.misses import cache_misses
from agentlaunch.usage.pricing import format_cost
from agentlaunch.usage.records import CallRecord, ReportRow
from agentlaunch.usage.reports import (
    call_record,
    calls_csv,
    daily_chart,
    parse_by,
    parse_since,
    report_csv,
    report_records,
    report_table,
    writes_cell,
)
from agentlaunch.usage.session_ids import resolve_session
from agentlaunch.usage.store import ReportBy, Store
from agentlaunch.visible import for_markup


def _warn_skipped(store: Store) -> None:
    """One warning line on stderr for each malformed row the report left out (never in the JSON or CSV)."""
    for line in store.skipped():
        err.print(f"[yellow]warning:[/] {for_markup(line)}", markup=True, soft_wrap=True)


def _calls_table(session: str, calls: list[CallRecord], misses: list[str | None]) -> Table:
    table = Table(
        title=f"calls of session {for_markup(session)}",
        caption="miss: a call that wrote the cache instead of reading what the call before it had, with the likely cause",
    )
    for header in ("#", "time", "turn", "model", "input", "cache write", "cache read", "output", "cache hit", "cost", "miss"):
        table.add_column(header, justify="right" if header not in ("time", "model", "miss") else "left", no_wrap=header != "miss")
    for i, (call, miss) in enumerate(zip(calls, misses, strict=True), 1):
        hit = call_record(call)["cache_hit_ratio"]
        table.add_row(
            str(i),
            f"{call.at.astimezone():%Y-%m-%d %H:%M:%S}",
            str(call.turn or ""),
            for_markup(call.model or "?"),
            f"{call.usage.input:,}",
            writes_cell(call.usage.cache_write, call.usage.cache_write_1h),
            f"{call.usage.cache_read:,}",
            f"{call.usage.output:,}",
            "-" if hit is None else f"{hit:.0%}",
            format_cost(call.cost_usd),
            for_markup(miss) if miss else "",
        )
    return table


usage_app = typer.Typer()
app.add_typer(usage_app, name="usage")


ByOpt = Annotated[str, typer.Option("--by", help="Group by session, agent, model or day.")]
UsageAgentOpt = Annotated[str | None, typer.Option("--agent", help="Only this agent.", autocompletion=complete_agent)]
UsageSessionOpt = Annotated[str | None, typer.Option("--session", help="Only this session (its id, or a unique start of it).")]
SinceOpt = Annotated[str | None, typer.Option("--since", help="Only calls since: 7d, 12h, 2w, today, or a date (2026-11-01).")]
CallsOpt = Annotated[bool, typer.Option("--calls", help="List every call of --session with its cache figures.")]
ChartOpt = Annotated[
    str | None, typer.Option("--chart", help="Daily chart of 'tokens' or 'cost' (default with --by day: tokens).")
]
CsvOpt = Annotated[bool, typer.Option("--csv", help="CSV on stdout.")]
AllHostsOpt = Annotated[
    bool, typer.Option("--all-hosts", help="This machine's report and each host's of config.yaml, merged, with a host column.")
]


@usage_app.callback(invoke_without_command=True)
def usage(
    ctx: typer.Context,
    by: ByOpt = "day",
    agent: UsageAgentOpt = None,
    session: UsageSessionOpt = None,
    since: SinceOpt = None,
    calls: CallsOpt = False,
    chart: ChartOpt = None,
    as_json: JsonOpt = False,
    as_csv: CsvOpt = False,
    host: HostOpt = None,
    all_hosts: AllHostsOpt = False,
) -> None:
    """What past sessions cost, and whether prompt caching landed.

    Columns: calls, uncached input, cache write, cache read, output, cost,
    cache hit (cache read / all input) and full price (uncached / all input).
    Calls that could not be priced are counted, never shown as $0.

    Example: agentlaunch usage --by agent --since 7d   ·   agentlaunch usage --session ID --calls

    `agentlaunch usage export` sends the calls not yet exported to an OpenTelemetry collector (docs/telemetry.md).
    """
    if ctx.invoked_subcommand is not None:
        return  # `usage export`: its own command
    if as_json and as_csv:
        raise UsageError("use --json or --csv, not both")
    grouping = parse_by(by)
    start = parse_since(since) if since else None
    if host is not None or all_hosts:
        return usage_on_hosts(ctx.params)
    if calls and not session:
        raise UsageError("--calls needs --session ID (list sessions with `agentlaunch sessions`)")
    if calls:
        assert session is not None
        show_calls(session, as_json=as_json, as_csv=as_csv)
        return
    rows, session = read_report(grouping, agent=agent, session=session, since=start)
    if as_json:
        print(json.dumps(report_records(rows, grouping), indent=2))
        return
    if as_csv:
        sys.stdout.write(report_csv(rows, grouping))
        return
    if not rows:
        out.print("no recorded calls" + (" in that period" if start else "") + ": run an agent first (`agentlaunch run demo hi`)")
        return
    out.print(report_table(rows, grouping))
    metric = chart or ("tokens" if grouping == "day" else None)
    if metric:
        if grouping == "day":
            day_rows = rows
        else:
            with Store.open(paths.store_path()) as store:
                day_rows = store.usage_report("day", agent=agent, session=session, since=start)
        out.print(daily_chart(day_rows, metric=metric, since=start))  # type: ignore[arg-type]


def read_report(
    grouping: ReportBy, *, agent: str | None = None, session: str | None = None, since: datetime | None = None
) -> tuple[list[ReportRow], str | None]:
    """The report's rows (`usage`'s, and the MCP server's ``usage_report``), and the session named in full (a unique
    start of its id names it); each malformed row left out is warned about on stderr."""
    with Store.open(paths.store_path()) as store:
        if session is not None:
            session = resolve_session(store, session, "--session")  # a unique prefix names the session
        rows = store.usage_report(grouping, agent=agent, session=session, since=since)
        _warn_skipped(store)
    return rows, session


def show_calls(session: str, *, as_json: bool, as_csv: bool) -> None:
    """``usage --session ID --calls``: every call of the session with its cache figures."""
    with Store.open(paths.store_path()) as store:
        session = resolve_session(store, session, "--session")  # a unique prefix names the session
        records = store.calls_for_session(session)
        if not records and store.get_session(session) is None:
            raise UsageError(f"--session: no session {session!r} in {paths.store_path()}")
        misses = cache_misses(records, store.events_for_session(session))
        _warn_skipped(store)
    if as_json:
        print(json.dumps([call_record(c, m) for c, m in zip(records, misses, strict=True)], indent=2))
    elif as_csv:
        sys.stdout.write(calls_csv(records, misses))
    else:
        out.print(_calls_table(session, records, misses))


@usage_app.command("export")
def export(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only say how many calls wait, and where they would go.")] = False,
    wait: Annotated[
        float,
        typer.Option("--wait", help="Give up after this many seconds of a collector that is down or failing.", min=0.1),
    ] = 60.0,
) -> None:
    """Send every stored call the OTLP receiver has not accepted yet, as metrics and log records (catch-up).

    Where to: the standard OTEL_EXPORTER_OTLP_* variables (endpoint, protocol
    http/protobuf or http/json, headers), OTEL_RESOURCE_ATTRIBUTES and
    OTEL_SERVICE_NAME, whether or not AGENTLAUNCH_OTEL is set. Idempotent: a
    call is marked exported only once the receiver accepted it, so running it
    again sends only what is still missing, and each log record carries the
    call's id (log.record.uid) for a backend to drop a duplicate. Retries
    429, 502, 503 and 504 with backoff; any other refusal (400, 401, 500...)
    is reported with the collector's message and not retried.
    Exit 0 when nothing is left, 1 when some calls could not be sent (they
    stay for the next try), 3 for a bad variable or without the otel extra
    (pip install 'agentlaunch[otel]').

    Example: agentlaunch usage export --dry-run   ·   OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318 agentlaunch usage export
    """
    from agentlaunch.usage.otel.config import read_config
    from agentlaunch.usage.otel.export import Exporter, ExportFailed
    from agentlaunch.usage.otel.queue import ExportQueue
    from agentlaunch.usage.otel.wire import require

    config = read_config()
    with ExportQueue(paths.store_path()) as queue:
        waiting = queue.pending_count()
        if dry_run or not waiting:
            out.print(f"{waiting} call{'s' if waiting != 1 else ''} to export to {config.where}", highlight=False)
            return
        require()  # the otel extra: ExtraMissing says what to install (exit 3), before any call is claimed
        exporter = Exporter(queue, config)
        result = exporter.drain(deadline=time.monotonic() + wait)
        left = queue.pending_count()
    for note in exporter.notes:
        err.print(f"telemetry: {note}", highlight=False, markup=False)
    if left:
        raise ExportFailed(
            f"exported {result.exported} call{'s' if result.exported != 1 else ''}; "
            f"{left} not exported: {result.problem or 'another sender holds them'}",
            hint="run `agentlaunch usage export` again once the collector accepts them",
        )
    out.print(f"exported {result.exported} call{'s' if result.exported != 1 else ''} to {config.where}", highlight=False)
