"""Benchmark memory over a long session: parser + meter + headless view, 100,000 events.

Run: ``python bench/bench_memory.py [--events N]``

Streams the recorded ``tests/data/claude/tool_turn.jsonl`` turn over and over
(fresh message ids each time, generated on the fly so the input itself takes
no memory) through :class:`ClaudeParser`, :class:`Meter` and a
:class:`HeadlessView` writing to /dev/null, the way a launch handles them.
Prints resident memory after 1,000 and after N (default 100,000) normalized
events, and the growth (target < 5 MB).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agentlaunch.events import TurnEnd  # noqa: E402
from agentlaunch.live.view import HeadlessView  # noqa: E402
from agentlaunch.providers.claude import ClaudeParser  # noqa: E402
from agentlaunch.usage.meter import Meter  # noqa: E402

RECORDED = REPO / "tests" / "data" / "claude" / "tool_turn.jsonl"
TARGET_MB = 5.0
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mb() -> float:
    """Resident set size now, from /proc/self/statm."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def stream() -> Iterator[str]:
    """The recorded turn forever, each repetition with its own message ids."""
    turn = [line for line in RECORDED.read_text("utf-8").splitlines() if line.strip()]
    ids = sorted({json.loads(line)["event"]["message"]["id"] for line in turn if '"message_start"' in line})
    rep = 0
    while True:
        for line in turn:
            for n, msg_id in enumerate(ids):
                line = line.replace(msg_id, f"msg_bench_{rep:07d}_{n}")
            yield line
        rep += 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000, help="normalized events to stream (default 100,000)")
    args = parser.parse_args()
    checkpoints = {1_000: 0.0, args.events: 0.0}

    with open(os.devnull, "w") as devnull:
        meter = Meter(model="claude-sonnet-4-5")
        view = HeadlessView(meter, stdout=devnull, stderr=devnull)
        claude = ClaudeParser()
        events = lines = turns = 0
        for line in stream():
            lines += 1
            for event in claude.feed(line):
                warning = meter.add(event)
                view.event(event)
                if warning is not None:
                    view.warn_compaction(warning)
                if isinstance(event, TurnEnd):
                    view.turn_done()
                    turns += 1
                events += 1
                if events in checkpoints:
                    gc.collect()
                    checkpoints[events] = rss_mb()
            if events >= args.events:
                break

    start, end = checkpoints[1_000], checkpoints[args.events]
    growth = end - start
    print(f"streamed {lines:,} lines → {events:,} events, {turns:,} turns, {meter.calls:,} model calls")
    print(f"meter total: {meter.total}")
    print(f"RSS after {1_000:>7,} events: {start:8.2f} MB")
    print(f"RSS after {args.events:>7,} events: {end:8.2f} MB  (peak {peak_mb():.2f} MB)")
    print(f"growth: {growth:+.2f} MB  (target < {TARGET_MB} MB) {'ok' if growth < TARGET_MB else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
