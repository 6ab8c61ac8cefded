"""Report rendering (table, JSON, CSV, chart) and the --by / --since parsers."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, date, datetime, timedelta

import pytest
from rich.console import Console, RenderableType

from agentlaunch.errors import ExitCode
from agentlaunch.usage.records import ReportRow
from agentlaunch.usage.reports import (
    FIELDS,
    ReportOptionError,
    daily_chart,
    parse_by,
    parse_since,
    report_csv,
    report_records,
    report_table,
    total_row,
)

NOW = datetime(2026, 11, 20, 15, 30, tzinfo=UTC)
T = datetime(2026, 11, 18, 10, 0, tzinfo=UTC)


def row(key: str, cost: float | None = 0.5, unpriced: int = 0, **kw: int) -> ReportRow:
    fields = {"calls": 4, "input": 100, "cache_write": 300, "cache_read": 600, "output": 50, "reasoning": 5}
    fields.update(kw)
    return ReportRow(key=key, cost_usd=cost, unpriced_calls=unpriced, first_at=T, last_at=T, **fields)


def render(renderable: RenderableType, width: int = 160) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


# --------------------------------------------------------------------------- --by


@pytest.mark.parametrize("value", ["session", "agent", "model", "day", "DAY", " Model "])
def test_parse_by_accepts_the_four_groupings(value: str) -> None:
    assert parse_by(value) == value.strip().lower()


@pytest.mark.parametrize("value", ["week", "", "days", "provider"])
def test_parse_by_rejects_anything_else_clearly(value: str) -> None:
    with pytest.raises(ReportOptionError) as exc:
        parse_by(value)
    assert exc.value.exit_code == ExitCode.USAGE
    assert exc.value.message == f"--by: unknown grouping {value!r}; use one of: session, agent, model, day"


# --------------------------------------------------------------------------- --since


@pytest.mark.parametrize(
    ("value", "delta"),
    [
        ("7d", timedelta(days=7)),
        ("12h", timedelta(hours=12)),
        ("2w", timedelta(weeks=2)),
        (" 30D ", timedelta(days=30)),
        ("0h", timedelta(0)),
    ],
)
def test_parse_since_spans_back_from_now(value: str, delta: timedelta) -> None:
    assert parse_since(value, now=NOW) == NOW - delta


def test_parse_since_date_is_local_midnight() -> None:
    result = parse_since("2026-11-01", now=NOW)
    assert result.tzinfo is not None
    assert result == datetime(2026, 11, 1).astimezone()
    assert result.astimezone().time().isoformat() == "00:00:00"


def test_parse_since_today_and_iso_datetimes() -> None:
    assert parse_since("today", now=NOW) == datetime.combine(NOW.astimezone().date(), datetime.min.time()).astimezone()
    assert parse_since("2026-11-19T08:00:00+02:00", now=NOW) == datetime(2026, 11, 19, 6, 0, tzinfo=UTC)
    assert parse_since("2026-11-19T08:00", now=NOW) == datetime(2026, 11, 19, 8, 0).astimezone()


@pytest.mark.parametrize("value", ["7x", "", "d7", "yesterday", "2026-13-01", "2026/11/01", "-3d", "1.5d", "7 days"])
def test_parse_since_rejects_what_it_cannot_read(value: str) -> None:
    with pytest.raises(ReportOptionError) as exc:
        parse_since(value, now=NOW)
    assert exc.value.exit_code == ExitCode.USAGE
    assert exc.value.message.startswith(f"--since: cannot read {value!r}; use a span like 7d, 12h or 2w")


def test_parse_since_rejects_the_future() -> None:
    with pytest.raises(ReportOptionError, match="in the future"):
        parse_since("2027-01-01", now=NOW)


# --------------------------------------------------------------------------- data forms


def test_total_row_keeps_unpriced_honest() -> None:
    total = total_row([row("a", 0.5), row("b", None, unpriced=4), row("c", 0.25, unpriced=1)])
    assert total is not None
    assert (total.calls, total.input, total.cache_read, total.output) == (12, 300, 1800, 150)
    assert total.cost_usd == pytest.approx(0.75)
    assert total.unpriced_calls == 5
    nothing_priced = total_row([row("b", None, unpriced=4)])
    assert nothing_priced is not None and nothing_priced.cost_usd is None
    assert total_row([]) is None


def test_records_are_json_able_with_null_for_unpriced() -> None:
    records = report_records([row("claude-opus-5-5", 0.16999999999999998), row("mystery", None, unpriced=4)], "model")
    assert list(records[0]) == ["model", *FIELDS]
    assert records[0]["model"] == "claude-opus-5-5"
    assert records[0]["cost_usd"] == 0.16999999999999998  # full precision for scripts (issue 11); tables round
    assert records[0]["cache_hit_ratio"] == 0.6
    assert records[0]["full_price_share"] == 0.1
    assert records[0]["total_input"] == 1000
    assert records[0]["first_at"] == "2026-11-18T10:00:00+00:00"
    assert records[1]["cost_usd"] is None
    assert records[1]["unpriced_calls"] == 4
    assert json.loads(json.dumps(records)) == records


def test_ratios_are_null_without_input() -> None:
    (record,) = report_records([row("x", input=0, cache_write=0, cache_read=0)], "agent")
    assert record["cache_hit_ratio"] is None
    assert record["full_price_share"] is None


def test_csv_has_a_header_and_empty_cells_for_none() -> None:
    text = report_csv([row("2026-11-18", 0.5), row("2026-11-19", None, unpriced=4)], "day")
    parsed = list(csv.DictReader(io.StringIO(text)))
    assert text.splitlines()[0] == ",".join(["day", *FIELDS])
    assert parsed[0]["day"] == "2026-11-18"
    assert parsed[0]["cost_usd"] == "0.5"
    assert parsed[1]["cost_usd"] == ""
    assert parsed[1]["unpriced_calls"] == "4"


def test_csv_of_nothing_is_just_the_header() -> None:
    assert report_csv([], "agent") == ",".join(["agent", *FIELDS]) + "\n"


# --------------------------------------------------------------------------- table


def test_table_shows_priced_sum_unpriced_count_and_never_zero_for_unpriced() -> None:
    text = render(report_table([row("rev", 0.0166, unpriced=2), row("coder", None, unpriced=4)], "agent"))
    lines = {line.split()[1]: line for line in text.splitlines() if line.startswith("│ ")}
    assert "$0.0166 +2 unpriced" in lines["rev"]
    assert "unpriced" in lines["coder"]
    assert "$0" not in lines["coder"]
    assert "60%" in lines["rev"] and "10%" in lines["rev"]  # cache hit, full-price share
    assert "total" in lines and "$0.0166 +6 unpriced" in lines["total"]


def test_table_without_rows_still_renders_headers() -> None:
    text = render(report_table([], "session"))
    assert "session" in text and "cache hit" in text and "total" not in text


# --------------------------------------------------------------------------- chart


def _bar_line(text: str, day: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(day))


def test_token_chart_fills_the_period_and_separates_cache_reads() -> None:
    rows = [
        row("2026-11-18", input=100, cache_write=0, cache_read=300),  # 400 input: full width
        row("2026-11-20", input=200, cache_write=0, cache_read=0),  # 200 input, none cached: half width
    ]
    text = render(daily_chart(rows, since=datetime(2026, 11, 17, 12, tzinfo=UTC), until=date(2026, 11, 20), width=40))
    days = [line.split()[0] for line in text.splitlines() if line[:4] == "2026"]
    assert days == ["2026-11-17", "2026-11-18", "2026-11-19", "2026-11-20"]
    full = _bar_line(text, "2026-11-18")
    assert full.count("█") == 10 and full.count("░") == 30 and "75%" in full
    half = _bar_line(text, "2026-11-20")
    assert half.count("█") == 20 and half.count("░") == 0 and "0%" in half
    assert "█" not in _bar_line(text, "2026-11-19")
    assert "░ cache read" in text and "█ input" in text


def test_token_chart_keeps_tiny_segments_visible() -> None:
    text = render(daily_chart([row("2026-11-18", input=1, cache_write=0, cache_read=10_000)], until=date(2026, 11, 18)))
    line = _bar_line(text, "2026-11-18")
    assert line.count("█") == 1
    assert line.count("█") + line.count("░") == 40


def test_cost_chart_marks_unpriced_days() -> None:
    rows = [row("2026-11-18", 1.0), row("2026-11-19", None, unpriced=3), row("2026-11-20", 0.5, unpriced=1)]
    text = render(daily_chart(rows, metric="cost", until=date(2026, 11, 20), width=20))
    assert _bar_line(text, "2026-11-18").count("█") == 20
    unpriced = _bar_line(text, "2026-11-19")
    assert "unpriced" in unpriced and "$" not in unpriced and "█" not in unpriced
    assert _bar_line(text, "2026-11-20").count("█") == 10
    assert "$0.5000 +1 unpriced" in _bar_line(text, "2026-11-20")


def test_chart_rejects_unknown_metric() -> None:
    with pytest.raises(ReportOptionError, match="unknown metric 'money'"):
        daily_chart([], metric="money")  # type: ignore[arg-type]


def test_calls_csv_has_the_calls_header_with_or_without_calls() -> None:
    from agentlaunch.token_usage import Usage
    from agentlaunch.usage.records import CallRecord
    from agentlaunch.usage.reports import CALL_FIELDS, call_record, calls_csv

    assert calls_csv([]) == ",".join(CALL_FIELDS) + "\n"
    call = CallRecord(agent="a", provider="claude", usage=Usage(input=1, output=2), cost_usd=1 / 3, at=T)
    assert list(call_record(call)) == list(CALL_FIELDS)
    (parsed,) = csv.DictReader(io.StringIO(calls_csv([call])))
    assert float(parsed["cost_usd"]) == 1 / 3 and parsed["turn"] == ""
