"""Benchmark the usage store: a by-day report over 1,000,000 calls, and live recording speed.

Run: ``python bench/bench_store.py [--calls N] [--days D] [--record N]``

Builds a store of N calls spread evenly over the last D days in a temporary
directory (bulk insert, for setup only), times ``usage_report(by="day")`` over
the last 30 days, then times ``record_call`` one transaction per call, as live
recording does. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentlaunch.token_usage import Usage  # noqa: E402
from agentlaunch.usage.records import CallRecord  # noqa: E402
from agentlaunch.usage.store import Store  # noqa: E402

AGENTS = ["reviewer", "coder", "planner", "tester", "writer"]
MODELS = [("claude", "claude-opus-5-5"), ("codex", "gpt-5.5"), ("gemini", "gemini-2.5-pro")]


def _calls(lo: int, hi: int, total: int, days: int, now: datetime, rng: random.Random) -> list[CallRecord]:
    """Calls number lo..hi-1 of ``total`` spread evenly over the ``days`` before ``now``."""
    span = days * 86400.0
    start = now.timestamp() - span
    out = []
    for i in range(lo, hi):
        provider, model = MODELS[i % len(MODELS)]
        out.append(
            CallRecord(
                agent=AGENTS[i % len(AGENTS)],
                provider=provider,
                session_id=f"s{i // 50}",
                turn=i % 50,
                model_requested=model,
                model_reported=model,
                usage=Usage(rng.randint(0, 50), rng.randint(0, 5000), rng.randint(0, 90000), rng.randint(1, 2000)),
                cost_usd=None if i % 17 == 0 else rng.random() / 10,
                price_key=None if i % 17 == 0 else "genai-prices:bench",
                at=datetime.fromtimestamp(start + span * i / total, UTC),
            )
        )
    return out


def _time(fn: object, repeat: int = 5) -> tuple[float, float]:
    """Best and median wall time of ``repeat`` runs of ``fn``."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[0], times[len(times) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, nargs="+", default=[365, 30], help="spread(s) of the calls to try")
    parser.add_argument("--record", type=int, default=2000, help="calls to time through record_call")
    args = parser.parse_args()
    rng = random.Random(42)
    now = datetime.now(UTC)
    since = now - timedelta(days=30)

    with tempfile.TemporaryDirectory(prefix="agentlaunch-bench-") as tmp:
        for days in args.days:
            path = Path(tmp) / f"usage-{days}d.sqlite3"
            t0 = time.perf_counter()
            with Store.open(path) as store:
                batch = 100_000
                for lo in range(0, args.calls, batch):
                    hi = min(lo + batch, args.calls)
                    store._bulk_insert_calls(_calls(lo, hi, args.calls, days, now, rng))
                build = time.perf_counter() - t0
                size_mb = path.stat().st_size / 1e6
                rows = store.usage_report("day", since=since)
                best, median = _time(lambda s=store: s.usage_report("day", since=since))
                best_a, median_a = _time(lambda s=store: s.usage_report("day", agent="coder", since=since))
                best_m, median_m = _time(lambda s=store: s.usage_report("model", since=since))
                in_window = sum(r.calls for r in rows)
                print(f"store: {args.calls:,} calls over {days} days, built in {build:.1f} s, {size_mb:.0f} MB")
                print(
                    f"  by-day report, last 30 days ({in_window:,} calls, {len(rows)} rows): "
                    f"best {best:.3f} s, median {median:.3f} s"
                )
                print(f"  by-day report, last 30 days, one agent: best {best_a:.3f} s, median {median_a:.3f} s")
                print(f"  by-model report, last 30 days: best {best_m:.3f} s, median {median_m:.3f} s")

        path = Path(tmp) / "record.sqlite3"
        with Store.open(path) as store:
            store.start_session("bench", agent="coder", provider="claude", working_dir=tmp)
            calls = _calls(0, args.record, args.record, 1, now, rng)
            t0 = time.perf_counter()
            for call in calls:
                store.record_call(call)
            elapsed = time.perf_counter() - t0
        print(
            f"record_call (one transaction per call, WAL, synchronous=NORMAL): "
            f"{args.record / elapsed:,.0f} calls/s ({elapsed / args.record * 1e3:.3f} ms per call)"
        )


if __name__ == "__main__":
    main()
