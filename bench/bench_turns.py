"""Benchmark per-turn spawn overhead: a turn of `agentlaunch run` on Codex and Gemini vs the bare CLI command.

Run: ``python bench/bench_turns.py [--runs N] [--provider codex|gemini]``

Codex and Gemini run one CLI process per turn. Inside a running agentlaunch
session (one Launch, turns sent one after another, as in the chat), a turn is
timed from the user's message to the turn's end, including the spawn, the
stdout parsing, metering, pricing and the store write. The bare side runs the
same argv agentlaunch built for that turn (`subprocess.run`, stdin at EOF, no
PTY). Runs alternate so machine load hits both alike; one warm-up of each is
not counted. Prints medians and their ratio (target <= 1.15).

Codex: this measures the ``codex exec`` route (a launch built here is no line chat; the agent also gets
``--sandbox read-only``, Codex's default, which keeps that route whatever the launch); Codex's line chat goes
through one app-server per launch, measured by ``bench_codex_appserver.py``.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agentlaunch.fakeapi import gemini as gfake  # noqa: E402
from agentlaunch.fakeapi import responses as cfake  # noqa: E402

FALLBACK = Path("/tmp/al-clis/node_modules/.bin")
TARGET = 1.15


def find_cli(name: str) -> Path:
    if not os.environ.get("AGENTLAUNCH_TEST_CLI_CACHE") and (FALLBACK / name).exists():
        return FALLBACK / name
    from testbed.clis import ensure_cli

    return ensure_cli(name)  # type: ignore[arg-type]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--provider", choices=["codex", "gemini"], default="codex")
    args = parser.parse_args()
    binary = find_cli(args.provider)
    with tempfile.TemporaryDirectory(prefix="bench-turns-") as tmp_name:
        tmp = Path(tmp_name)
        home, work, agents = tmp / "home", tmp / "work", tmp / "agents"
        for d in (home, work, agents / "bench"):
            d.mkdir(parents=True)
        model = "gpt-5.5" if args.provider == "codex" else "gemini-2.5-pro"
        (agents / "bench" / "agent.yaml").write_text(
            yaml.safe_dump(
                {
                    "provider": args.provider,
                    "command": str(binary),
                    "model": model,
                    "working_dir": str(work),
                    "provider_flags": ["--sandbox", "read-only"] if args.provider == "codex" else [],
                }
            )
        )
        (agents / "bench" / "soul.md").write_text("You are a terse benchmark agent.\n")
        fake: cfake.ResponsesFake | gfake.GeminiFake
        if args.provider == "codex":
            fake = cfake.ResponsesFake().start()
            env = cfake.prepare_codex_home(home, fake.base_url, request_max_retries=0, stream_max_retries=0)
        else:
            fake = gfake.GeminiFake().start()
            env = gfake.prepare_gemini_home(home, fake.base_url, max_attempts=1)
        env.update({"AGENTLAUNCH_STATE_DIR": str(tmp / "state"), "AGENTLAUNCH_CONFIG_DIR": str(tmp / "config")})
        os.environ.clear()
        os.environ.update(env)

        from agentlaunch.launch.build import build_launch
        from agentlaunch.launch.options import LaunchOptions
        from agentlaunch.live.view import HeadlessView
        from agentlaunch.usage.meter import Meter

        def views(meter: Meter) -> list[HeadlessView]:
            return [HeadlessView(meter, stdout=io.StringIO(), stderr=io.StringIO(), quiet=True)]

        launch = build_launch(LaunchOptions(agent="bench", agents_dir=agents), views, status=False)
        launch.start()
        ours: list[float] = []
        bare: list[float] = []
        try:
            for i in range(args.runs + 1):
                start = time.perf_counter()
                outcome = launch.run_turn(f"turn {i}")
                elapsed = time.perf_counter() - start
                assert outcome.end is not None and not outcome.end.is_error, outcome
                # The same command agentlaunch would run for the next turn, run bare.
                plan = launch.adapter.plan_turn(launch.spec, launch.command, launch.provider_state, f"bare {i}")
                b0 = time.perf_counter()
                done = subprocess.run(
                    plan.argv, env=launch.env, cwd=work, stdin=subprocess.DEVNULL, capture_output=True, timeout=120
                )
                b1 = time.perf_counter() - b0
                assert done.returncode == 0, done.stderr
                if i:  # the first of each is a warm-up
                    ours.append(elapsed)
                    bare.append(b1)
        finally:
            launch.close(0)
            fake.stop()
    mo, mb = statistics.median(ours), statistics.median(bare)
    print(f"provider            {args.provider}")
    print(f"runs                {args.runs} each, alternating")
    print(f"agentlaunch turn    median {mo:.3f} s (min {min(ours):.3f}, max {max(ours):.3f})")
    print(f"bare CLI turn       median {mb:.3f} s (min {min(bare):.3f}, max {max(bare):.3f})")
    print(f"ratio               {mo / mb:.3f} (target <= {TARGET})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
