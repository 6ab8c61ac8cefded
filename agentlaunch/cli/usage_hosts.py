"""`usage --host NAME` (that host's report, by agentlaunch there) and `usage --all-hosts` (every report merged)."""

from __future__ import annotations

import csv
import io
import json
import sys
from typing import Any

import typer

from agentlaunch import paths
from agentlaunch.cli.common import err, out
from agentlaunch.cli.on_host import flag, run_on
from agentlaunch.definitions.settings import load_settings
from agentlaunch.errors import UsageError
from agentlaunch.hosts.usage import host_rows, report_row, start_usage_reads
from agentlaunch.usage.reports import FIELDS, parse_by, parse_since, report_records, report_table
from agentlaunch.usage.store import Store
from agentlaunch.visible import visible


def usage_on_hosts(params: dict[str, Any]) -> None:
    """``usage --host NAME`` or ``--all-hosts``, with the report's other options (``params``: the command's)."""
    host, all_hosts, calls, as_json, as_csv = (params[k] for k in ("host", "all_hosts", "calls", "as_json", "as_csv"))
    options: dict[str, str | None] = {f"--{k}": params[k] for k in ("by", "agent", "session", "since", "chart")}
    given = [word for name, value in options.items() if value is not None for word in (name, value)]
    if host is not None and all_hosts:
        raise UsageError("--host NAME is one host's report, --all-hosts every one: not both")
    if host is not None:
        args = ["usage", *given, *flag(calls, "--calls"), *flag(as_json, "--json"), *flag(as_csv, "--csv")]
        raise typer.Exit(run_on(host, args, what="usage", agents=False, socket=False))
    if calls or options["--session"] is not None:
        raise UsageError("a session's calls are on the one host that ran it: name it with --host NAME")
    if options["--chart"] is not None:
        raise UsageError("--chart draws one host's days: name it with --host NAME, or none for this machine")
    merged(options, as_json=as_json, as_csv=as_csv)


def merged(options: dict[str, str | None], *, as_json: bool, as_csv: bool) -> None:
    """This machine's report and each host's, one row each with its host (None: this machine)."""
    by = parse_by(str(options["--by"]))
    given = [word for name in ("--by", "--agent", "--since") if (value := options[name]) for word in (name, value)]
    reads = start_usage_reads(load_settings().hosts, given)  # the hosts answer while this store is read
    since = parse_since(options["--since"]) if options["--since"] else None
    with Store.open(paths.store_path()) as store:
        local = store.usage_report(by, agent=options["--agent"], since=since)
    remote, problems = host_rows(reads.result(), by)
    records = [{**r, "host": None} for r in report_records(local, by)] + [{**r, "host": h} for h, r in remote]
    for problem in problems:
        err.print(f"warning: {visible(problem)}", markup=False, soft_wrap=True)
    if as_json:
        print(json.dumps(records, indent=2))
        return
    if as_csv:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow([by, *FIELDS, *(["agent"] if by == "session" else []), "host"])
        for record in records:
            writer.writerow(["" if v is None else visible(v) if isinstance(v, str) else v for v in record.values()])
        sys.stdout.write(buffer.getvalue())
        return
    rows = [*local, *(row for _h, r in remote if (row := report_row(r, by)) is not None)]
    hosts = ["local"] * len(local) + [h for h, r in remote if report_row(r, by) is not None]
    if not rows:
        out.print("no recorded calls on any host")
        return
    out.print(report_table(rows, by, hosts=hosts))
