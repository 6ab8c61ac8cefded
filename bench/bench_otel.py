"""Benchmark what export costs a launch: `agentlaunch run AGENT "hi"` with AGENTLAUNCH_OTEL=1 against the same without.

Run: ``python bench/bench_otel.py [--runs N]``

Three sides alternate in every round (export off, export on, bare
``claude -p``) against one fake Anthropic API, with an OTLP receiver on
127.0.0.1 (the test receiver, which decodes every request with the official
messages: its CPU is the bench process's, not the launch's). Alternating in
one run cancels the drift of a shared machine that separate runs of
``bench_launch.py`` and ``bench_launch.py --otel`` suffer. Prints each side's
medians, the off/bare and on/bare ratios (bench_launch.py's figures, with and
without export), the on/off ratio, and how many calls the receiver accepted.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import MODEL, REPO, Timed, find_claude, make_agent, quartiles, run_timed, sealed_env, spread  # noqa: E402

from agentlaunch.fakeapi.anthropic import FakeAnthropic  # noqa: E402
from testbed.otlp_receiver import OtlpReceiver  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="counted rounds (default 15)")
    args = parser.parse_args()
    if args.runs < 2:
        parser.error("--runs must be at least 2")
    claude = find_claude()
    with tempfile.TemporaryDirectory(prefix="bench-otel-") as tmp_name, OtlpReceiver() as receiver:
        tmp = Path(tmp_name)
        al_work, bare_work, agents = tmp / "work-agentlaunch", tmp / "work-bare", tmp / "agents"
        al_work.mkdir()
        bare_work.mkdir()
        make_agent(agents, claude, al_work)
        api = FakeAnthropic()
        with api.serve() as server:
            env = sealed_env(tmp, server.url)
            on_env = {**env, "AGENTLAUNCH_OTEL": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
            al_argv = [sys.executable, "-m", "agentlaunch", "run", "bench", "--agents-dir", str(agents), "--quiet", "hi"]
            bare_argv = [str(claude), "-p", "hi", "--output-format", "stream-json", "--verbose", "--model", MODEL]
            run_timed(al_argv, env, REPO)  # warm-up: first-run files, .pyc, plan and price caches
            run_timed(al_argv, on_env, REPO)
            shutil.copyfile(al_work / "CLAUDE.md", bare_work / "CLAUDE.md")
            run_timed(bare_argv, env, bare_work)
            warm = len(receiver.log_records())
            off: list[Timed] = []
            on: list[Timed] = []
            bare: list[Timed] = []
            for i in range(args.runs):
                off.append(run_timed(al_argv, env, REPO))
                on.append(run_timed(al_argv, on_env, REPO))
                bare.append(run_timed(bare_argv, env, bare_work))
                print(
                    f"round {i + 1:2d}: off {off[-1].wall:.3f}s cpu {off[-1].cpu:.3f}s · on {on[-1].wall:.3f}s"
                    f" cpu {on[-1].cpu:.3f}s · claude {bare[-1].wall:.3f}s cpu {bare[-1].cpu:.3f}s",
                    flush=True,
                )
            accepted = len(receiver.log_records()) - warm
    print(f"claude {claude} · {args.runs} rounds · the receiver accepted {accepted} calls of {args.runs} launches with export on")
    for kind in ("wall", "cpu"):
        o, n, b = ([getattr(t, kind) for t in side] for side in (off, on, bare))
        q1, q3 = quartiles([y / x for x, y in zip(o, n, strict=True)])
        print(f"{kind:4s} export off : {spread(o)} s   ratio to bare {median(o) / median(b):.3f}")
        print(f"     export on  : {spread(n)} s   ratio to bare {median(n) / median(b):.3f}")
        print(f"     bare claude: {spread(b)} s")
        print(f"     on / off   : {median(n) / median(o):.3f}  (per-round middle half {q1:.3f} .. {q3:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
