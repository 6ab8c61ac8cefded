"""Benchmark native Codex's start by route: `agentlaunch run AGENT` until Codex's prompt echoes a typed key, through
the app-server agentlaunch owns (``codex --remote``, the default) against the direct route
(``AGENTLAUNCH_CODEX_INTERFACE=direct``: Codex's interface with its own app-server inside, hooks and rollout) and
against bare ``codex`` (what the issue's targets compare with).

Run: ``python bench/bench_codex_native_route.py [--runs N] [--no-early]``

Every side is a new session of one agent (its startup message its first turn), on a PTY (pexpect, 120x40) read
through a pyte screen, against the same fake Responses API in the same seeded throwaway CODEX_HOME. The clock
starts at the spawn; once the screen shows Codex's composer (``Ask Codex``) one key is typed, and the clock stops
when the composer shows it. The bare side runs the argv, environment and working directory of the Codex interface
the direct route started in the warm-up (read from ``/proc``: the same ``-c`` options, instructions, model, flags,
``--no-daemon`` and startup message), without agentlaunch's hook flags. ``--no-early`` adds a side: the app-server
route with the early start off (``AGENTLAUNCH_NO_PRESPAWN=1``); ``--before CHECKOUT`` another: the app-server route
run from another checkout of agentlaunch (``main`` before a change, say; its own state folder, so neither side reads
the other's plans). The sides of a round run one after the other, their
order turned by one each round, so machine load hits all alike; one warm-up each is not counted. Prints the
medians, their ratios and the middle half of the per-round ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median

import pexpect
import pyte

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_native_start import cli_of, end  # noqa: E402
from harness import REPO, quartiles, spread  # noqa: E402

from agentlaunch.fakeapi.responses import ResponsesScript  # noqa: E402
from testbed.clis import ensure_cli  # noqa: E402
from testbed.native_tui import TitledResponsesFake, seed_codex_home  # noqa: E402
from testbed.pty_screen import TolerantScreen  # noqa: E402

ECHOED = re.compile(r"^› x\s*$", re.MULTILINE)


def until_echo(argv: list[str], env: dict[str, str], timeout: float = 90, cwd: Path = REPO) -> float:
    """Seconds from spawning ``argv`` until Codex's composer shows a typed key."""
    started = time.perf_counter()
    child = pexpect.spawn(argv[0], argv[1:], env=env, cwd=str(cwd), dimensions=(40, 120), echo=False)
    screen = TolerantScreen(120, 40)
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


def without_hooks(argv: list[str]) -> list[str]:
    """``argv`` without the ``-c hooks.…`` pairs of agentlaunch's native extras."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] == "-c" and i + 1 < len(argv) and argv[i + 1].startswith("hooks."):
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def warm_direct(argv: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str], Path]:
    """A direct-route launch until the composer shows (a warm-up): its Codex interface's argv, env and cwd."""
    child = pexpect.spawn(argv[0], argv[1:], env=env, cwd=str(REPO), dimensions=(40, 120), echo=False)
    screen = TolerantScreen(120, 40)
    stream = pyte.ByteStream(screen)
    started = time.perf_counter()
    try:
        while "Ask Codex" not in "\n".join(screen.display):
            if time.perf_counter() - started > 90:
                raise SystemExit("the direct route's interface did not show its composer within 90s")
            with contextlib.suppress(pexpect.TIMEOUT):
                stream.feed(child.read_nonblocking(1 << 16, timeout=0.05))
        argv, env, cwd = cli_of(child.pid, "--no-daemon")
        return without_hooks(argv), env, cwd
    finally:
        end(child)


def report(name: str, times: list[float], base: list[float], base_name: str) -> None:
    q1, q3 = quartiles([a / b for a, b in zip(times, base, strict=True)])
    print(
        f"  {name} / {base_name}: {median(times) / median(base):.3f} ({median(times) - median(base):+.3f}s; "
        f"per-round middle half {q1:.3f} .. {q3:.3f})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="counted alternating rounds (default 15)")
    parser.add_argument("--no-early", action="store_true", help="a side: the app-server route without its early start")
    parser.add_argument("--before", type=Path, help="a side: the app-server route from this checkout of agentlaunch")
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
        env.update(
            {
                "AGENTLAUNCH_STATE_DIR": str(root / "state"),
                "AGENTLAUNCH_CONFIG_DIR": str(root / "config"),
                "AGENTLAUNCH_TITLE": "0",
                "PYTHONPYCACHEPREFIX": str(root / "pycache"),
            }
        )
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's Python keeps its bytecode: without it each launch compiles
        argv = [sys.executable, "-m", "agentlaunch", "run", "bench", "--agents-dir", str(agent.parent)]
        direct = {**env, "AGENTLAUNCH_CODEX_INTERFACE": "direct"}
        # Warm-up (not counted): bytecode, the plan and render caches, Codex's first-run files; the bare side's argv.
        until_echo(argv, env)
        bare_argv, bare_env, bare_cwd = warm_direct(argv, direct)
        sides: dict[str, Callable[[], float]] = {
            "app-server": lambda: until_echo(argv, env),
            "direct": lambda: until_echo(argv, direct),
            "bare": lambda: until_echo(bare_argv, bare_env, cwd=bare_cwd),
        }
        if args.no_early:
            late = {**env, "AGENTLAUNCH_NO_PRESPAWN": "1"}
            sides["no-early"] = lambda: until_echo(argv, late)
        if args.before:
            earlier = {**env, "AGENTLAUNCH_STATE_DIR": str(root / "state-before")}
            sides["before"] = lambda: until_echo(argv, earlier, cwd=args.before)
        for side in sides.values():
            side()
        times: dict[str, list[float]] = {name: [] for name in sides}
        loads = [os.getloadavg()[0]]
        names = list(sides)
        for i in range(args.runs):
            order = names[i % len(names) :] + names[: i % len(names)]
            for name in order:
                times[name].append(sides[name]())
            print(f"round {i + 1:2d}: " + " · ".join(f"{n} {times[n][-1]:.3f}s" for n in names), flush=True)
        loads.append(os.getloadavg()[0])
    print(f"codex {codex} · {args.runs} alternating rounds · native start until the composer echoes a key")
    print(f"  bare codex: {' '.join(bare_argv[:2])} … ({len(bare_argv)} arguments)")
    for name in names:
        print(f"  {name:10s}: {spread(times[name])} s")
    report("app-server", times["app-server"], times["bare"], "bare")
    report("direct", times["direct"], times["bare"], "bare")
    report("app-server", times["app-server"], times["direct"], "direct")
    if "no-early" in times:
        report("app-server", times["app-server"], times["no-early"], "no-early")
        report("no-early", times["no-early"], times["bare"], "bare")
    if "before" in times:
        print(f"  before: {args.before}")
        report("app-server", times["app-server"], times["before"], "before")
        report("before", times["before"], times["bare"], "bare")
    print(f"  load average: {loads[0]:.2f} at the start, {loads[1]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
