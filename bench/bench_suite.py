"""Where the suite's time goes, and what a change to it saved: figures from ``--durations=0`` runs.

Run: ``python bench/bench_suite.py BEFORE.log [AFTER.log]``, each the output of
``python -m pytest --durations=0`` (the whole suite, or the same part of it before and after).

Or each the ``.jsonl`` of a run with ``-p tests.support.cpu_times`` (``$AGENTLAUNCH_CPU_TIMES``): then the
figures are CPU seconds (the test's process and the children it waited for), the steadier figure on 2 shared
cores, where a test's wall time is mostly its wait for a core.

Wall time on a shared machine is noise; the summed per-test time (setup + call + teardown of every test, as
pytest reports it) is the figure a change to the tests moves. It prints each log's sum, its share in tests that
start each real CLI (by the test's file or id naming it), the slowest files, the pytest wall time pytest reports,
and, given two logs, the ratio after/before and the files that moved most. Figures only: no assertion.
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

LINE = re.compile(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(\S+)")
WALL = re.compile(r" in ([0-9.]+)s")


def durations(log: Path) -> dict[str, float]:
    """Each test id's setup + call + teardown seconds (or, from a ``.jsonl``, its CPU seconds)."""
    total: dict[str, float] = defaultdict(float)
    if log.suffix == ".jsonl":
        for line in log.read_text().splitlines():
            test = json.loads(line)
            total[test["id"]] += test["self"] + test["children"]
        return dict(total)
    for line in log.read_text(errors="replace").splitlines():
        match = LINE.match(line)
        if match:
            total[match.group(3)] += float(match.group(1))
    return dict(total)


def wall(log: Path) -> float | None:
    found = [
        float(m.group(1))
        for line in log.read_text(errors="replace").splitlines()
        if line.startswith("=") and (m := WALL.search(line))
    ]
    return found[-1] if found else None


def by_file(times: dict[str, float]) -> dict[str, float]:
    files: dict[str, float] = defaultdict(float)
    for test, seconds in times.items():
        files[test.split("::")[0]] += seconds
    return dict(files)


def report(name: str, log: Path) -> dict[str, float]:
    times = durations(log)
    total = sum(times.values())
    what = "summed CPU" if log.suffix == ".jsonl" else f"pytest wall {wall(log)} s, summed"
    print(f"{name}: {log}  {len(times)} tests  {what} {total:.0f} s")
    for cli in ("gemini", "codex", "claude"):
        share = sum(s for t, s in times.items() if cli in t.lower())
        print(f"  tests naming {cli}: {share:.0f} s ({100 * share / max(total, 1e-9):.0f}%)")
    print("  slowest files:")
    for file, seconds in sorted(by_file(times).items(), key=lambda kv: -kv[1])[:12]:
        print(f"    {seconds:7.1f} s  {file}")
    return times


def main(argv: list[str]) -> None:
    if not 1 <= len(argv) <= 2:
        raise SystemExit(__doc__)
    before = report("before", Path(argv[0]))
    if len(argv) == 1:
        return
    after = report("after", Path(argv[1]))
    print(f"summed after/before: {sum(after.values()) / max(sum(before.values()), 1e-9):.2f}")
    files_before, files_after = by_file(before), by_file(after)
    moved = {f: files_after.get(f, 0.0) - files_before.get(f, 0.0) for f in {*files_before, *files_after}}
    print("files that moved most (after - before):")
    for file, delta in sorted(moved.items(), key=lambda kv: abs(kv[1]), reverse=True)[:15]:
        print(f"  {delta:+7.1f} s  {file}  ({files_before.get(file, 0.0):.1f} -> {files_after.get(file, 0.0):.1f})")


if __name__ == "__main__":
    main(sys.argv[1:])
