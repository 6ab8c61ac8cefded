"""What fitting `status`'s table to the width costs: one refresh of `status --watch`, fitted against one plain table.

Run: ``python bench/bench_status_fit.py [--agents N] [--pairs P]``

Renders the table of N agents (default 20) to a Console of a given width,
alternating, pair after pair, the fitted table (:func:`status_view`, which
may build and measure a dozen tables before it draws one) and a plain rich
Table with every column (what `status` drew before, wrapping its rows). Each
side is timed per render (best and median of P pairs, default 30). Printed:
both figures at 200, 80 and 40 columns and the ratio fitted / plain. A
refresh of `--watch` is once a second by default: the figures say what share
of a core that costs.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from agentlaunch.live.status import StatusRecord  # noqa: E402
from agentlaunch.live.status_table import COLUMNS, record_row, status_view  # noqa: E402


def records(count: int) -> list[StatusRecord]:
    now = datetime.now(UTC)
    states = ("thinking", "waiting", "asking", "tool")
    found = []
    for i in range(count):
        data: dict[str, Any] = {
            "agent": f"agent-{i:02d}" + ("-with-a-long-name" if i % 3 == 0 else ""),
            "provider": "claude",
            "model": "claude-sonnet-4-5",
            "pid": os.getpid(),
            "session_id": f"53af7239-1111-2222-3333-{i:012d}",
            "state": states[i % 4],
            "state_since": (now - timedelta(seconds=30 * i)).isoformat(),
            "context": 1000 * i,
            "window": 200_000,
            "window_source": "known",
            "percent": i / 2,
            "to_compaction": 150_000 - 1000 * i,
            "cost": f"${i / 7:.4f}",
            "calls": i,
            "cache": {"expires_at": (now + timedelta(seconds=i)).isoformat()},
        }
        found.append(StatusRecord(Path(f"{i}.json"), data, False))
    return found


def plain(rows: list[StatusRecord]) -> Table:
    now = datetime.now(UTC)
    table = Table(*(header for _k, header, _s in COLUMNS))
    for r in rows:
        cells = record_row(r, now).cells
        table.add_row(*(cells.get(key, "") for key, _h, _s in COLUMNS))
    return table


def timed(render: Any, console: Console) -> float:
    start = time.perf_counter()
    console.print(render())
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--pairs", type=int, default=30)
    args = parser.parse_args()
    rows = records(args.agents)
    print(f"{args.agents} agents, {args.pairs} alternating pairs per width; ms per render (best / median)")
    for width in (200, 80, 40):
        console = Console(width=width, file=io.StringIO(), color_system=None)
        fitted: list[float] = []
        before: list[float] = []
        for _ in range(args.pairs):
            fitted.append(timed(lambda: status_view(rows), console))
            before.append(timed(lambda: plain(rows), console))
        f_best, f_med = min(fitted) * 1000, statistics.median(fitted) * 1000
        p_best, p_med = min(before) * 1000, statistics.median(before) * 1000
        print(
            f"{width:>4} columns: fitted {f_best:6.2f} / {f_med:6.2f}   plain {p_best:6.2f} / {p_med:6.2f}   "
            f"ratio (median) {f_med / p_med:4.2f}"
        )


if __name__ == "__main__":
    main()
