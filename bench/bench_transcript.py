"""Benchmark memory while a native Claude launch reads a growing transcript: 1,000 against 10,000 calls.

Run: ``python bench/bench_transcript.py [--calls 1000 10000]``

Each size runs in a fresh interpreter. The recorded Claude Code 2.1.332 tool
turn (``tests/data/claude_tui/tool_turn/transcript.jsonl``: its user,
assistant, system and small attachment lines, two calls per turn) is appended
to a transcript turn after turn, with fresh message ids, and read after every
turn by :class:`JsonlTail` and :class:`CallsFromTranscript`, each call
metered by a :class:`Meter`, as the source does when a hook reports. Prints,
side by side, the transcript's size, the calls counted, the peak of Python
allocations during the reads (tracemalloc) and the process's peak RSS
(VmHWM), and the ratio of the largest run to the smallest (flat: near 1).
The ids already counted are a bounded set (10,000 by default), so the Python
peak grows until that bound and stays there: run ``--calls 1000 10000 30000``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agentlaunch.events import CallUsage  # noqa: E402
from agentlaunch.providers.native.claude_transcript import CallsFromTranscript, salvage_line  # noqa: E402
from agentlaunch.providers.native.jsonl_tail import JsonlTail  # noqa: E402
from agentlaunch.usage.meter import Meter  # noqa: E402

RECORDED = REPO / "tests" / "data" / "claude_tui" / "tool_turn" / "transcript.jsonl"
KEPT = {"user", "assistant", "system", "last-prompt"}


def turn_template() -> bytes:
    lines = []
    for raw in RECORDED.read_bytes().splitlines():
        line = json.loads(raw)
        if line.get("type") in KEPT or (line.get("type") == "attachment" and len(raw) < 2_000):
            lines.append(raw)
    return b"\n".join(lines) + b"\n"


def vm_hwm_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM"):
            return int(line.split()[1])
    return 0


def child(calls: int) -> None:
    template = turn_template()
    per_turn = 2  # the recorded turn: msg_fake_0001 (two lines) and msg_fake_0002
    with tempfile.TemporaryDirectory(prefix="albench-") as folder:
        path = Path(folder) / "session.jsonl"
        tail, reader, meter = JsonlTail(path, salvage=salvage_line), CallsFromTranscript(), Meter()
        counted = 0
        tracemalloc.start()
        with path.open("ab") as f:
            for turn in range(calls // per_turn):
                f.write(template.replace(b"msg_fake_000", f"msg_{turn:06d}_".encode()))
                f.flush()
                for item in reader.lines(tail.read()):
                    if isinstance(item, CallUsage):
                        meter.add(item)
                        counted += 1
        for item in reader.close_calls():
            meter.add(item)
            counted += 1
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        size = path.stat().st_size
    print(json.dumps({"calls": counted, "bytes": size, "peak_alloc": peak, "hwm_kb": vm_hwm_kb(), "meter_calls": meter.calls}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return 0
    rows = []
    for calls in args.calls:
        done = subprocess.run([sys.executable, __file__, "--child", str(calls)], capture_output=True, text=True, check=True)
        rows.append(json.loads(done.stdout))
    print(f"{'calls':>8} {'transcript':>12} {'peak alloc':>12} {'peak RSS':>10}")
    for r in rows:
        print(f"{r['calls']:>8,} {r['bytes'] / 1e6:>10.1f}MB {r['peak_alloc'] / 1e6:>10.2f}MB {r['hwm_kb'] / 1e3:>8.1f}MB")
    first, last = rows[0], rows[-1]
    print(
        f"ratio {last['calls'] / first['calls']:.0f}x calls: peak alloc {last['peak_alloc'] / first['peak_alloc']:.2f}x, "
        f"peak RSS {last['hwm_kb'] / first['hwm_kb']:.2f}x"
    )
    for r in rows:
        assert r["calls"] == r["meter_calls"], "every call counted once"
    return 0


if __name__ == "__main__":
    sys.exit(main())
