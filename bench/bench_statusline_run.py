"""Benchmark one run of Claude Code's status-line command in a native launch (what Claude Code starts on each update).

Run: ``python bench/bench_statusline_run.py [--runs N] [--before CHECKOUT]``

Runs the status-line command as agentlaunch's settings give it to Claude Code (``python -I -S -c`` importing
``claude_statusline`` from this tree: ``hook_socket.script_argv``), with the status-line JSON Claude Code sent
after a tool turn (tests/data/claude_tui, 2.1.332) on stdin, a live status record, and a socket nobody listens on
(the report is lost, as with a busy launch: the cost is the same), and measures the user+sys CPU of each run
(RUSAGE_CHILDREN). Against ``python -I -S -c pass`` (the floor of any Python status line), the same script run by
its path (``python -I -S claude_statusline.py CONFIG``: compiled from source at each run, as before
2026-12-03), and with ``--before CHECKOUT`` the script from another checkout run by its path, alternating run by
run. Prints the medians, the ratios and the middle half of the per-round ratios. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agentlaunch.providers.native.hook_socket import script_argv  # noqa: E402

SCRIPT = Path("agentlaunch/providers/native/claude_statusline.py")
DATA = REPO / "tests" / "data" / "claude_tui" / "tool_turn" / "reports.jsonl"
RECORD = {"window": 200_000, "window_source": "provider", "context": 13_015, "to_compaction": 153_985, "cost": "$0.0159"}


def cpu_ms(argv: list[str], stdin: bytes) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, input=stdin, capture_output=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv}: exit {done.returncode}: {done.stderr.decode()}")
    return (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60, help="rounds (each runs every side once)")
    parser.add_argument("--before", type=Path, help="the same script from this checkout of agentlaunch")
    args = parser.parse_args()
    reports = [json.loads(line) for line in DATA.read_text().splitlines()]
    payload = json.dumps([r["payload"] for r in reports if r["event"] == "statusline"][-1]).encode()
    with tempfile.TemporaryDirectory(prefix="bench-sl-") as folder:
        record, config = Path(folder) / "status.json", Path(folder) / "statusline.json"
        record.write_text(json.dumps(RECORD))
        config.write_text(
            json.dumps(
                {"socket": str(Path(folder) / "nobody.sock"), "status": str(record), "user_command": None, "user_timeout": 1.5}
            )
        )
        sides = {
            "status line": script_argv(sys.executable, REPO / SCRIPT, str(config)),
            "by its path": [sys.executable, "-I", "-S", str(REPO / SCRIPT), str(config)],
            "python -I -S -c pass": [sys.executable, "-I", "-S", "-c", "pass"],
        }
        if args.before:
            sides["status line before"] = [sys.executable, "-I", "-S", str(args.before / SCRIPT), str(config)]
        got: dict[str, list[float]] = {name: [] for name in sides}
        for _ in range(args.runs):
            for name, argv in sides.items():
                got[name].append(cpu_ms(argv, payload))
    ours = got["status line"]
    print(f"{args.runs} rounds, CPU of one run (median, ms):")
    for name, values in got.items():
        if name == "status line":
            print(f"  {name:<22}{statistics.median(values):7.1f}")
            continue
        ratios = [a / b for a, b in zip(ours, values, strict=True) if b]
        q1, _, q3 = statistics.quantiles(ratios, n=4)
        ratio = statistics.median(ours) / statistics.median(values)
        said = f"status line / this {ratio:.3f} (per round, middle half {q1:.2f}-{q3:.2f})"
        print(f"  {name:<22}{statistics.median(values):7.1f}   {said}")


if __name__ == "__main__":
    main()
