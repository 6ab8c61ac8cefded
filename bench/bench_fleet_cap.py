"""Benchmark a fleet under one shared daily cap: how far N agents started at once overspend it.

Run: ``python bench/bench_fleet_cap.py [--agents N] [--reps R] [--cap-calls K] [--prompt TEXT] [--delay S]``

Each repetition makes a fresh state and config directory, N agents (``f0`` ..
``fN-1``) on the offline ``fake`` provider, priced by a ``pricing.yaml`` so
that one call costs a few dollars, and a fleet-wide ``budget: {daily_usd:
...}`` in ``config.yaml`` of K calls (2.5 by default, so the third call
crosses it). It then starts the N launches at once (``agentlaunch run fI
PROMPT``, headless) and waits for all of them.

The fake CLI runs through a wrapper (the agent's ``command:``) that writes the
wall time at which each model call starts, so the figures say which calls were
truly in flight: the *crossing* call is the stored call that brought the
day's spend to the cap (the store's order); a call counts as in flight at the
crossing when it started before the crossing call was stored (that call
included). A *late* call started after it: nothing can excuse it, the bound
(spent <= cap + the calls in flight) holds only when there is none.

Printed per repetition: spent, cap, spent / cap, calls, calls in flight when
crossed, late calls and the exit codes; then the median and the worst ratio.
Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Expensive on purpose (as tests/test_budget.py): one fake call of about 3,300 tokens costs a few dollars.
RATES = "fake-1: {input: 1000, output: 1000, cache_read: 1000, cache_write: 1000}\n"

# The fake CLI, with each model call's start written down (wall time, session id): the store only knows when a
# call was stored, and "in flight" is about when it started.
WRAPPER = """#!{python}
import os, sys, time
from agentlaunch.providers import fake_cli

_call = fake_cli.FakeCLI.call


def call(self, *args, **kwargs):
    with open(os.environ["FLEET_CALL_LOG"], "a") as log:  # O_APPEND: one short line per write, whole
        log.write(f"{{time.time():.6f}} {{self.session_id}}\\n")
    return _call(self, *args, **kwargs)


fake_cli.FakeCLI.call = call
sys.exit(fake_cli.main())
"""


@dataclass(frozen=True)
class Result:
    """One repetition's figures."""

    spent: float
    cap: float
    calls: int
    in_flight: int
    late: int
    codes: Counter[int]

    @property
    def ratio(self) -> float:
        return self.spent / self.cap


def make_fleet(root: Path, agents: int, delay: float) -> tuple[Path, dict[str, str]]:
    """Agents ``f0``.. on the fake provider through the call-logging wrapper; their directory and environment."""
    agents_dir = root / "agents"
    wrapper = root / "fake-cli"
    wrapper.write_text(WRAPPER.format(python=sys.executable))
    wrapper.chmod(0o755)
    for i in range(agents):
        folder = agents_dir / f"f{i}"
        folder.mkdir(parents=True)
        (folder / "agent.yaml").write_text(f"provider: fake\nmodel: fake-1\nworking_dir: '@scratch'\ncommand: {wrapper}\n")
    (agents_dir / "pricing.yaml").write_text(RATES)
    env = dict(os.environ)
    for var in [v for v in env if v.startswith("AGENTLAUNCH_")]:
        del env[var]
    env.update(
        HOME=str(root / "home"),
        AGENTLAUNCH_STATE_DIR=str(root / "state"),
        AGENTLAUNCH_CONFIG_DIR=str(root / "config"),
        AGENTLAUNCH_TMUX_SOCKET=f"al-bench-none-{os.getpid()}",
        FLEET_CALL_LOG=str(root / "calls.log"),
        AGENTLAUNCH_FAKE_DELAY=str(delay),  # per streamed chunk: a call lasts about 10 of them
        PYTHONPATH=str(REPO),
    )
    (root / "config").mkdir()
    return agents_dir, env


def one_call_cost(prompt: str, delay: float) -> float:
    """What one call of ``prompt`` costs on a fresh session (the cap is a multiple of it)."""
    with tempfile.TemporaryDirectory(prefix="al-fleet-probe-") as tmp:
        agents_dir, env = make_fleet(Path(tmp), 1, delay)
        done = run_one(agents_dir, env, "f0", prompt)
        if done.returncode != 0:
            raise SystemExit(f"the probe launch failed ({done.returncode}): {done.stderr.decode()}")
        return stored_calls(Path(tmp))[0][2]  # the first call: a fresh session's, as each agent's


