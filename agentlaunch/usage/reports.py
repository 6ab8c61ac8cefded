"""Usage reports as a person or a script wants them: table, JSON, CSV, daily chart.

Pure functions over :class:`agentlaunch.usage.records.ReportRow` lists (and
:class:`~agentlaunch.usage.records.CallRecord` lists for ``--calls``), plus the
parsers for ``--by`` and ``--since``. The ``usage`` command only wires options
to ``Store.usage_report`` and one of these.

Cost is the sum over priced calls; a group with unpriced calls says how many,
and a group with no priced call says ``unpriced``, never ``$0``. JSON and CSV
carry costs at full precision (so a session's figure can be compared with the
provider's own total to the last digit); only the tables for people round.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal, cast

from rich.console import Group
from rich.table import Table
from rich.text import Text

from agentlaunch.errors import UsageError
from agentlaunch.usage.pricing import format_cost
from agentlaunch.usage.records import CallRecord, ReportRow
from agentlaunch.usage.store import REPORT_BY, ReportBy
from agentlaunch.visible import for_markup, visible

ChartMetric = Literal["cost", "tokens"]

FIELDS = (
    "calls",
    "input",
    "cache_write",
    "cache_read",
    "output",
    "reasoning",
    "total_input",
    "cost_usd",
    "unpriced_calls",
    "cache_hit_ratio",
    "full_price_share",
    "first_at",
    "last_at",
    "cache_write_1h",  # the new ones last, so CSV read by column position keeps working
    "saved_usd",
)

# The columns of `usage --session ID --calls` in JSON and CSV, in order.
CALL_FIELDS = (
    "at",
    "turn",
    "model",
    "input",
    "cache_write",
    "cache_read",
    "output",
    "reasoning",
    "cache_hit_ratio",
    "cost_usd",
    "price_key",
    "cache_write_1h",  # the new ones last, so CSV read by column position keeps working
    "full_price_usd",
    "cache_miss",
)

# Segments of a token bar: (field, glyph, style). Glyphs differ so the chart reads without colour.
_TOKEN_SEGMENTS = (
    ("input", "█", "red"),
    ("cache_write", "▓", "yellow"),
    ("cache_read", "░", "green"),
)


class ReportOptionError(UsageError):
    """A report option (``--by``, ``--since``) that cannot be understood; exits like a usage error."""


# --------------------------------------------------------------------------- options

_RELATIVE = re.compile(r"^\s*(\d+)\s*([wdh])\s*$", re.IGNORECASE)
_UNITS = {"w": "weeks", "d": "days", "h": "hours"}


def parse_by(value: str) -> ReportBy:
    """``session``, ``agent``, ``model`` or ``day`` (any case); anything else is a ReportOptionError."""
    lowered = value.strip().lower()
    if lowered not in REPORT_BY:
        raise ReportOptionError(f"--by: unknown grouping {value!r}; use one of: {', '.join(REPORT_BY)}")
    return cast(ReportBy, lowered)


def parse_since(value: str, *, now: datetime | None = None) -> datetime:
    """The start of a report period, as an aware UTC datetime.

    Accepts a span back from now (``7d``, ``12h``, ``2w``), ``today`` (local
    midnight), a local date ``2026-11-01`` (its local midnight), or an ISO
    date-time (local unless it names a zone). Raises ReportOptionError otherwise
    or for a moment in the future.
    """
    now = now or datetime.now(UTC)
    text = value.strip()
    match = _RELATIVE.match(text)
    if match:
        amount, unit = int(match.group(1)), match.group(2).lower()
        return (now - timedelta(**{_UNITS[unit]: amount})).astimezone(UTC)
    if text.lower() == "today":
        local_today = now.astimezone().date()
        return _local_midnight(local_today)
    try:
        if len(text) == 10:
            result = _local_midnight(date.fromisoformat(text))
        else:
            parsed = datetime.fromisoformat(text)
            result = (parsed if parsed.tzinfo else parsed.astimezone()).astimezone(UTC)
    except ValueError:
        raise ReportOptionError(
            f"--since: cannot read {value!r}; use a span like 7d, 12h or 2w, 'today', or a date like 2026-11-01"
        ) from None
    if result > now:
        raise ReportOptionError(f"--since: {value!r} is in the future")
    return result


def _local_midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day).astimezone().astimezone(UTC)


# --------------------------------------------------------------------------- data


def total_row(rows: Sequence[ReportRow], key: str = "total") -> ReportRow | None:
    """All rows summed into one (None for no rows); cost stays None only if nothing was priced."""
    if not rows:
        return None
    costs = [r.cost_usd for r in rows if r.cost_usd is not None]
    return ReportRow(
        key=key,
        calls=sum(r.calls for r in rows),
        input=sum(r.input for r in rows),
        cache_write=sum(r.cache_write for r in rows),
        cache_write_1h=sum(r.cache_write_1h for r in rows),
        saved_usd=sum(savings) if (savings := [r.saved_usd for r in rows if r.saved_usd is not None]) else None,
        cache_read=sum(r.cache_read for r in rows),
        output=sum(r.output for r in rows),
        reasoning=sum(r.reasoning for r in rows),
        cost_usd=sum(costs) if costs else None,
        unpriced_calls=sum(r.unpriced_calls for r in rows),
        first_at=min(r.first_at for r in rows),
        last_at=max(r.last_at for r in rows),
    )


def report_records(rows: Sequence[ReportRow], by: ReportBy) -> list[dict[str, Any]]:
    """JSON-able dicts, one per row: the group under the key ``by``, then :data:`FIELDS`.

    Ratios are None when a group had no input; times are ISO 8601 UTC. Costs
    are the stored sums as they are (no rounding); ratios are rounded to 1e-6.
    """
    out = []
    for row in rows:
        record: dict[str, Any] = {by: row.key}
        for name in FIELDS:
            value = getattr(row, name)
            if isinstance(value, datetime):
                value = value.isoformat()
            elif isinstance(value, float) and name != "cost_usd":
                value = round(value, 6)  # a ratio: 1e-6 is finer than any decision it informs
            record[name] = value
        if by == "session":
            record["agent"] = row.agent  # last, so CSV read by column position keeps working
        out.append(record)
    return out


def call_record(call: CallRecord, miss: str | None = None) -> dict[str, Any]:
    """One call of ``--calls`` as a JSON-able dict with the keys :data:`CALL_FIELDS` (cost unrounded);
    ``miss``: why its cache missed (see :mod:`agentlaunch.usage.misses`)."""
    u = call.usage
    total = u.input + u.cache_write + u.cache_read
    return {
        "at": call.at.isoformat(),
        "turn": call.turn,
        "model": call.model,
        "input": u.input,
        "cache_write": u.cache_write,
        "cache_read": u.cache_read,
        "output": u.output,
        "reasoning": u.reasoning,
        "cache_hit_ratio": round(u.cache_read / total, 6) if total else None,
        "cost_usd": call.cost_usd,
        "price_key": call.price_key,
        "cache_write_1h": u.cache_write_1h,
        "full_price_usd": call.full_price_usd,
        "cache_miss": miss,
    }


def calls_csv(calls: Sequence[CallRecord], misses: Sequence[str | None] | None = None) -> str:
    """CSV of ``--calls``: the :data:`CALL_FIELDS` header (also when there are no calls), empty cells for None."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CALL_FIELDS)
    for call, miss in zip(calls, misses or [None] * len(calls), strict=True):
        record = call_record(call, miss)
        writer.writerow(["" if v is None else visible(v) if isinstance(v, str) else v for v in record.values()])
    return buffer.getvalue()


