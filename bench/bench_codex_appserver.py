"""Codex headless turns: ``codex exec`` per turn (today's path) against one ``codex app-server`` per launch.

Run: ``python bench/bench_codex_appserver.py [--pairs 8] [--turns 4]``

Each pair runs the same conversation of ``--turns`` turns both ways, in alternating order, against the fake
Responses API on 127.0.0.1 with an isolated CODEX_HOME (a fresh one per conversation):

* exec: ``codex exec --json --skip-git-repo-check "PROMPT"``, then ``codex exec --json ... resume THREAD
  "PROMPT"`` for each later turn; a turn is timed from the process start to its exit.
* app-server: ``codex app-server`` started once; ``initialize``, ``thread/start``, then ``turn/start`` for
  each turn, timed from the request to ``turn/completed``. The server's start, the handshake and
  ``thread/start`` are timed apart ("start") and also shown added to the first turn.

Prints the medians per turn position and the ratios exec / app-server (above 1: the app-server is faster).
Figures only; no assertion.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agentlaunch.fakeapi.responses import (  # noqa: E402
    ResponsesFake,
    ResponsesScript,
    ResponsesUsage,
    TextReply,
    codex_quiet_args,
    prepare_codex_home,
)
from testbed.cli_turn import parse_events  # noqa: E402
from testbed.clis import ensure_cli  # noqa: E402
from testbed.codex_appserver import StdioRpc  # noqa: E402


def replies(turns: int) -> ResponsesScript:
    return ResponsesScript([TextReply(f"answer {i}", ResponsesUsage(9000 + i, 8000, 7)) for i in range(turns)])


def exec_conversation(codex: Path, root: Path, turns: int) -> list[float]:
    with ResponsesFake(replies(turns)) as fake:
        work = root / "work"
        work.mkdir()
        env = prepare_codex_home(root / "home", fake.base_url, request_max_retries=0, stream_max_retries=0)
        base = [str(codex), *codex_quiet_args(), "exec", "--json", "--skip-git-repo-check"]
        times, thread = [], None
        for i in range(turns):
            argv = [*base, *(["resume", thread] if thread else []), "--", f"prompt {i}"]
            t0 = time.perf_counter()
            done = subprocess.run(argv, env=env, cwd=work, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
            times.append(time.perf_counter() - t0)
            events = parse_events(done.stdout)
            if done.returncode != 0 or not any(e.get("type") == "turn.completed" for e in events):
                raise SystemExit(f"exec turn {i} failed ({done.returncode}): {done.stderr[-1000:]}")
            thread = thread or next(e["thread_id"] for e in events if e.get("type") == "thread.started")
        return times


def appserver_conversation(codex: Path, root: Path, turns: int) -> tuple[float, list[float]]:
    with ResponsesFake(replies(turns)) as fake:
        work = root / "work"
        work.mkdir()
        env = prepare_codex_home(root / "home", fake.base_url, request_max_retries=0, stream_max_retries=0)
        t0 = time.perf_counter()
        rpc = StdioRpc([str(codex), *codex_quiet_args(), "app-server"], env, work)
        try:
            rpc.initialize()
            thread = rpc.result("thread/start", {"cwd": str(work)})["thread"]["id"]
            start = time.perf_counter() - t0
            times = []
            for i in range(turns):
                t1 = time.perf_counter()
                done = rpc.turn(thread, f"prompt {i}", timeout=120)
                times.append(time.perf_counter() - t1)
                if not any(m.get("method") == "thread/tokenUsage/updated" for m in done):
                    raise SystemExit(f"app-server turn {i}: no thread/tokenUsage/updated")
        finally:
            rpc.close()
        return start, times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--turns", type=int, default=4)
    args = parser.parse_args()
    codex = ensure_cli("codex")
    exec_runs: list[list[float]] = []
    server_runs: list[tuple[float, list[float]]] = []
    with tempfile.TemporaryDirectory(prefix="bench-appserver-") as tmp:
        for pair in range(args.pairs + 1):  # the first pair warms the page cache and is not counted
            order = ("exec", "server") if pair % 2 == 0 else ("server", "exec")
            for side in order:
                root = Path(tmp) / f"{pair}-{side}"
                root.mkdir()
                if side == "exec":
                    run_e = exec_conversation(codex, root, args.turns)
                    if pair:
                        exec_runs.append(run_e)
                else:
                    run_s = appserver_conversation(codex, root, args.turns)
                    if pair:
                        server_runs.append(run_s)
    med = statistics.median
    start = med(s for s, _ in server_runs)
    print(f"codex {codex}; {args.pairs} pairs (alternating order) of {args.turns}-turn conversations; medians in ms")
    print(f"app-server start + initialize + thread/start: {start * 1000:7.0f}")
    print(f"{'turn':>6} {'exec':>8} {'app-server':>11} {'ratio exec/app-server':>22}")
    for i in range(args.turns):
        e = med(r[i] for r in exec_runs)
        s = med(r[1][i] for r in server_runs)
        print(f"{i + 1:>6} {e * 1000:8.0f} {s * 1000:11.0f} {e / s:22.1f}")
    e_first = med(r[0] for r in exec_runs)
    s_first = med(r[0] + r[1][0] for r in server_runs)
    e_all = med(sum(r) for r in exec_runs)
    s_all = med(r[0] + sum(r[1]) for r in server_runs)
    print(
        f"first turn with the server's start: exec {e_first * 1000:.0f}, app-server {s_first * 1000:.0f}, "
        f"ratio {e_first / s_first:.2f}"
    )
    print(f"whole conversation: exec {e_all * 1000:.0f}, app-server {s_all * 1000:.0f}, ratio {e_all / s_all:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