def run_one(agents_dir: Path, env: dict[str, str], agent: str, prompt: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "agentlaunch", "run", agent, prompt, "--agents-dir", str(agents_dir)],
        env=env,
        cwd=agents_dir.parent,
        capture_output=True,
        timeout=300,
    )


def stored_calls(root: Path) -> list[tuple[float, str, float]]:
    """(at, session id, cost) of every stored call, in the order the store took them."""
    conn = sqlite3.connect(root / "state" / "usage.sqlite3")
    try:
        return [(r[0], r[1], r[2] or 0.0) for r in conn.execute("SELECT at, session_id, cost_usd FROM calls ORDER BY id")]
    finally:
        conn.close()


def call_starts(root: Path) -> dict[str, list[float]]:
    """session id -> the start times of its calls, in order."""
    starts: dict[str, list[float]] = {}
    log = root / "calls.log"
    for line in log.read_text().splitlines() if log.exists() else []:
        at, session = line.split()
        starts.setdefault(session, []).append(float(at))
    return starts


def repetition(agents: int, cap: float, prompt: str, delay: float) -> Result:
    with tempfile.TemporaryDirectory(prefix="al-fleet-") as tmp:
        root = Path(tmp)
        agents_dir, env = make_fleet(root, agents, delay)
        (root / "config" / "config.yaml").write_text(f"budget: {{daily_usd: {cap!r}}}\n")
        cmd = [sys.executable, "-m", "agentlaunch", "run"]
        procs = [
            subprocess.Popen(
                [*cmd, f"f{i}", prompt, "--agents-dir", str(agents_dir)],
                env=env,
                cwd=root,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for i in range(agents)
        ]
        codes = Counter(p.wait(timeout=600) for p in procs)
        rows, starts = stored_calls(root), call_starts(root)
        spent = sum(cost for _, _, cost in rows)
        running, crossed_at, crossing = 0.0, None, None
        for index, (at, _, cost) in enumerate(rows):
            running += cost
            if running >= cap:
                crossed_at, crossing = at, index
                break
        in_flight = late = 0
        if crossed_at is not None and crossing is not None:
            # Match each stored call to its start: the n-th stored call of a session is its n-th started call.
            seen: Counter[str] = Counter()
            for index, (_, session, _) in enumerate(rows):
                nth = seen[session]
                seen[session] += 1
                if index < crossing:
                    continue
                started = starts.get(session, [])
                began = started[nth] if nth < len(started) else float("inf")
                if began <= crossed_at:
                    in_flight += 1
                else:
                    late += 1
        return Result(spent, cap, len(rows), in_flight, late, codes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--cap-calls", type=float, default=2.5, help="the cap, in calls of the prompt (2.5: the 3rd crosses)")
    parser.add_argument("--prompt", default="hello", help="each agent's one turn ('/tool hello': two calls, a tool between)")
    parser.add_argument(
        "--delay", type=float, default=0.2, help="seconds per streamed chunk of the fake CLI (0.2: a call streams for about 2 s)"
    )
    args = parser.parse_args(argv)
    cost = one_call_cost(args.prompt, args.delay)
    cap = round(cost * args.cap_calls, 6)
    print(
        f"{args.agents} agents at once, prompt {args.prompt!r}, one call ${cost:.4f}, cap ${cap:.4f} "
        f"({args.cap_calls} calls), {args.delay} s per streamed chunk"
    )
    print(f"{'rep':>3} {'spent':>9} {'ratio':>6} {'calls':>5} {'in flight':>9} {'late':>4}  exits")
    results = []
    for rep in range(args.reps):
        t0 = time.perf_counter()
        r = repetition(args.agents, cap, args.prompt, args.delay)
        results.append(r)
        exits = " ".join(f"{code}x{n}" for code, n in sorted(r.codes.items()))
        print(
            f"{rep + 1:>3} {r.spent:>9.4f} {r.ratio:>6.2f} {r.calls:>5} {r.in_flight:>9} {r.late:>4}  {exits}"
            f"  ({time.perf_counter() - t0:.1f} s)"
        )
    ratios = [r.ratio for r in results]
    print(
        f"spent / cap: median {statistics.median(ratios):.2f}, worst {max(ratios):.2f}; "
        f"late calls (started after the crossing was stored): {sum(r.late for r in results)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
