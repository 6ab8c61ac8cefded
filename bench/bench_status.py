"""`status --line`, `status --json` and the hook reporter: each beside its baseline, in alternating pairs.

Run: ``python bench/bench_status.py [--rounds 21] [--agents 20] [--before CHECKOUT] [--hook-before REV] [--compile]``

The bench makes its own world: a private tmux server with one pane per agent (a ``sleep``
standing for the agent's launch) and a status record per agent whose pid is that pane's, so
every agent is live. Each round runs every command once, in an order that rotates from round
to round, and a ratio is taken within the round (the machine's load changes between rounds,
not within one); the medians of those ratios are printed.

- ``status --line demo`` (the ``agentlaunch`` script beside this Python) against ``python -c
  pass``: target 3x.
- ``status --json`` with ``--agents`` live agents against ``tmux list-panes`` on the same server:
  target 8x.
- beside each, the full CLI (typer, rich) printing the same, and with ``--before CHECKOUT``
  that checkout's ``agentlaunch`` (e.g. /work/main before the lean path) on the same records.
- the hook reporter and Claude Code's status-line command: CPU (user + system, from wait4) per
  event, this tree's as the CLIs run them (imported: ``hook_socket.script_argv``) against the file
  as it was at ``--hook-before`` (git) run by its path, with a 3 KB ``PostToolUse`` payload sent to
  a datagram socket the bench drains.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness import machine_line  # noqa: E402

from agentlaunch.live.status import process_start  # noqa: E402
from agentlaunch.providers.native.hook_socket import script_argv  # noqa: E402

NATIVE = REPO / "agentlaunch" / "providers" / "native"
FULL_CLI = "import sys; sys.argv[0] = 'agentlaunch'; from agentlaunch.cli import main; main()"


def run(argv: list[str], env: dict[str, str], stdin: Path | None = None) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run of ``argv``; its output is thrown away."""
    with open(stdin or os.devnull, "rb") as fh:
        start = time.perf_counter()
        # cwd "/": `python -m` puts the working directory before PYTHONPATH (--before would run this tree)
        proc = subprocess.Popen(argv, stdin=fh, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd="/")
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{argv} exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


class World:
    def __init__(self, agents: int) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="bench-status-"))
        self.socket = f"bench-status-{uuid.uuid4().hex[:8]}"
        self.env = {**os.environ, "AGENTLAUNCH_STATE_DIR": str(self.tmp / "state"), "AGENTLAUNCH_TMUX_SOCKET": self.socket}
        self.env.pop("PYTHONPATH", None)
        status = self.tmp / "state" / "status"
        status.mkdir(parents=True)
        self.tmux("new-session", "-d", "-s", "agents", "sleep", "3600")
        for _ in range(agents - 1):
            self.tmux("new-window", "-d", "-t", "agents", "sleep", "3600")
        pids = [int(x) for x in self.tmux("list-panes", "-a", "-F", "#{pane_pid}").split()]
        now = datetime.now(UTC)
        for i, pid in enumerate(pids):
            record = {
                "version": 1,
                "agent": "demo" if i == 0 else f"agent-{i:02d}",
                "provider": "claude",
                "model": "claude-sonnet-4-5",
                "session_id": str(uuid.uuid4()),
                "pid": pid,
                "pid_start": process_start(pid),
                "state": "waiting",
                "state_since": (now - timedelta(seconds=75)).isoformat(timespec="seconds"),
                "turns": 3,
                "calls": 7,
                "usage": {"input": 1200, "cache_write": 30000, "cache_read": 90000, "output": 2100, "reasoning": 0},
                "context": 45_123,
                "window": 200_000,
                "window_source": "model",
                "percent": 22.6,
                "to_compaction": 109_877,
                "cost_usd": 0.41,
                "cost": "$0.4100",
                "priced_calls": 7,
                "unpriced_calls": 0,
                "cache": {
                    "expires_at": (now + timedelta(minutes=4)).isoformat(timespec="seconds"),
                    "ttl_s": 300,
                    "context": 45_123,
                    "next_turn_cold_usd": 0.17,
                    "next_turn_warm_usd": 0.01,
                },
                "started": now.isoformat(timespec="seconds"),
                "updated": now.isoformat(timespec="seconds"),
            }
            (status / f"{pid}.json").write_text(json.dumps(record, indent=1) + "\n")

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True).stdout

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, check=False)
        subprocess.run(["rm", "-rf", str(self.tmp)], check=False)


