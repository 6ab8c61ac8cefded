"""Benchmark the native interface's start: `agentlaunch run AGENT` at a terminal until Claude Code's prompt echoes a key,
against bare `claude` started with the same argv and environment.

Run: ``python bench/bench_native_start.py [--runs N]``

Both sides run on a PTY (pexpect, 120x40, echo off as a shell's raw line
editor leaves it) read through a pyte screen, against the same fake Anthropic
API, in the same seeded throwaway HOME. The clock starts at the spawn; as soon
as the screen shows Claude Code's prompt (``❯``) one key is typed, and the
clock stops when the prompt line shows it (the two parts, until the prompt and
the key to its echo, are printed too). The bare side's argv, environment
and working directory are those of the CLI agentlaunch started in the warm-up
(read from ``/proc``), with a fresh session id each run (the startup message
is the CLI's first prompt on both sides). Runs alternate so machine load hits
both alike; one warm-up each is not counted. Prints the medians, their ratio
(target <= 1.10) and the middle half of the per-pair ratios, and agentlaunch's own memory (RSS and USS, the CLI
not included) at the moment the key echoed (targets 32 MB and 20 MB).

``--before CHECKOUT`` adds a third side to each round: the same launch run from
another checkout of agentlaunch (e.g. ``main`` before a change), so a change is
measured against the code before it in the same rounds.

``--floor MS`` adds two sides: a Python that execs the bare CLI at once (no
Python launcher starts it sooner), and one that waits MS milliseconds first
(the early start's latency before its spawn, none of its CPU). What separates
the second from agentlaunch is what agentlaunch does beside the CLI's start
(on a 2-core machine its CPU competes with the CLI's).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path
from statistics import median

import pexpect

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import MODEL, REPO, find_claude, quartiles, spread  # noqa: E402

from agentlaunch.fakeapi.anthropic import FakeAnthropic  # noqa: E402
from testbed.claude_tui import seed_home, tui_env  # noqa: E402
from testbed.pty_screen import Screen

TARGET = 1.10
PROMPT_SEEN: list[float] = []  # seconds from each spawn until the prompt showed (the key is typed then)
ECHOED = re.compile(r"^\s*❯\s*x\s*$", re.MULTILINE)


def memory_mb(pid: int) -> tuple[float, float]:
    """RSS and USS (its private pages: what ending it would free) of ``pid``, in MB."""
    rollup = (Path(f"/proc/{pid}") / "smaps_rollup").read_text().splitlines()
    kb = {line.split(":")[0]: int(line.split()[1]) for line in rollup if line.endswith(" kB")}
    return kb["Rss"] / 1024, (kb["Private_Clean"] + kb["Private_Dirty"]) / 1024


def cpu_ms(pid: int) -> float:
    """CPU time ``pid``'s threads have run so far, in ms (``/proc/PID/task/*/schedstat``: nanoseconds, not ticks)."""
    total = 0
    for task in (Path(f"/proc/{pid}") / "task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e6


def until_echo(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 60) -> tuple[float, tuple[float, float, float]]:
    """Seconds from spawning ``argv`` until the prompt shows a typed key; the RSS and USS of the process spawned
    (agentlaunch itself on its side, the CLI not included) then, and its CPU time by then (ms)."""
    started = time.perf_counter()
    child = pexpect.spawn(argv[0], argv[1:], env=env, cwd=str(cwd), dimensions=(40, 120), echo=False)
    screen = Screen(child, 120, 40)
    typed = False
    while time.perf_counter() - started < timeout:
        screen.pump(0.005)
        text = screen.text()
        if not typed and "❯" in text:
            child.send("x")
            typed = True
            PROMPT_SEEN.append(time.perf_counter() - started)
        if typed and ECHOED.search(text):
            elapsed = time.perf_counter() - started
            memory = (*memory_mb(child.pid), cpu_ms(child.pid))
            end(child)
            return elapsed, memory
        if not child.isalive():
            break
    raise SystemExit(f"{argv[:3]}: no echo within {timeout}s:\n{screen.text()}")


def end(child: pexpect.spawn) -> None:
    child.kill(signal.SIGTERM)
    try:
        child.expect(pexpect.EOF, timeout=30)
    except pexpect.TIMEOUT:
        child.kill(signal.SIGKILL)
    child.close(force=True)


def cli_of(parent: int, flag: str = "--settings") -> tuple[list[str], dict[str, str], Path]:
    """argv, environment and working directory of the CLI ``parent`` started (the one given ``flag``)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid != parent:
                continue
            argv = (entry / "cmdline").read_bytes().decode().split("\0")[:-1]
            environ = (entry / "environ").read_bytes().decode().split("\0")[:-1]
            cwd = Path(os.readlink(entry / "cwd"))
        except (OSError, IndexError, ValueError):
            continue
        if flag in argv:
            return argv, dict(item.split("=", 1) for item in environ if "=" in item), cwd
    raise SystemExit(f"no CLI with {flag} under agentlaunch (pid {parent})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="counted alternating pairs (default 15)")
    parser.add_argument("--before", type=Path, help="a third side: the same launch from this checkout of agentlaunch")
    parser.add_argument(
        "--floor",
        type=float,
        metavar="MS",
        help="two more sides: a Python that execs the bare CLI at once, and one that waits MS milliseconds first (the"
        " early start's latency before its spawn, without its CPU): what is left of agentlaunch's gap is its work"
        " beside the CLI's start",
    )
    args = parser.parse_args()
    if args.runs < 2:
        parser.error("--runs must be at least 2")
    claude = find_claude()
    with tempfile.TemporaryDirectory(prefix="bench-native-") as folder:
        root = Path(folder)
        home, work, agent = root / "home", root / "work", root / "agents" / "bench"
        for path in (home, work, agent):
            path.mkdir(parents=True)
        seed_home(home, [work])
        (agent / "agent.yaml").write_text(
            f"provider: claude\ncommand: {claude}\nmodel: {MODEL}\nworking_dir: {work}\nstartup: Say hi.\n"
        )
        (agent / "soul.md").write_text("You are a terse benchmark agent.\n")
        api = FakeAnthropic()
        with api.serve() as server:
            env = tui_env(
                server.url,
                home,
                {
                    "AGENTLAUNCH_STATE_DIR": str(root / "state"),
                    "AGENTLAUNCH_CONFIG_DIR": str(root / "config"),
                    "AGENTLAUNCH_TITLE": "0",
                    "XDG_STATE_HOME": str(root / "xdg-state"),
                    "XDG_CONFIG_HOME": str(root / "xdg-config"),
                    "XDG_CACHE_HOME": str(root / "xdg-cache"),
                    "PYTHONPYCACHEPREFIX": str(root / "pycache"),
                },
            )
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            al_argv = [sys.executable, "-m", "agentlaunch", "run", "bench", "--agents-dir", str(agent.parent)]
            # Warm-up (not counted): bytecode, the plan and render caches, Claude Code's first-run files; the CLI's argv.
            child = pexpect.spawn(al_argv[0], al_argv[1:], env=env, cwd=str(REPO), dimensions=(40, 120), echo=False)
            screen = Screen(child, 120, 40)
            screen.wait_for(lambda t: "❯" in t, 60, "the prompt")
            bare_argv, bare_env, bare_cwd = cli_of(child.pid)
            end(child)
            until_echo(al_argv, env, REPO)
            sid = bare_argv[bare_argv.index("--session-id") + 1]

            def fresh() -> list[str]:
                new = str(uuid.uuid4())
                return [a.replace(sid, new) for a in bare_argv]

            until_echo(fresh(), bare_env, bare_cwd)
            # The other checkout keeps its plans in a state folder of its own: neither side starts its CLI from the
            # other's plan (a checkout before issue 40 also keeps `run`'s option table there, stamped with its files).
            before_env = {**env, "AGENTLAUNCH_STATE_DIR": str(root / "state-before")}
            if args.before:
                until_echo(al_argv, before_env, args.before)  # its warm-up: its bytecode and its plan
            ours: list[float] = []
            bare: list[float] = []
            memory: list[tuple[float, float, float]] = []
            earlier: list[float] = []
            earlier_memory: list[tuple[float, float, float]] = []
            prompts: dict[str, list[float]] = {"ours": [], "bare": []}
            floors: dict[str, list[float]] = {}
            if args.floor is not None:
                floors = {"python, exec": [], f"python, {args.floor:g} ms, exec": []}
                for _ in range(2):  # warm-up: the interpreter's files
                    until_echo(exec_after(0, fresh()), bare_env, bare_cwd)
            for i in range(args.runs):
                elapsed, used = until_echo(al_argv, env, REPO)
                ours.append(elapsed)
                memory.append(used)
                prompts["ours"].append(PROMPT_SEEN[-1])
                bare.append(until_echo(fresh(), bare_env, bare_cwd)[0])
                prompts["bare"].append(PROMPT_SEEN[-1])
                if args.before:
                    elapsed, used = until_echo(al_argv, before_env, args.before)
                    earlier.append(elapsed)
                    earlier_memory.append(used)
                for times, wait in zip(floors.values(), (0.0, args.floor or 0.0), strict=False):
                    times.append(until_echo(exec_after(wait, fresh()), bare_env, bare_cwd)[0])
                print(
                    f"pair {i + 1:2d}: agentlaunch {ours[-1]:.3f}s · claude {bare[-1]:.3f}s"
                    + (f" · before {earlier[-1]:.3f}s" if earlier else ""),
                    flush=True,
                )
    ratio = median(ours) / median(bare)
    q1, q3 = quartiles([a / b for a, b in zip(ours, bare, strict=True)])
    print(f"claude {claude} · {args.runs} alternating pairs · start until the prompt echoes a key")
    print(f"  agentlaunch run (native): {spread(ours)} s")
    print(f"  bare claude, same argv  : {spread(bare)} s   overhead {median(ours) - median(bare):+.3f}s")
    print(f"  ratio                   : {ratio:.3f}  target <= {TARGET:.2f} {'ok' if ratio <= TARGET else 'MISSED'}")
    print(f"  per-pair ratios         : middle half {q1:.3f} .. {q3:.3f}")
    for side, seen, total in (("agentlaunch", prompts["ours"], ours), ("bare claude", prompts["bare"], bare)):
        print(
            f"  {side:11s} until the prompt {median(seen):.3f} s, the key to its echo"
            f" {median(t - p for t, p in zip(total, seen, strict=True)):.3f} s (medians)"
        )
    rss, uss = median(m[0] for m in memory), median(m[1] for m in memory)
    print(f"  agentlaunch's memory once the CLI is up: RSS {rss:.1f} MB, USS {uss:.1f} MB (targets 32 / 20 MB)")
    print(f"  agentlaunch's own CPU by the echo: {median(m[2] for m in memory):.1f} ms (the CLI not included)")
    if earlier:
        q1, q3 = quartiles([a / b for a, b in zip(ours, earlier, strict=True)])
        print(f"  from {args.before} (before): {spread(earlier)} s, ratio to bare {median(earlier) / median(bare):.3f}")
        print(f"  this against before     : {median(ours) / median(earlier):.3f} (per-round middle half {q1:.3f} .. {q3:.3f})")
        rss, uss = median(m[0] for m in earlier_memory), median(m[1] for m in earlier_memory)
        print(
            f"  before's memory         : RSS {rss:.1f} MB, USS {uss:.1f} MB; its CPU by the echo"
            f" {median(m[2] for m in earlier_memory):.1f} ms"
        )
    for side, times in floors.items():
        print(f"  {side + ':':24s}{spread(times)} s, ratio to bare {median(times) / median(bare):.3f}")
    print(f"  load average            : {os.getloadavg()[0]:.2f}")
    return 0


def exec_after(wait_ms: float, argv: list[str]) -> list[str]:
    """A Python that waits ``wait_ms`` milliseconds, then replaces itself with ``argv`` (on the same terminal)."""
    return [
        sys.executable,
        "-c",
        f"import os, sys, time; time.sleep({wait_ms / 1000!r}); os.execv(sys.argv[1], sys.argv[1:])",
        *argv,
    ]


if __name__ == "__main__":
    sys.exit(main())
