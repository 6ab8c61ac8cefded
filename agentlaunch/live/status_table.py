"""The table of ``agentlaunch status`` (and ``--watch``), fitted to the terminal's width: no row ever wraps.

The columns a person needs first come first: agent, state, for how long,
context, cost; then distance to compaction, the plan's limits, cache, model,
provider, calls, session, pid. The table is built for the width it is drawn at (a resize
redraws ``--watch`` to the new width): every column whole when they fit; else
the last columns are left out, one at a time, down to the first five; else
those five in short forms (``ASKING``, ``20%``, ``ctx``, an agent's name cut
to 12 characters with an ellipsis), then fewer; and an agent's name that still
does not fit is cut further. Every cell is
one line (``no_wrap``), so a row is never two.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rich import box
from rich.cells import cell_len
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from agentlaunch.fleet.model import labels
from agentlaunch.fleet.records import StatusRecord
from agentlaunch.fleet.states import ASKING, pane_state
from agentlaunch.live.status_read import shown_state, waited
from agentlaunch.usage.plan_limits import limits_text
from agentlaunch.usage.warmth import cache_cell
from agentlaunch.visible import for_markup, visible

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

    from agentlaunch.fleet.panes import Pane as DeadPane
    from agentlaunch.fleet.setups import Setup

STATE_STYLES = {
    "asking": "bold white on red",
    "stalled": "bold white on red",
    "paused": "bold white on red",
    "waiting": "yellow",
    "retrying": "magenta",
    "dead": "bold red",
    "setup failed": "bold red",
    "stopped": "dim",
    "budget stopped": "bold red",
}
ESSENTIAL = 5  # agent, state, for, context, cost: what is given up last
GAP = 3  # between two columns: a cell's right padding, the (blank) divider, the next cell's left padding
QUESTION_SHOWN = 160  # characters of an asking agent's question under the table, at most
SHORT_NAME = 12  # the agent column's width with the short forms (a longer name ends in an ellipsis)
# (key, header, short header), in the order they are given up last to first.
COLUMNS = (
    ("agent", "agent", "agent"),
    ("state", "state", "state"),
    ("host", "host", "host"),
    ("for", "for", "for"),
    ("context", "context", "ctx"),
    ("cost", "cost", "cost"),
    ("to_compaction", "to compaction", "to comp."),
    ("plan_limits", "plan limits", "limits"),
    ("cache", "cache", "cache"),
    ("model", "model", "model"),
    ("provider", "provider", "provider"),
    ("calls", "calls", "calls"),
    ("session", "session", "session"),
    ("pid", "pid", "pid"),
)


@dataclass
class Row:
    """One row: each column's text, whole and (where shorter) short; the state's style."""

    cells: dict[str, str]
    short: dict[str, str] = field(default_factory=dict)
    style: str | None = None

    def text(self, key: str, short: bool) -> str:
        return self.short.get(key, self.cells.get(key, "")) if short else self.cells.get(key, "")


def _n(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) else "–"


def _k(value: object) -> str:
    if not isinstance(value, int):
        return "–"
    return f"{value / 1000:.0f}k" if abs(value) >= 10_000 else f"{value:,}"


def record_row(r: StatusRecord, now: datetime, label: str | None = None) -> Row:
    """A running session's row; ``label`` names it (``cx ⑂ 2`` for a fork: :func:`agentlaunch.fleet.model.labels`),
    else the agent."""
    d = r.data
    percent = d.get("percent")
    has_percent = isinstance(percent, int | float)
    setup = d.get("worktree_setup")
    how_long = waited(r.as_dict(), now)
    cells = {
        "agent": label or r.agent,
        "state": shown_state(r.state, r.data),
        "for": how_long.removeprefix("for ") if how_long else "",
        "context": _n(d.get("context")) + (f" ({percent:.1f}%)" if has_percent else ""),
        "cost": str(d.get("cost") or ""),
        "to_compaction": _n(d.get("to_compaction")),
        "plan_limits": limits_text(d, now) or "",
        "cache": cache_cell(d, now),
        "model": str(d.get("model") or ""),
        "provider": str(d.get("provider") or ""),
        "calls": _n(d.get("calls")),
        "session": str(d.get("session_id") or ""),
        "pid": str(d.get("pid") or ""),
    }
    short = {
        "state": "ASKING" if r.state == ASKING else r.state,
        "context": f"{percent:.0f}%" if has_percent else _k(d.get("context")),
    }
    if isinstance(setup, dict) and setup.get("ok") is False:  # not expected while running: said all the same
        cells["state"] += " (setup failed)"
    return Row(cells, short, STATE_STYLES.get(r.state))


def dead_row(pane: DeadPane) -> Row:
    """An agent whose pane is dead: ``dead (exit N)``, or ``stopped`` / ``budget stopped`` (:func:`pane_state`)."""
    state = pane_state(pane)
    code = f" (exit {pane.exit_status})" if pane.exit_status is not None and state == "dead" else ""
    return Row(
        {"agent": pane.agent, "state": f"{state}{code}", "session": f"tmux {pane.tmux_session} {pane.pane_id}"},
        {"state": state},
        STATE_STYLES[state],
    )


def setup_row(record: Setup) -> Row:
    """An agent whose worktree setup failed (it did not start) or is running now."""
    if record.running:
        return Row({"agent": record.agent, "state": f"setting up: {record.command or 'worktree'}"}, {"state": "setting up"})
    code = f" (exit {record.exit})" if record.exit is not None else " (interrupted)" if record.ok is None else ""
    return Row({"agent": record.agent, "state": f"setup failed{code}"}, {"state": "setup failed"}, STATE_STYLES["setup failed"])


def setup_caption(record: Setup) -> str | None:
    if record.running:
        return None
    said = f"exited {record.exit}" if record.exit is not None else "was interrupted" if record.ok is None else "could not start"
    return f"{record.agent}: worktree setup `{record.command}` {said}; log: {record.log}"


def question_caption(record: StatusRecord) -> str | None:
    """``needy asks: Bash: rm -rf build``: what an asking agent's CLI asks (its record's ``state_reason``), cut to
    :data:`QUESTION_SHOWN` characters (made inert when printed, as every caption)."""
    reason = record.data.get("state_reason")
    if record.state != ASKING or record.stale or not isinstance(reason, str) or not reason.strip():
        return None
    said = " ".join(reason.split())
    return f"{record.agent} asks: {said if len(said) <= QUESTION_SHOWN else said[: QUESTION_SHOWN - 1] + '…'}"


class FittedStatus:
    """The status table, built for the width it is drawn at (``--watch`` redraws it at the terminal's width)."""

    def __init__(self, rows: Sequence[Row], captions: Sequence[str] = ()) -> None:
        self.rows, self.captions = list(rows), list(captions)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.rows:
            yield fitted_table(self.rows, console, options.max_width)
        for caption in self.captions:  # below the table, at the screen's width (a note, not a row)
            yield Text(visible(caption), style="dim", overflow="fold")

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(1, options.max_width)


def _table(rows: Sequence[Row], count: int, short: bool, width: int | None = None) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1), caption_justify="left")
    columns = _columns(rows)[:count]
    for key, header, short_header in columns:
        right = key in ("context", "cost", "to_compaction", "calls", "pid")
        table.add_column(
            short_header if short else header,
            justify="right" if right else "left",
            no_wrap=True,
            overflow="ellipsis",
            max_width=width if key == "agent" else None,
        )
    for row in rows:
        # A record is anyone's file: no markup, no escapes.
        shown = [for_markup(row.text(key, short)) for key, _h, _s in columns]
        if row.style:
            shown[1] = f"[{row.style}]{shown[1]}[/]"
            at = next((i for i, c in enumerate(columns) if c[0] == "for"), None)
            if at is not None and shown[at]:
                shown[at] = f"[{row.style}]{shown[at]}[/]"
        table.add_row(*shown)
    return table


