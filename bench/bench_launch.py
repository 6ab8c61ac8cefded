"""Benchmark launch overhead: `agentlaunch run AGENT "hi"` against the bare `claude -p "hi"`.

Run: ``python bench/bench_launch.py [--runs N]``

Both sides talk to the same scripted fake Anthropic API on 127.0.0.1 with
the same environment (throwaway HOME, state and config directories) and the
same CLAUDE.md in their working directory. Runs alternate (agentlaunch, bare,
agentlaunch, ...) so drifts in machine load hit both alike; one warm-up run of
each is not counted (it also fills the Python sides' bytecode cache, as an
install would, and leaves the launch plan and the price cache a second launch
finds). Prints, for wall time and for CPU (user+sys of each side's whole
process tree), the medians with their spread and the ratio of the medians
(targets: wall <= 1.10, CPU <= 1.35), and the middle half of the per-pair
ratios: on a shared machine one median moves by several hundredths from run
to run. On 2 cores every CPU millisecond spent beside the starting CLI delays
it, which is why CPU is a target of its own.

A third side, ``launch_floor.py``, starts Python and the CLI from the same
plan and sends one message, nothing else: the part of the overhead no launch
written in Python avoids (on this machine the interpreter alone starts in
~0.06 s, and Claude Code reading its turn from stream-json stdin is a little
slower to answer than with ``-p hi``).

``--no-model`` gives the agent no model (and the bare side no ``--model``):
Claude Code chooses, and agentlaunch learns which model only from its first
call. ``--before CHECKOUT`` adds a side: the same launch run from another
checkout of agentlaunch (e.g. ``main`` before a change, with a state folder of
its own), so a change is measured against the code before it in the same
rounds.

The real claude comes from ``testbed.clis.ensure_cli("claude")`` when
``AGENTLAUNCH_TEST_CLI_CACHE`` is set, else from
``/tmp/al-clis/node_modules/.bin/claude`` when that exists.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import MODEL, REPO, Timed, find_claude, make_agent, quartiles, run_timed, sealed_env, spread  # noqa: E402

from agentlaunch.fakeapi.anthropic import FakeAnthropic  # noqa: E402

WALL_TARGET = 1.10
CPU_TARGET = 1.35


def compare(kind: str, ours: list[float], bare: list[float], target: float) -> float:
    """Print one figure's medians, spread, ratio and per-pair middle half; return the ratio of the medians."""
    ratio = median(ours) / median(bare)
    q1, q3 = quartiles([a / b for a, b in zip(ours, bare, strict=True)])
    print(f"{kind:5s} agentlaunch run : {spread(ours)} s")
    print(f"      bare claude -p  : {spread(bare)} s   overhead {median(ours) - median(bare):+.3f}s")
    print(
        f"      ratio           : {ratio:.3f}  (min/min {min(ours) / min(bare):.3f})"
        f"  target <= {target:.2f} {'ok' if ratio <= target else 'MISSED'}"
    )
    print(f"      per-pair ratios : middle half {q1:.3f} .. {q3:.3f}")
    return ratio


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="counted alternating pairs (default 15)")
    parser.add_argument("--no-floor", action="store_true", help="skip the launch_floor.py side")
    parser.add_argument(
        "--plain",
        action="store_true",
        help="a fourth side: plain `claude -p hi --output-format stream-json --verbose` (what a user compares with)",
    )
    parser.add_argument(
        "--otel", action="store_true", help="agentlaunch exports (AGENTLAUNCH_OTEL=1) to an OTLP receiver on 127.0.0.1"
    )
    parser.add_argument("--no-model", action="store_true", help="the agent names no model: Claude Code's default")
    parser.add_argument("--before", type=Path, help="a side: the same launch from this checkout of agentlaunch")
    args = parser.parse_args()
    if args.runs < 2:
        parser.error("--runs must be at least 2 (the spread needs two pairs)")
    claude = find_claude()
    with tempfile.TemporaryDirectory(prefix="bench-launch-") as tmp_name:
        tmp = Path(tmp_name)
        al_work, bare_work, agents = tmp / "work-agentlaunch", tmp / "work-bare", tmp / "agents"
        al_work.mkdir()
        bare_work.mkdir()
        make_agent(agents, claude, al_work, model=None if args.no_model else MODEL)
        api = FakeAnthropic()
        with api.serve() as server:
            env = sealed_env(tmp, server.url)
            al_env, receiver = env, None
            if args.otel:
                from testbed.otlp_receiver import OtlpReceiver  # the test receiver (opentelemetry-proto)

                receiver = OtlpReceiver().__enter__()
                al_env = {**env, "AGENTLAUNCH_OTEL": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
            al_argv = [sys.executable, "-m", "agentlaunch", "run", "bench", "--agents-dir", str(agents), "--quiet", "hi"]
            bare_argv = [str(claude), "-p", "hi", "--output-format", "stream-json", "--verbose"]
            if not args.no_model:
                bare_argv += ["--model", MODEL]
            before_env = {**al_env, "AGENTLAUNCH_STATE_DIR": str(tmp / "state-before")}  # its own plans and caches
            floor_argv = [sys.executable, str(REPO / "bench" / "launch_floor.py"), *al_argv[3:]]
            plain_argv = [str(claude), "-p", "hi", "--output-format", "stream-json", "--verbose"]

            # Warm-up (not counted): first-run files in HOME, page cache, .pyc files, plan and price caches.
            run_timed(al_argv, al_env, REPO)
            shutil.copyfile(al_work / "CLAUDE.md", bare_work / "CLAUDE.md")  # same instructions on both sides
            run_timed(bare_argv, env, bare_work)
            if args.before:
                run_timed(al_argv, before_env, args.before)  # its warm-up: its bytecode, plan and price caches

            al: list[Timed] = []
            bare: list[Timed] = []
            floor: list[Timed] = []
            plain: list[Timed] = []
            earlier: list[Timed] = []
            for i in range(args.runs):
                al.append(run_timed(al_argv, al_env, REPO))
                bare.append(run_timed(bare_argv, env, bare_work))
                line = (
                    f"pair {i + 1:2d}: agentlaunch {al[-1].wall:.3f}s cpu {al[-1].cpu:.3f}s"
                    f" · claude {bare[-1].wall:.3f}s cpu {bare[-1].cpu:.3f}s"
                )
                if not args.no_floor:
                    floor.append(run_timed(floor_argv, env, REPO))
                    line += f" · floor {floor[-1].wall:.3f}s cpu {floor[-1].cpu:.3f}s"
                if args.plain:
                    plain.append(run_timed(plain_argv, env, bare_work))
                    line += f" · plain {plain[-1].wall:.3f}s cpu {plain[-1].cpu:.3f}s"
                if args.before:
                    earlier.append(run_timed(al_argv, before_env, args.before))
                    line += f" · before {earlier[-1].wall:.3f}s cpu {earlier[-1].cpu:.3f}s"
                print(line, flush=True)
            calls = len(api.message_requests())
            if receiver is not None:
                exported = len(receiver.log_records())
                receiver.__exit__(None, None, None)
                print(f"export on: the receiver accepted {exported} call records ({args.runs + 1} launches)")
            # Where the overhead goes: the interpreter's own start, then importing the CLI.
            python_start = median(run_timed([sys.executable, "-c", "pass"], env, REPO).wall for _ in range(5))
            imports = median(run_timed([sys.executable, "-c", "import agentlaunch.cli.run"], env, REPO).wall for _ in range(5))

    print(f"claude {claude} · {args.runs} alternating pairs · {calls} model calls served")
    wall_ratio = compare("wall", [t.wall for t in al], [t.wall for t in bare], WALL_TARGET)
    cpu_ratio = compare("cpu", [t.cpu for t in al], [t.cpu for t in bare], CPU_TARGET)
    print(
        f"  orphans the bench reaped (counted in cpu): agentlaunch {sum(t.orphans for t in al)},"
        f" bare claude {sum(t.orphans for t in bare)}" + (f", plain {sum(t.orphans for t in plain)}" if plain else "")
    )
    print(f"  python -c pass      : {python_start:.3f}s")
    print(f"  import agentlaunch.cli.run: {imports - python_start:.3f}s more")
    if floor:
        for kind in ("wall", "cpu"):
            floor_med = median(getattr(t, kind) for t in floor)
            al_med, bare_med = median(getattr(t, kind) for t in al), median(getattr(t, kind) for t in bare)
            print(
                f"floor {kind:4s} (launch_floor.py): {floor_med:.3f}s, ratio {floor_med / bare_med:.3f};"
                f" agentlaunch over floor {al_med - floor_med:+.3f}s"
            )
        print("  (Python, the CLI started from the plan, one message: no launch in Python does less)")
    if plain:
        print("against plain `claude -p hi --output-format stream-json --verbose` (targets: wall <= 1.10, cpu <= 1.35):")
        for kind in ("wall", "cpu"):
            ours, theirs = [getattr(t, kind) for t in al], [getattr(t, kind) for t in plain]
            q1, q3 = quartiles([a / b for a, b in zip(ours, theirs, strict=True)])
            print(
                f"  {kind:4s}: plain {spread(theirs)} s, ratio {median(ours) / median(theirs):.3f}"
                f" (per-pair middle half {q1:.3f} .. {q3:.3f})"
            )
    if earlier:
        print(f"agentlaunch from {args.before} (before), the same rounds:")
        for kind in ("wall", "cpu"):
            target = CPU_TARGET if kind == "cpu" else WALL_TARGET
            compare(kind, [getattr(t, kind) for t in earlier], [getattr(t, kind) for t in bare], target)
            ours, theirs = [getattr(t, kind) for t in al], [getattr(t, kind) for t in earlier]
            q1, q3 = quartiles([a / b for a, b in zip(ours, theirs, strict=True)])
            print(f"  {kind:4s} after/before: {median(ours) / median(theirs):.3f} (per-pair middle half {q1:.3f} .. {q3:.3f})")
    print(f"  load average: {os.getloadavg()[0]:.2f}")
    print(f"summary: wall ratio {wall_ratio:.3f}, cpu ratio {cpu_ratio:.3f} over {args.runs} pairs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
