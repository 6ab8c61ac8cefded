"""Benchmark memory over a long session: parser + meter + headless view, 100,000 events.

Run: ``python bench/bench_memory.py [--events N]``

Streams the recorded ``tests/data/claude/tool_turn.jsonl`` turn over and over
(fresh message ids each time, generated on the fly so the input itself takes
no memory) through :class:`ClaudeParser`, :class:`Meter` and a
:class:`HeadlessView` writing to /dev/null, the way a launch handles them.
Prints resident memory after 1,000 and after N (default 100,000) normalized
events, and the growth (target < 5 MB).

Then the same pipeline in process over ``--noise-lines`` (default 1,000,000)
lines that are not JSON, and a whole ``agentlaunch run`` whose CLI (the
stand-in ``tests/support/hostile_claude.py``) prints that many non-JSON lines
before one valid call: agentlaunch's own peak RSS (its ``VmHWM``, the CLI
not included), beside the same run with no such lines (target < 50 MB).
``--noise-lines 0`` skips both.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agentlaunch.events import TurnEnd  # noqa: E402
from agentlaunch.live.view import HeadlessView  # noqa: E402
from agentlaunch.providers.claude_parser import ClaudeParser  # noqa: E402
from agentlaunch.usage.meter import Meter  # noqa: E402

RECORDED = REPO / "tests" / "data" / "claude" / "tool_turn.jsonl"
TARGET_MB = 5.0
NOISE_TARGET_MB = 50.0
STAND_IN = REPO / "tests" / "support" / "hostile_claude.py"
NOISE = "not JSON: a CLI that prints progress forever " * 2  # what the stand-in prints, line by line
# Runs agentlaunch in this interpreter and reports its own peak RSS when it exits.
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the forking parent across exec.
WRAPPER = (
    "import atexit, sys\n"
    "hwm = lambda: next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM'))\n"
    "atexit.register(lambda: sys.stderr.write('\\nBENCH_MAXRSS_KB %s\\n' % hwm()))\n"
    "sys.argv = ['agentlaunch', *sys.argv[1:]]\n"
    "from agentlaunch.entry import main\n"
    "main()\n"
)
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
    parser.add_argument("--noise-lines", type=int, default=1_000_000, help="non-JSON lines for the noise runs (0: skip)")
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
    if args.noise_lines:
        noise_in_process(args.noise_lines)
        noise_through_run(args.noise_lines)
    return 0


def noise_in_process(lines: int) -> None:
    """Non-JSON lines through parser, meter and headless view: RSS before and after."""
    with open(os.devnull, "w") as devnull:
        meter = Meter(model="claude-sonnet-4-5")
        view = HeadlessView(meter, stdout=devnull, stderr=devnull)
        claude = ClaudeParser()
        gc.collect()
        before = rss_mb()
        for i in range(lines):
            for event in claude.feed(f"{NOISE} {i}"):
                meter.add(event)
                view.event(event)
        gc.collect()
        after = rss_mb()
    growth = after - before
    verdict = "ok" if growth < TARGET_MB else "MISSED"
    print(
        f"{lines:,} non-JSON lines in process: RSS {before:.1f} → {after:.1f} MB, growth {growth:+.1f} MB "
        f"(target < {TARGET_MB} MB) {verdict}"
    )


def noise_through_run(lines: int) -> None:
    """``agentlaunch run`` on the stand-in CLI: agentlaunch's peak RSS with ``lines`` non-JSON lines, and with none."""
    peaks = {}
    for count in (0, lines):
        with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
            root = Path(tmp)
            agent = root / "agents" / "hostile"
            agent.mkdir(parents=True)
            (agent / "agent.yaml").write_text(f"provider: claude\nmodel: claude-sonnet-4-5\ncommand: {STAND_IN}\n")
            env = dict(
                os.environ,
                HOME=str(root / "home"),
                AGENTLAUNCH_STATE_DIR=str(root / "state"),
                AGENTLAUNCH_CONFIG_DIR=str(root / "config"),
                XDG_CONFIG_HOME=str(root / "xdg"),
                PYTHONPATH=str(REPO),
                HOSTILE_NOISE_LINES=str(count),
            )
            argv = [sys.executable, "-c", WRAPPER, "run", "hostile", "hi", "--agents-dir", str(root / "agents")]
            # A warm-up launch first (not measured), as a user's second launch is: the agent.yaml memo and the
            # price cache are in place, so neither pydantic nor genai-prices is loaded by the measured run.
            subprocess.run(argv, env={**env, "HOSTILE_NOISE_LINES": "0"}, cwd=root, capture_output=True, timeout=900)
            started = time.perf_counter()
            done = subprocess.run(argv, env=env, cwd=root, capture_output=True, timeout=900)
            took = time.perf_counter() - started
        marker = [line for line in done.stderr.decode(errors="replace").splitlines() if line.startswith("BENCH_MAXRSS_KB")]
        if not marker:
            print(f"run with {count:,} noise lines: no RSS report (exit {done.returncode}): {done.stderr[-500:]!r}")
            return
        peaks[count] = int(marker[-1].split()[1]) / 1024
        answered = done.stdout.decode(errors="replace").strip()
        print(
            f"agentlaunch run, {count:>9,} non-JSON lines: peak RSS {peaks[count]:6.1f} MB, exit {done.returncode}, "
            f"{took:.1f} s, answer {answered!r}"
        )
    peak = peaks[lines]
    verdict = "ok" if peak < NOISE_TARGET_MB else "MISSED"
    print(f"peak with noise ÷ without: {peak / peaks[0]:.2f}  (target < {NOISE_TARGET_MB} MB) {verdict}")


if __name__ == "__main__":
    sys.exit(main())
