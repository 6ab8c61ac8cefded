"""``agentlaunch usage --all-hosts``: this machine's report and each host's (``usage --json`` there, every host at
once over its connection), merged into one with a host for each row.

A host's rows come back as its ``usage --json`` gives them and are made :class:`ReportRow` again for the table; a
host that cannot be read is said on stderr and left out (:class:`~agentlaunch.hosts.fleet.Reads` gives its why).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from agentlaunch.hosts import ssh
from agentlaunch.hosts.fleet import HostRead, Reads
from agentlaunch.usage.records import ReportRow

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentlaunch.hosts.config import Host

COUNTS = ("calls", "input", "cache_write", "cache_read", "output", "reasoning", "unpriced_calls", "cache_write_1h")


def usage_check(data: Any) -> str | None:
    return None if isinstance(data, list) and all(isinstance(r, dict) for r in data) else "its usage --json is not a list"


def start_usage_reads(hosts: Sequence[Host], options: Sequence[str]) -> Reads:
    """``agentlaunch usage OPTIONS --json`` on every host, started now."""
    return Reads(hosts, lambda h: ssh.agentlaunch_args(h, ["usage", *options, "--json"]), usage_check)


def report_row(record: dict[str, Any], by: str) -> ReportRow | None:
    """A row of a host's ``usage --json`` as the report's row (None when it is not one)."""
    try:
        counts = {name: int(record.get(name) or 0) for name in COUNTS}
        cost, saved = record.get("cost_usd"), record.get("saved_usd")
        return ReportRow(
            key=str(record.get(by) or ""),
            **counts,
            cost_usd=float(cost) if isinstance(cost, int | float) else None,
            first_at=datetime.fromisoformat(str(record["first_at"])),
            last_at=datetime.fromisoformat(str(record["last_at"])),
            saved_usd=float(saved) if isinstance(saved, int | float) else None,
            agent=str(record["agent"]) if isinstance(record.get("agent"), str) else None,
        )
    except (KeyError, TypeError, ValueError):
        return None


def host_rows(reads: Sequence[HostRead], by: str) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """Each host's records (host name, record), and the problems of the hosts not read."""
    rows = [(read.host.name, record) for read in reads if read.problem is None for record in read.data]
    return rows, [read.problem for read in reads if read.problem is not None]
