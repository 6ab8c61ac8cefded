"""Benchmark native Codex's start by route: `agentlaunch run AGENT` until Codex's prompt echoes a typed key, through
the app-server agentlaunch owns (``codex --remote``, the default) against the direct route
(``AGENTLAUNCH_CODEX_INTERFACE=direct``: Codex's interface with its own app-server inside, hooks and rollout).

Run: ``python bench/bench_codex_native_route.py [--runs N]``

Both sides are a new session of one agent (its startup message its first turn), on a PTY (pexpect, 120x40) read
through a pyte screen, against the same fake Responses API in the same seeded throwaway CODEX_HOME. The clock
starts at the spawn; once the screen shows Codex's composer (``›``) one key is typed, and the clock stops when
the composer shows it. Runs alternate so machine load hits both alike; one warm-up each is not counted. Prints
the medians, their ratio (app-server / direct) and the middle half of the per-pair ratios.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

import pexpect
import pyte

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_native_start import end  # noqa: E402
from harness import REPO, quartiles, spread  # noqa: E402

from agentlaunch.fakeapi.responses import ResponsesScript  # noqa: E402
from tests.support.clis import ensure_cli  # noqa: E402
from tests.support.native_tui import Screen, TitledResponsesFake, seed_codex_home  # noqa: E402

ECHOED = re.compile(r"^› x\s*$", re.MULTILINE)


def until_echo(argv: list[str], env: dict[str, str], timeout: float = 90) -> float:
    """Seconds from spawning ``argv`` until Codex's composer shows a typed key."""
    started = time.perf_counter()
    child = pexpect.spawn(argv[0], argv[1:], env=env, cwd=str(REPO), dimensions=(40, 120), echo=False)
    screen = Screen(120, 40)
    stream = pyte.ByteStream(screen)
    typed = False
    try:
        while time.perf_counter() - started < timeout:
            try:
                stream.feed(child.read_nonblocking(1 << 16, timeout=0.005))
            except pexpect.TIMEOUT:
                pass
            except pexpect.EOF:
                break
            text = "\n".join(line.rstrip() for line in screen.display)
            if not typed and "Ask Codex" in text:
                child.send("x")
                typed = True
            if typed and ECHOED.search(text):
                return time.perf_counter() - started
        raise SystemExit(f"{argv[:3]}: no echo within {timeout}s:\n{text}")
    finally:
        end(child)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="counted alternating pairs (default 10)")
    args = parser.parse_args()
    if args.runs < 2:
        parser.error("--runs must be at least 2")
    codex = ensure_cli("codex")
    with tempfile.TemporaryDirectory(prefix="bcr-") as folder, TitledResponsesFake(ResponsesScript([])) as api:
        root = Path(folder)
        work, agent = root / "work", root / "agents" / "bench"
        for path in (work, agent):
            path.mkdir(parents=True)
        (agent / "agent.yaml").write_text(
            f"provider: codex\ncommand: {codex}\nmodel: gpt-5.5\nworking_dir: {work}\nstartup: Say hi.\n"
        )
        (agent / "soul.md").write_text("You are a terse benchmark agent.\n")
        env = seed_codex_home(root / "home", api.base_url, work)
        env.update({
            "AGENTLAUNCH_STATE_DIR": str(root / "state"), "AGENTLAUNCH_CONFIG_DIR": str(root / "config"),
            "AGENTLAUNCH_TITLE": "0", "PYTHONPYCACHEPREFIX": str(root / "pycache"),
        })  # fmt: skip
        argv = [sys.executable, "-m", "agentlaunch", "run", "bench", "--agents-dir", str(agent.parent)]
        direct = {**env, "AGENTLAUNCH_CODEX_INTERFACE": "direct"}
        until_echo(argv, env)  # warm-up (not counted): bytecode, the plan and render caches, Codex's first-run files
        until_echo(argv, direct)
        ours: list[float] = []
        before: list[float] = []
        for i in range(args.runs):
            ours.append(until_echo(argv, env))
            before.append(until_echo(argv, direct))
            print(f"pair {i + 1:2d}: app-server {ours[-1]:.3f}s · direct {before[-1]:.3f}s", flush=True)
    ratio = median(ours) / median(before)
    q1, q3 = quartiles([a / b for a, b in zip(ours, before, strict=True)])
    print(f"codex {codex} · {args.runs} alternating pairs · native start until the composer echoes a key")
    print(f"  through agentlaunch's app-server: {spread(ours)} s")
    print(f"  direct (the route before)       : {spread(before)} s   difference {median(ours) - median(before):+.3f}s")
    print(f"  ratio app-server / direct       : {ratio:.3f}")
    print(f"  per-pair ratios                 : middle half {q1:.3f} .. {q3:.3f}")
    print(f"  load average                    : {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