def agentlaunch_script() -> list[str]:
    script = Path(sys.executable).with_name("agentlaunch")
    return [str(script)] if script.exists() else [sys.executable, "-m", "agentlaunch"]


def pairs(cases: dict[str, tuple[list[str], dict[str, str], Path | None]], rounds: int) -> dict[str, list[tuple[float, float]]]:
    """Every case once per round, the order rotated each round: {case: [(wall, cpu), ...]}."""
    names = list(cases)
    found: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
    for _ in range(2):  # warm the page cache and the pyc files
        for name in names:
            run(*cases[name])
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            found[name].append(run(*cases[name]))
    return found


def report(title: str, found: dict[str, list[tuple[float, float]]], baseline: str, target: str) -> None:
    print(f"\n{title} ({len(found[baseline])} rounds; ratio = median of per-round ratios to {baseline!r}; {target})")
    print(f"  {'':34} {'wall ms':>9} {'ratio':>7} {'cpu ms':>9} {'ratio':>7}")
    base = found[baseline]
    for name, runs in found.items():
        wall = statistics.median(w for w, _ in runs) * 1000
        cpu = statistics.median(c for _, c in runs) * 1000
        r_wall = statistics.median(w / b[0] for (w, _), b in zip(runs, base, strict=True))
        r_cpu = statistics.median(c / b[1] if b[1] else float("nan") for (_, c), b in zip(runs, base, strict=True))
        print(f"  {name:34} {wall:9.1f} {r_wall:7.2f} {cpu:9.1f} {r_cpu:7.2f}")


def git_file(rev: str, path: Path, into: Path) -> Path | None:
    done = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{path.relative_to(REPO)}"], capture_output=True, check=False)
    if done.returncode != 0:
        return None
    into.write_bytes(done.stdout)
    return into


