"""Showing the live status records: the standard library only, for ``status --line`` and ``--json``.

The records are read by :mod:`agentlaunch.fleet` (the one reader); this module formats them: :func:`one_line`
is the one-line form (``status --line``, the pane title) and :func:`json_rows` the rows of ``status --json``.
It runs on every tmux status-bar refresh, so it imports neither pathlib, dataclasses, typing nor anything of
agentlaunch's beyond the base helpers it names (``tests/test_status_fast.py`` holds that).

A new record field is shown by ``--json`` as soon as :func:`agentlaunch.fleet.records.checked_record` keeps it,
and by ``--line`` once :func:`one_line` appends it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from agentlaunch.fleet.records import StatusRecord, is_count, is_number, read_records, status_folder
from agentlaunch.fleet.setups import Setup, setups
from agentlaunch.fleet.states import ASKING, NEEDS_YOU, TIMED, pane_state
from agentlaunch.usage import plan_limits
from agentlaunch.usage.warmth import warmth_text
from agentlaunch.visible import visible

if TYPE_CHECKING:  # only mypy reads these
    import os
    from collections.abc import Callable, Sequence
    from typing import Any

    from agentlaunch.fleet.panes import Pane

__all__ = ["NEEDS_YOU", "status_folder"]  # read here by the tests of the states and of the folder


def _n(value: int) -> str:
    return f"{value:,}"


ASKING_SHOWN = "ASKING: needs you"
"""How ``asking`` reads in one-line and table views: it must stand out in a row of panes."""
STALLED_SHOWN = "STALLED: needs you"
DONE = "done"
"""How ``waiting`` reads when the agent's last turn ended and nothing came since (``"done": true``)."""
REASON_CHARS = 80  # the cause shown after ``retrying``, at most


def shown_state(state: str, record: dict[str, Any] | None = None) -> str:
    """The state as views print it: ``asking`` and ``stalled`` in capitals with what they mean, ``waiting`` after a
    finished turn as ``done``, ``retrying`` with its cause (``retrying (529 overloaded, attempt 3/10)``)."""
    if state == ASKING:
        return ASKING_SHOWN
    if state == "stalled":
        return STALLED_SHOWN
    record = record or {}
    if state == "paused":
        reason = record.get("state_reason")
        return f"paused: {reason[:REASON_CHARS]}" if isinstance(reason, str) and reason else "paused"
    if state == "waiting" and record.get("done") is True:
        return DONE
    reason = record.get("state_reason")
    if state in ("retrying", "waiting") and isinstance(reason, str) and reason:
        return f"{state} ({reason[:REASON_CHARS]})"  # the cause of a retry loop; why the last turn ended (it failed)
    return state


def waited(record: dict[str, Any], now: datetime | None) -> str | None:
    """How long a ``waiting`` or ``asking`` agent has been so: ``for 3m12s`` at ``now``, else ``since 11:42``."""
    if record.get("stale") or record.get("state") not in TIMED or not isinstance(record.get("state_since"), str):
        return None
    try:
        since = datetime.fromisoformat(record["state_since"])
    except ValueError:
        return None
    if since.tzinfo is None:
        return None
    if now is None:  # a pane title is written once per state: a clock time stays true
        return f"since {since.astimezone():%H:%M}"
    return f"for {duration((now - since).total_seconds())}"


def duration(seconds: float) -> str:
    """``45s``, ``5m00s``, ``2h05m``: how long a state has lasted, as every view says it."""
    whole = max(int(seconds), 0)
    hours, rest = divmod(whole, 3600)
    if hours:
        return f"{hours}h{rest // 60:02d}m"
    return f"{rest // 60}m{rest % 60:02d}s" if rest >= 60 else f"{rest}s"