def _columns(rows: Sequence[Row]) -> list[tuple[str, str, str]]:
    """The columns some row has something in (agent and state always): an empty column is no use at any width."""
    return [c for c in COLUMNS if c[0] in ("agent", "state") or any(row.cells.get(c[0]) for row in rows)]


def _natural_width(rows: Sequence[Row], columns: Sequence[tuple[str, str, str]], short: bool, name_width: int | None) -> int:
    """The width the table takes whole: its widest cell (or header) per column, and 3 between two columns.

    Counted rather than measured by rich (a rich measure of each candidate table cost 4-10 ms a try with 20 agents,
    and a narrow terminal tries up to a dozen): the table style (:func:`_table`) has no edges and pads 1 each side.
    """
    total = GAP * (len(columns) - 1)
    for key, header, short_header in columns:
        widest = max([cell_len(short_header if short else header), *(cell_len(visible(r.text(key, short))) for r in rows)])
        total += min(widest, name_width) if key == "agent" and name_width is not None else widest
    return total


def fitted_table(rows: Sequence[Row], console: Console, width: int) -> Table:
    """The widest table of the first columns that fits ``width`` (whole forms first, then short), else cut to fit."""
    # Whole forms with fewer columns; then the short forms; then a long agent name cut, so that its state, how
    # long and context still fit beside it; then fewer of those.
    columns = _columns(rows)
    most = len(columns)
    tries: list[tuple[int, bool, int | None]] = [(n, False, None) for n in range(most, min(most, ESSENTIAL) - 1, -1)]
    tries += [(ESSENTIAL, True, None)] + [(count, True, SHORT_NAME) for count in range(ESSENTIAL, 1, -1)]
    for count, short, name_width in tries:
        if _natural_width(rows, columns[:count], short, name_width) <= width:
            return _table(rows, count, short, width=name_width)
    # Not even agent and state whole: the agent's name is cut (an ellipsis), never a second line.
    state = max((len(r.text("state", True)) for r in rows), default=5)
    return _table(rows, 2, True, width=max(width - max(state, 5) - GAP, 1))


