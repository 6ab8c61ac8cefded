"""Benchmark launch overhead: `agentlaunch run AGENT "hi"` against the bare `claude -p "hi"`.

Run: ``python bench/bench_launch.py [--runs N]``

Both sides talk to the same scripted fake Anthropic API on 127.0.0.1 with
the same environment (throwaway HOME, state and config directories) and the
same CLAUDE.md in their working directory. Runs alternate (agentlaunch, bare,
agentlaunch, ...) so drifts in machine load hit both alike; one warm-up run of
each is not counted (it also fills the Python sides' bytecode cache, as an
install would). Prints the medians and their ratio (target <= 1.15), and
the middle half of the per-pair ratios: on a shared machine one median moves
by several hundredths from run to run. A third side, ``launch_floor.py``,
starts Python and the CLI from the same plan and sends one message, nothing
else: the part of the overhead no launch written in Python avoids (on this
machine the interpreter alone starts in ~0.06 s, and Claude Code reading its
turn from stream-json stdin is a little slower to answer than with ``-p hi``).

The real claude comes from ``tests.support.clis.ensure_cli("claude")`` when
``AGENTLAUNCH_TEST_CLI_CACHE`` is set, else from
``/tmp/al-clis/node_modules/.bin/claude`` when that exists.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agentlaunch.fakeapi.anthropic import FakeAnthropic, claude_env  # noqa: E402

FALLBACK_CLAUDE = Path("/tmp/al-clis/node_modules/.bin/claude")
MODEL = "claude-sonnet-4-5"
TARGET = 1.15


def find_claude() -> Path:
    if not os.environ.get("AGENTLAUNCH_TEST_CLI_CACHE") and FALLBACK_CLAUDE.exists():
        return FALLBACK_CLAUDE
    from tests.support.clis import ensure_cli

    return ensure_cli("claude")


def make_agent(agents_dir: Path, claude: Path, workdir: Path) -> None:
    folder = agents_dir / "bench"
    folder.mkdir(parents=True)
    config = {
        "display": "Bench Agent",
        "provider": "claude",
        "command": str(claude),
        "model": MODEL,
        "working_dir": str(workdir),
        "startup": "Say hi.",
        "delivery": "file",  # the bare side reads the same CLAUDE.md
    }
    (folder / "agent.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (folder / "soul.md").write_text("You are a terse benchmark agent.\n")
    (folder / "agent.md").write_text("Answer in one word.\n")


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.stderr.write(done.stderr.decode("utf-8", "replace"))
        raise SystemExit(f"{argv[:3]} failed with exit code {done.returncode}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="counted runs of each side (default 20)")
    args = parser.parse_args()
    claude = find_claude()
    with tempfile.TemporaryDirectory(prefix="bench-launch-") as tmp_name:
        tmp = Path(tmp_name)
        al_work, bare_work, agents = tmp / "work-agentlaunch", tmp / "work-bare", tmp / "agents"
        al_work.mkdir()
        bare_work.mkdir()
        make_agent(agents, claude, al_work)
        api = FakeAnthropic()
        with api.serve() as server:
            env = dict(os.environ)
            env.update(claude_env(server.url, home=tmp / "home"))
            env["AGENTLAUNCH_STATE_DIR"] = str(tmp / "state")
            env["AGENTLAUNCH_CONFIG_DIR"] = str(tmp / "config")
            env["XDG_CONFIG_HOME"] = str(tmp / "xdg-config")
            env["XDG_STATE_HOME"] = str(tmp / "xdg-state")
            env["XDG_CACHE_HOME"] = str(tmp / "xdg-cache")
            # An installed agentlaunch has its bytecode compiled (pip does it at install time). Run from a
            # source tree with PYTHONDONTWRITEBYTECODE=1 (set on some machines), every launch would compile
            # every module again: give both Python sides a bytecode cache of their own, filled by the warm-up.
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
            (tmp / "home").mkdir()
            al_argv = [sys.executable, "-m", "agentlaunch", "run", "bench", "--agents-dir", str(agents), "--quiet", "hi"]
            bare_argv = [str(claude), "-p", "hi", "--output-format", "stream-json", "--verbose", "--model", MODEL]
            floor_argv = [sys.executable, str(REPO / "bench" / "launch_floor.py"), *al_argv[3:]]

            # Warm-up (not counted): first-run files in HOME, page cache, .pyc files.
            timed(al_argv, env, REPO)
            shutil.copyfile(al_work / "CLAUDE.md", bare_work / "CLAUDE.md")  # same instructions on both sides
            timed(bare_argv, env, bare_work)

            al_times: list[float] = []
            bare_times: list[float] = []
            floor_times: list[float] = []
            for i in range(args.runs):
                al_times.append(timed(al_argv, env, REPO))
                bare_times.append(timed(bare_argv, env, bare_work))
                floor_times.append(timed(floor_argv, env, REPO))
                print(
                    f"run {i + 1:2d}: agentlaunch {al_times[-1]:.3f}s · claude {bare_times[-1]:.3f}s"
                    f" · floor {floor_times[-1]:.3f}s",
                    flush=True,
                )
            calls = len(api.message_requests())

    al_med, bare_med, floor_med = (statistics.median(t) for t in (al_times, bare_times, floor_times))
    ratio = al_med / bare_med
    # The machine is shared: the spread of the per-pair ratios shows how far one median can be trusted.
    pair_q1, _, pair_q3 = statistics.quantiles([a / b for a, b in zip(al_times, bare_times, strict=True)], n=4)
    # Where the overhead goes: the interpreter's own start, then importing the CLI.
    python_start = statistics.median(timed([sys.executable, "-c", "pass"], env, REPO) for _ in range(5))
    imports = statistics.median(timed([sys.executable, "-c", "import agentlaunch.cli.run"], env, REPO) for _ in range(5))
    print(f"claude {claude} · {args.runs} runs each · {calls} model calls served")
    print(f"median agentlaunch run : {al_med:.3f}s  (min {min(al_times):.3f}s)")
    print(f"median bare claude -p  : {bare_med:.3f}s  (min {min(bare_times):.3f}s)")
    print(f"overhead               : {al_med - bare_med:+.3f}s")
    print(f"  python -c pass       : {python_start:.3f}s")
    print(f"  import agentlaunch.cli.run: {imports - python_start:.3f}s more")
    print(f"ratio                  : {ratio:.3f}  (target <= {TARGET}) {'ok' if ratio <= TARGET else 'MISSED'}")
    print(f"  per-pair ratios      : middle half {pair_q1:.3f} .. {pair_q3:.3f}")
    print(f"floor (launch_floor.py): {floor_med:.3f}s, ratio {floor_med / bare_med:.3f}")
    print("  (Python, the CLI started from the plan, one message: no launch in Python does less)")
    print(f"agentlaunch over floor : {al_med - floor_med:+.3f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
