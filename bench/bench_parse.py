"""Benchmark the Claude Code parser: normalized events/s against bare ``json.loads`` lines/s.

Run: ``python bench/bench_parse.py [--lines N] [--repeat R]``

Builds a stream of at least N lines (default 100,000) by repeating the
recorded ``tests/data/claude/tool_turn.jsonl`` (a tool turn: two model calls),
giving every repetition fresh message ids so each call counts again, then
times (best of R passes) a fresh :class:`ClaudeParser` over the whole stream
and a bare ``json.loads`` of every line. Prints both rates and the ratio
events/s ÷ lines/s (target >= 0.5), and the like-for-like ratio of lines/s.

``--big-mb M`` (default 50) also times one Claude ``tool_result`` line of M MB
(a command's long output: words and newlines): the parser's MB/s beside bare
``json.loads`` of the same line. Summarizing must not cost more than parsing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agentlaunch.events import CallUsage  # noqa: E402
from agentlaunch.providers.claude_parser import ClaudeParser  # noqa: E402

RECORDED = REPO / "tests" / "data" / "claude" / "tool_turn.jsonl"
TARGET = 0.5


def build_stream(min_lines: int) -> list[str]:
    """Repetitions of the recorded turn, each with its own message ids."""
    turn = [line for line in RECORDED.read_text("utf-8").splitlines() if line.strip()]
    ids = sorted({json.loads(line)["event"]["message"]["id"] for line in turn if '"message_start"' in line})
    lines: list[str] = []
    rep = 0
    while len(lines) < min_lines:
        for line in turn:
            for n, msg_id in enumerate(ids):
                line = line.replace(msg_id, f"msg_bench_{rep:06d}_{n}")
            lines.append(line)
        rep += 1
    return lines


def best_of(repeat: int, work: Callable[[], int]) -> tuple[float, int]:
    """Shortest wall time of ``repeat`` runs of ``work`` and what it returned."""
    best = float("inf")
    result = 0
    for _ in range(repeat):
        start = time.perf_counter()
        result = work()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000, help="at least this many lines (default 100,000)")
    parser.add_argument("--repeat", type=int, default=5, help="passes per measurement; the best counts (default 5)")
    parser.add_argument("--big-mb", type=int, default=50, help="size of the one big tool_result line, MB (0: skip)")
    args = parser.parse_args()
    lines = build_stream(args.lines)

    def bare() -> int:
        loads = json.loads
        for line in lines:
            loads(line)
        return len(lines)

    def parse() -> int:
        feed = ClaudeParser().feed
        count = 0
        for line in lines:
            count += len(feed(line))
        return count

    json_time, _ = best_of(args.repeat, bare)
    parse_time, events = best_of(args.repeat, parse)
    check = ClaudeParser()  # untimed: every repetition's calls must count
    calls = sum(isinstance(e, CallUsage) for line in lines for e in check.feed(line))
    expected_calls = 2 * len(lines) // sum(1 for line in RECORDED.read_text().splitlines() if line.strip())
    lines_per_s = len(lines) / json_time
    events_per_s = events / parse_time
    parser_lines_per_s = len(lines) / parse_time
    ratio = events_per_s / lines_per_s
    print(f"stream: {len(lines):,} lines, {sum(map(len, lines)) / 1e6:.1f} MB, {events:,} normalized events")
    print(f"model calls counted: {calls:,} (expected {expected_calls:,})")
    print(f"bare json.loads      : {lines_per_s:12,.0f} lines/s")
    print(f"ClaudeParser         : {events_per_s:12,.0f} events/s  ({parser_lines_per_s:,.0f} lines/s)")
    print(f"ratio events/s ÷ json lines/s : {ratio:.2f}  (target >= {TARGET}) {'ok' if ratio >= TARGET else 'MISSED'}")
    print(f"ratio lines/s ÷ json lines/s  : {parser_lines_per_s / lines_per_s:.2f}  (like for like)")
    if args.big_mb:
        big_line(args.big_mb, min(args.repeat, 3))
    return 0


def big_line(mb: int, repeat: int) -> None:
    """One tool_result line of ``mb`` MB through the parser, beside bare json.loads of it."""
    words = "output line 0123456789 of a command that prints a lot\n"
    text = words * (mb * 1_000_000 // len(words))
    line = json.dumps({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t", "content": text}]}})
    size = len(line) / 1e6
    json_time, _ = best_of(repeat, lambda: len(json.loads(line)))
    parse_time, _ = best_of(repeat, lambda: len(ClaudeParser().feed(line)))
    print(f"one tool_result line of {size:.0f} MB:")
    print(f"  bare json.loads    : {size / json_time:8,.0f} MB/s")
    print(f"  ClaudeParser.feed  : {size / parse_time:8,.0f} MB/s  (ratio {json_time / parse_time:.2f} of json.loads)")


if __name__ == "__main__":
    sys.exit(main())