def one_line(record: dict[str, Any], now: datetime | None = None, *, warmth: bool = True) -> str:
    """``demo · waiting · ctx 12.3% · 40,211 to compaction · $0.0123 · 5h 42% · resets 18:20 · cache warm 4m12s · for 3m12s``:
    for tmux and prompts (the plan's limits only for a subscription, which the CLI reports them for).

    The last part, for an agent ``waiting`` or ``asking``, says how long at ``now`` (``status --line``),
    or since when without ``now`` (the pane title, written once per state). A launch that is ``asking``
    reads ``demo · ASKING: needs you · …``. ``warmth=False`` leaves the cache's countdown out: the pane
    border computes it from the expiry itself (:data:`agentlaunch.live.tmux.BORDER_FORMAT`), since a
    title written once would keep saying "warm" after the cache expired.
    """
    parts = [str(record.get("agent", "?")), shown_state(str(record.get("state", "?")), record)]
    if record.get("stale"):
        parts[1] = "stale"
    percent = record.get("percent")
    if is_number(percent) and record.get("window_source") != "observed":
        parts.append(f"ctx {percent:.1f}%")
    elif is_count(record.get("context")) and record["context"]:
        parts.append(f"ctx {_n(record['context'])}")
    left = record.get("to_compaction")
    if is_count(left):
        parts.append(f"{_n(left)} to compaction" if left > 0 else "past compaction threshold")
    cost = record.get("cost")
    if isinstance(cost, str) and cost:
        parts.append(cost)
    if limits := plan_limits.limits_text(record, now or datetime.now(UTC)):
        parts.append(limits)
    warm = warmth_text(record, now or datetime.now(UTC)) if warmth else None
    if warm:
        parts.append(warm)
    if (how_long := waited(record, now)) is not None:
        parts.append(how_long)
    return visible(" · ".join(parts))  # a status bar is a terminal: no escape from a record reaches it


def line_for(agent: str, directory: str | os.PathLike[str] | None = None) -> str:
    """The one-line status of ``agent``'s running session (the latest updated), or "" when none runs."""
    live = [r for r in read_records(directory, clean=False) if r.agent == agent and not r.stale]
    if not live:
        return ""
    latest = max(live, key=lambda r: str(r.data.get("updated", "")))
    line = one_line(latest.as_dict(), datetime.now(UTC))
    return line + (f" (+{len(live) - 1} more)" if len(live) > 1 else "")


def dead_record(pane: Pane) -> dict[str, object]:
    """An agent whose pane is dead as ``status --json`` shows it beside the running ones (``dead``: false when it
    was stopped, by `agentlaunch stop` or its budget)."""
    state = pane_state(pane)
    return {
        "agent": pane.agent,
        "state": state.replace(" ", "-"),
        "exit_status": pane.exit_status,
        "tmux_session": pane.tmux_session,
        "pane": pane.pane_id,
        "stale": False,
        "dead": state == "dead",
    }


def dead_line(pane: Pane) -> str:
    """An agent whose pane is dead as ``status --line`` shows it."""
    where = f"tmux {pane.tmux_session} {pane.pane_id}"
    state = pane_state(pane)
    if state == "stopped":
        return f"{pane.agent} · stopped (agentlaunch stop) · agentlaunch restart {pane.agent} brings it back · {where}"
    if state == "budget stopped":
        return f"{pane.agent} · stopped by its budget · {where}"
    code = f" (exit {pane.exit_status})" if pane.exit_status is not None else ""
    return f"{pane.agent} · dead{code} · {where}"


def setup_record(record: Setup) -> dict[str, object]:
    """A failed or running worktree setup as ``status --json`` shows it beside the running agents."""
    state = "setting-up" if record.running else "setup-failed"
    return {
        "agent": record.agent,
        "state": state,
        "working_dir": record.worktree,
        "worktree_setup": record.shown(),
        "stale": False,
        "dead": False,
    }


def setup_line(record: Setup) -> str:
    """A failed or running worktree setup as ``status --line`` shows it."""
    if record.running:
        return f"{record.agent} · setting up its worktree: {record.command or ''} · log {record.log}"
    code = f" (exit {record.exit})" if record.exit is not None else ""
    return f"{record.agent} · worktree setup failed{code}: {record.command or ''} · log {record.log}"


def agent_line(agent: str, dead: Callable[[], Sequence[Pane]]) -> str:
    """``status --line AGENT``'s text: its running session's line, else its unfinished worktree setup's, else its dead
    pane's (``dead()`` asks tmux), else ""."""
    text = line_for(agent)
    if not text:  # not running: maybe its worktree setup failed (or runs), or it died in a tmux pane
        text = next((setup_line(s) for s in setups() if s.agent == agent), "")
    if not text:
        text = next((dead_line(p) for p in dead() if p.agent == agent), "")
    return text


def json_rows(records: list[StatusRecord], dead: Sequence[Pane]) -> list[dict[str, Any]]:
    """The rows of ``status --json``: every record as read (with ``stale``), every unfinished worktree setup, then
    every dead pane; each with ``host`` null (this machine's: another host's rows name it)."""
    rows = [r.as_dict() for r in records] + [setup_record(s) for s in setups()] + [dead_record(p) for p in dead]
    return [{**row, "host": None} for row in rows]


def json_text(rows: list[dict[str, Any]]) -> str:
    """``status --json``'s output (without the final newline ``print`` adds)."""
    return json.dumps(rows, indent=2, ensure_ascii=False)