def report_csv(rows: Sequence[ReportRow], by: ReportBy) -> str:
    """CSV text with a header row; empty cells for None (unpriced cost, ratios without input)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([by, *FIELDS, *(["agent"] if by == "session" else [])])
    for record in report_records(rows, by):
        writer.writerow(["" if v is None else visible(v) if isinstance(v, str) else v for v in record.values()])
    return buffer.getvalue()


# --------------------------------------------------------------------------- rich


def cost_cell(row: ReportRow) -> str:
    """``$1.2345``, ``$1.2345 +3 unpriced`` or ``unpriced``."""
    text = format_cost(row.cost_usd)
    if row.cost_usd is not None and row.unpriced_calls:
        text += f" +{row.unpriced_calls} unpriced"
    return text


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def writes_cell(writes: int, one_hour: int) -> str:
    """Cache writes, with their 1-hour part when there is one (``23,456 (1h 20,000)``)."""
    return f"{writes:,} (1h {one_hour:,})" if one_hour else f"{writes:,}"


def report_table(
    rows: Sequence[ReportRow], by: ReportBy, *, title: str | None = None, hosts: Sequence[str] | None = None
) -> Table:
    """A rich Table: one line per group and a total line when there are several; ``hosts``: each row's host, shown
    in a first column (``usage --all-hosts``)."""
    table = Table(
        title=title,
        show_footer=len(rows) > 1,
        caption="input: uncached (full-price) input · saved: what caching saved over the priced calls · "
        "cache hit: cache read / all input · full price: input / all input",
    )
    total = total_row(rows)
    columns: list[tuple[str, str, Any]] = [
        ("calls", "calls", lambda r: f"{r.calls:,}"),
        ("input", "input", lambda r: f"{r.input:,}"),
        ("cache_write", "cache write", lambda r: writes_cell(r.cache_write, r.cache_write_1h)),
        ("cache_read", "cache read", lambda r: f"{r.cache_read:,}"),
        ("output", "output", lambda r: f"{r.output:,}"),
        ("cost", "cost", cost_cell),
        ("saved", "saved", lambda r: format_cost(r.saved_usd) if r.saved_usd is not None else "-"),
        ("hit", "cache hit", lambda r: _pct(r.cache_hit_ratio)),
        ("full", "full price", lambda r: _pct(r.full_price_share)),
    ]
    if hosts is not None:
        table.add_column("host", footer="total" if total else "", no_wrap=True)
    table.add_column(by, footer="total" if total and hosts is None else "", no_wrap=True)
    if by == "session":
        table.add_column("agent", no_wrap=True)
    for _name, header, fmt in columns:
        table.add_column(header, justify="right", footer=fmt(total) if total else "", no_wrap=True)
    for i, row in enumerate(rows):
        # The key is a model or session name the provider or the store gave: no markup, no escapes.
        agent = [for_markup(row.agent or "")] if by == "session" else []
        host = [for_markup(hosts[i])] if hosts is not None else []
        table.add_row(*host, for_markup(row.key or "(none)"), *agent, *(fmt(row) for _n, _h, fmt in columns))
    return table


def daily_chart(
    rows: Sequence[ReportRow],
    *,
    metric: ChartMetric = "tokens",
    since: datetime | None = None,
    until: date | None = None,
    width: int = 40,
) -> Group:
    """A bar per local day from ``since`` (else the first row) to ``until`` (else today).

    ``rows`` come from ``usage_report(by="day")``. Token bars stack full-price
    input (█), cache writes (▓) and cache reads (░), so caching shows as the
    share of ░; cost bars are plain (cost is stored per call, not per token
    kind) and carry the day's cache-hit and full-price shares beside them.
    """
    if metric not in ("cost", "tokens"):
        raise ReportOptionError(f"--chart: unknown metric {metric!r}; use cost or tokens")
    by_day = {date.fromisoformat(r.key): r for r in rows}
    if since is not None:
        start = since.astimezone().date()
    elif by_day:
        start = min(by_day)
    else:
        start = datetime.now().astimezone().date()
    end = until or datetime.now().astimezone().date()
    if by_day:
        end = max(end, max(by_day))
    days = [start + timedelta(days=i) for i in range((end - start).days + 1)]

    table = Table(box=None, show_header=True, pad_edge=False)
    table.add_column("day", no_wrap=True)
    table.add_column("", no_wrap=True, min_width=width)
    if metric == "tokens":
        scale = max((by_day[d].total_input for d in days if d in by_day), default=0)
        table.add_column("all input", justify="right")
        table.add_column("cache hit", justify="right")
        for d in days:
            row = by_day.get(d)
            if row is None:
                table.add_row(d.isoformat(), "", "0", "-")
                continue
            table.add_row(d.isoformat(), _token_bar(row, scale, width), f"{row.total_input:,}", _pct(row.cache_hit_ratio))
        legend = Text.assemble(
            *(part for field, glyph, style in _TOKEN_SEGMENTS for part in ((glyph, style), f" {field.replace('_', ' ')}  "))
        )
        legend.append("(input = full-price input, not cached)")
    else:
        peak = max((by_day[d].cost_usd or 0.0 for d in days if d in by_day), default=0.0)
        table.add_column("cost", justify="right")
        table.add_column("cache hit", justify="right")
        table.add_column("full price", justify="right")
        for d in days:
            row = by_day.get(d)
            if row is None:
                table.add_row(d.isoformat(), "", "-", "-", "-")
                continue
            bar = Text("█" * _cells(row.cost_usd or 0.0, peak, width), style="cyan")
            table.add_row(d.isoformat(), bar, cost_cell(row), _pct(row.cache_hit_ratio), _pct(row.full_price_share))
        legend = Text("█ cost per day (priced calls only)")
    return Group(table, legend)


def _cells(value: float, scale: float, width: int) -> int:
    if scale <= 0 or value <= 0:
        return 0
    # Anything above zero gets at least one cell, so small days stay visible.
    return max(1, round(value / scale * width))


def _token_bar(row: ReportRow, scale: int, width: int) -> Text:
    """Stacked bar of ``width`` cells at ``scale``; every non-zero segment keeps at least one cell."""
    values = [max(0, getattr(row, field)) for field, _g, _s in _TOKEN_SEGMENTS]
    cells = _split_cells(values, _cells(sum(values), scale, width))
    bar = Text()
    for (_field, glyph, style), n in zip(_TOKEN_SEGMENTS, cells, strict=True):
        bar.append(glyph * n, style=style)
    return bar


def _split_cells(values: list[int], total: int) -> list[int]:
    """Share ``total`` cells among ``values`` by largest remainder; a non-zero value that got
    none takes one from the biggest segment, so small parts stay visible."""
    whole = sum(values)
    if whole <= 0 or total <= 0:
        return [0] * len(values)
    shares = [v * total / whole for v in values]
    cells = [int(share) for share in shares]
    by_remainder = sorted(range(len(values)), key=lambda i: -(shares[i] - cells[i]))
    for i in by_remainder[: total - sum(cells)]:
        cells[i] += 1
    for i, value in enumerate(values):
        if value > 0 and cells[i] == 0:
            donor = max(range(len(cells)), key=lambda j: cells[j])
            if cells[donor] > 1:
                cells[donor] -= 1
                cells[i] = 1
    return cells
