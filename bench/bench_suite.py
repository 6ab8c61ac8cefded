"""Where the suite's time goes, and what a change to it saved: figures from ``--durations=0`` runs.

Run: ``python bench/bench_suite.py BEFORE.log [AFTER.log]``, each the output of
``python -m pytest --durations=0`` (the whole suite, or the same part of it before and after).

Or each the ``.jsonl`` of a run with ``-p tests.support.cpu_times`` (``$AGENTLAUNCH_CPU_TIMES``): then the
figures are CPU seconds (the test's process and the children it waited for), the steadier figure on 2 shared
cores, where a test's wall time is mostly its wait for a core. Its lines also say which worker ran each test from
when to when: the report then adds the run's timeline (each worker's last test's end; how long k workers were in a
test, for each k; and the tail: the time from the first worker running dry to the run's last test, and the tests
still running in it).

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
from typing import Any

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


def timeline(log: Path) -> list[dict[str, Any]]:
    """The ``.jsonl`` lines that say when and where their test ran (``worker``, ``start``, ``end``)."""
    if log.suffix != ".jsonl":
        return []
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    return [line for line in lines if "start" in line]


def report_timeline(lines: list[dict[str, Any]]) -> None:
    """Each worker's share and idle end; the tail, when fewer workers than started were still running tests."""
    if not lines:
        return
    first = min(float(line["start"]) for line in lines)
    last = max(float(line["end"]) for line in lines)
    workers: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in lines:
        workers[str(line["worker"])].append(line)
    print(f"  timeline: first test's start to last test's end {last - first:.0f} s, {len(workers)} workers")
    ends = {}
    for worker, tests in sorted(workers.items()):
        ends[worker] = max(float(t["end"]) for t in tests)
        busy = sum(float(t["end"]) - float(t["start"]) for t in tests)
        cpu = sum(float(t["self"]) + float(t["children"]) for t in tests)
        print(
            f"    {worker}: {len(tests)} tests, busy {busy:.0f} s (CPU {cpu:.0f} s), "
            f"last end at {ends[worker] - first:.0f} s (idle {last - ends[worker]:.0f} s before the run's end)"
        )
    print("  seconds with k workers running a test: " + ", ".join(f"{k}: {s:.0f}" for k, s in busy_counts(lines).items()))
    dry = min(ends.values())
    tail = sorted((t for t in lines if float(t["end"]) >= dry), key=lambda t: float(t["start"]))
    print(f"  tail: {last - dry:.0f} s from the first worker's last test to the run's end; tests running in it:")
    for test in tail[-12:]:
        start, end = float(test["start"]) - first, float(test["end"]) - first
        print(f"    {start:6.0f} -> {end:4.0f} s  {test['worker']}  {test['id']}")


def busy_counts(lines: list[dict[str, Any]]) -> dict[int, float]:
    """From the first test's start to the last one's end, how long exactly k workers were in a test, for each k (a
    worker between two tests, or waiting for the CLIs' install outside its test, counts as not in one)."""
    events = sorted([(float(t["start"]), 1) for t in lines] + [(float(t["end"]), -1) for t in lines])
    seconds: dict[int, float] = defaultdict(float)
    running, at = 0, events[0][0]
    for when, step in events:
        seconds[running] += when - at
        running, at = running + step, when
    return {k: seconds[k] for k in sorted(seconds, reverse=True)}


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
    report_timeline(timeline(log))
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