def remote_row(row: dict[str, Any], now: datetime) -> Row:
    """A row of another host's ``status --json`` (:mod:`agentlaunch.hosts.fleet`): a running session's as here, a
    dead pane's or a setup's by its state, a host not read as its reason."""
    host, state = str(row.get("host")), str(row.get("state")).replace("-", " ")
    if state == "host unreachable":  # why: under the table (:func:`status_view`)
        shown = Row({"agent": host, "state": state}, {"state": "unreachable"}, "dim")
    elif isinstance(row.get("pid"), int):
        data = {k: v for k, v in row.items() if k not in ("stale", "host")}
        shown = record_row(StatusRecord(f"{host}:{row.get('pid')}.json", data, row.get("stale") is True), now)
    else:
        code = row.get("exit_status")
        said = f"{state} (exit {code})" if state == "dead" and isinstance(code, int) else state
        shown = Row({"agent": str(row.get("agent")), "state": said}, {"state": state}, STATE_STYLES.get(state))
    shown.cells["host"] = host
    return shown


def status_view(
    records: Sequence[StatusRecord],
    dead: Sequence[DeadPane] = (),
    setups: Sequence[Setup] = (),
    now: datetime | None = None,
    remote: Sequence[dict[str, Any]] | None = None,
) -> FittedStatus:
    """The table of running agents, dead panes and worktree setups that failed or run, with what explains them;
    with ``remote`` (hosts configured: their rows) a host column, this machine's rows ``local``."""
    now = now or datetime.now(UTC)
    rows = [record_row(r, now, label) for r, label in zip(records, labels(records), strict=True)]
    rows += [setup_row(s) for s in setups] + [dead_row(p) for p in dead]
    captions = [c for c in (setup_caption(s) for s in setups) if c] + [c for c in map(question_caption, records) if c]
    if remote is not None:
        for row in rows:
            row.cells["host"] = "local"
        rows += [remote_row(r, now) for r in remote]
        captions += [str(r.get("problem")) for r in remote if r.get("state") == "host-unreachable"]
    states = {pane_state(p) for p in dead}
    if "dead" in states:
        captions.append("dead: its tmux pane is kept with its error; `agentlaunch tmux up AGENT` starts it again")
    if "stopped" in states:
        captions.append("stopped: `agentlaunch restart AGENT` brings it back in its session")
    if "budget stopped" in states:
        captions.append("budget stopped: raise the budget, then `agentlaunch restart AGENT`")
    if setups and any(not s.running for s in setups):
        captions.append("a failed worktree setup runs again at the agent's next start")
    if not rows:
        captions.append("no agent is running")
    return FittedStatus(rows, captions)