def hooks(world: World, rounds: int, rev: str) -> None:
    folder = world.tmp / "hooks"
    folder.mkdir()
    path = str(folder / "s.sock")
    sink = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sink.bind(path)
    sink.settimeout(0.2)
    done = threading.Event()

    def drain() -> None:  # every report is taken, as the launch's relay does: a full socket would cost the senders less
        while not done.is_set():
            try:
                sink.recv(1 << 18)
            except TimeoutError:
                continue

    drainer = threading.Thread(target=drain, daemon=True)
    drainer.start()
    payload = {
        "session_id": str(uuid.uuid4()),
        "transcript_path": "/home/u/.claude/projects/p/s.jsonl",
        "cwd": "/work/p",
        "hook_event_name": "PostToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": "/work/p/src/app.py", "old_string": "x = 1\n" * 120, "new_string": "x = 2\n" * 120},
        "tool_response": {"filePath": "/work/p/src/app.py", "success": True},
    }
    stdin = folder / "payload.json"
    stdin.write_text(json.dumps(payload))
    record = world.tmp / "state" / "status" / next(p for p in os.listdir(world.tmp / "state" / "status"))
    config = folder / "statusline.json"
    config.write_text(json.dumps({"socket": path, "status": str(record), "user_command": None}))
    line_in = folder / "statusline-in.json"
    line_in.write_text(
        json.dumps(
            {
                "session_id": "s",
                "model": {"id": "claude-sonnet-4-5", "display_name": "Sonnet"},
                "context_window": {"total_input_tokens": 45123, "context_window_size": 200000},
                "cost": {"total_cost_usd": 0.41},
                "cwd": "/work/p",
                "version": "2.1.332",
            }
        )
    )
    python = [sys.executable, "-I", "-S"]
    cases: dict[str, tuple[list[str], dict[str, str], Path | None]] = {
        "python -I -S -c pass": ([*python, "-c", "pass"], world.env, None),
        # As the CLIs run them: imported from this tree (hook_socket.script_argv), not run by their path.
        "hook_report.py (this tree)": (
            script_argv(sys.executable, NATIVE / "hook_report.py", path, "PostToolUse"),
            world.env,
            stdin,
        ),
        "claude_statusline.py (this tree)": (
            script_argv(sys.executable, NATIVE / "claude_statusline.py", str(config)),
            world.env,
            line_in,
        ),
    }
    for name in ("hook_report.py", "claude_statusline.py"):
        old = git_file(rev, NATIVE / name, folder / f"old_{name}")
        if old is not None:
            args = [path, "PostToolUse"] if name == "hook_report.py" else [str(config)]
            cases[f"{name} ({rev})"] = ([*python, str(old), *args], world.env, stdin if name == "hook_report.py" else line_in)
    found = pairs(cases, rounds)
    done.set()
    drainer.join()
    sink.close()
    report("Hook reporter and status line, CPU per event", found, "python -I -S -c pass", "each is python -I -S and a script")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--before", type=Path, help="a checkout whose `python -m agentlaunch` runs beside (e.g. /work/main)")
    parser.add_argument("--hook-before", default="main", help="the git revision of the reporters to compare with")
    parser.add_argument(
        "--compile",
        action="store_true",
        help="byte-compile this tree (and a copy of --before's package) first: with "
        "PYTHONDONTWRITEBYTECODE set, every run compiles each agentlaunch module it imports, "
        "as an installed copy never does",
    )
    args = parser.parse_args()
    if args.compile:
        compileall.compile_dir(str(REPO / "agentlaunch"), quiet=1)
    print(
        f"{machine_line()}; "
        f"bytecode {'compiled first' if args.compile else 'as found'} "
        f"(PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})"
    )
    world = World(args.agents)
    try:
        script, env = agentlaunch_script(), world.env
        before = args.before
        if before is not None and args.compile:  # a copy: the other checkout (maybe someone's) gets no __pycache__
            shutil.copytree(before / "agentlaunch", world.tmp / "before" / "agentlaunch")
            compileall.compile_dir(str(world.tmp / "before" / "agentlaunch"), quiet=1)
            before = world.tmp / "before"
        before_env = {**env, "PYTHONPATH": str(before)} if before else None
        line: dict[str, tuple[list[str], dict[str, str], Path | None]] = {
            "python -c pass": ([sys.executable, "-c", "pass"], env, None),
            "agentlaunch status --line demo": ([*script, "status", "--line", "demo"], env, None),
            "full CLI status --line demo": ([sys.executable, "-c", FULL_CLI, "status", "--line", "demo"], env, None),
        }
        listing: dict[str, tuple[list[str], dict[str, str], Path | None]] = {
            "tmux list-panes -a": (["tmux", "-L", world.socket, "list-panes", "-a"], env, None),
            "agentlaunch status --json": ([*script, "status", "--json"], env, None),
            "full CLI status --json": ([sys.executable, "-c", FULL_CLI, "status", "--json"], env, None),
        }
        if before_env is not None:
            line[f"{args.before} --line"] = ([sys.executable, "-m", "agentlaunch", "status", "--line", "demo"], before_env, None)
            listing[f"{args.before} --json"] = ([sys.executable, "-m", "agentlaunch", "status", "--json"], before_env, None)
        report("status --line, one live agent", pairs(line, args.rounds), "python -c pass", "target <= 3x")
        report(f"status --json, {args.agents} live agents", pairs(listing, args.rounds), "tmux list-panes -a", "target <= 8x")
        hooks(world, args.rounds, args.hook_before)
    finally:
        world.close()


if __name__ == "__main__":
    main()
