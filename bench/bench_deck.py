"""The deck with 20 live agents: its first frame, a key answered, its CPU while idle.

Run: ``python bench/bench_deck.py [--agents 20] [--rounds 5] [--idle 20] [--compile] [--before CHECKOUT]``

The bench makes its own world in temporary folders: a private tmux server with one pane per
agent (a ``sleep`` standing for the agent's launch, carrying the agent's pane option) and a
status record per agent whose pid is that pane's, so every row has a pane and the preview
captures one. The deck runs in a pane of that server, a real terminal of 160x40, read with
capture-pane (polled every 5 ms: the figures carry that much).

- first frame: from starting ``agentlaunch deck`` to its first row and footer on screen, and the
  deck process's own CPU by the time they were seen (what the frame costs, less the waits of a
  loaded machine), alternating with
  ``agentlaunch status`` printing the same agents (the ratio deck/status is printed per pair);
  target 0.5 s. With ``--before CHECKOUT`` (a tree holding an ``agentlaunch`` package, e.g. an
  export of main), that checkout's deck runs a third in each round, and the ratio this/before is
  printed per round.
- a key: Down sent with send-keys until the preview's title names the next agent; target 50 ms.
- idle: the deck's CPU (its process and the tmux clients it ran, from /proc) over ``--idle``
  seconds with nothing changing, as a share of one core, and the tmux server's beside it;
  target 1 %.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness import machine_line  # noqa: E402

from agentlaunch.live.status import process_start  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int, children: bool = True) -> float:
    """User + system CPU of ``pid`` and (``children``) of its children it has waited for (the tmux clients it ran)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11 : 15 if children else 13]) / TICK


class World:
    def __init__(self, agents: int) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="bench-deck-"))
        self.socket = f"bench-deck-{uuid.uuid4().hex[:8]}"
        self.env = {
            **os.environ,
            "AGENTLAUNCH_STATE_DIR": str(self.tmp / "state"),
            "HOME": str(self.tmp / "home"),
            "AGENTLAUNCH_TMUX_SOCKET": self.socket,
            "AGENTLAUNCH_AGENTS_DIR": str(self.tmp / "agents"),
        }
        (self.tmp / "agents").mkdir()
        status = self.tmp / "state" / "status"
        status.mkdir(parents=True)
        self.tmux("new-session", "-d", "-s", "agents", "-x", "120", "-y", "30", "sleep", "3600")
        now = datetime.now(UTC)
        for i in range(agents):
            name = f"agent{i:02d}"
            if i:
                self.tmux("new-window", "-t", "agents", "sleep", "3600")
            pane, pid = self.tmux("display-message", "-p", "-t", "agents", "#{pane_id} #{pane_pid}").split()
            self.tmux("set-option", "-p", "-t", pane, "@agentlaunch_agent", name)
            record = {
                "version": 1,
                "agent": name,
                "provider": "claude",
                "model": "claude-sonnet-4-5",
                "pid": int(pid),
                "pid_start": process_start(int(pid)),
                "state": "asking" if i % 7 == 0 else "waiting",
                "state_since": (now - timedelta(seconds=30 + i)).isoformat(timespec="seconds"),
                "working_dir": str(self.tmp),
                "percent": 12.5,
                "context": 25_000,
                "to_compaction": 140_000,
                "cost": "$0.0123",
                "session_id": f"s-{i}",
                "cache": {"expires_at": (now + timedelta(seconds=290)).isoformat(timespec="seconds"), "ttl_s": 300},
            }
            (status / f"{pid}.json").write_text(json.dumps(record))
        self.last, self.count = f"agent{agents - 1:02d}", agents

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True).stdout

    def screen(self, target: str) -> str:
        return self.tmux("capture-pane", "-p", "-t", target)

    def until(self, target: str, text: str, timeout: float = 20.0) -> float:
        start = time.perf_counter()
        while time.perf_counter() - start < timeout:
            if text in self.screen(target):
                return time.perf_counter()
            time.sleep(0.005)
        raise TimeoutError(f"{text!r} never showed in {target}:\n{self.screen(target)}")

    def start(self, name: str, *argv: str, pythonpath: Path | None = None) -> tuple[float, str]:
        """Start ``argv`` in a new session of 160x40 (with ``pythonpath`` first on Python's path); its start time and target."""
        env = [f"-e{k}={v}" for k, v in self.env.items() if k.startswith(("AGENTLAUNCH_", "HOME"))]
        env += [f"-ePYTHONPATH={pythonpath}"] if pythonpath else []
        started = time.perf_counter()
        # cwd "/": `python -m` puts the working directory first on the path (a checkout's cwd would shadow PYTHONPATH)
        self.tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "40", "-c", "/", *env, *argv)
        return started, f"={name}:"

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)
        # tmux leaves its socket file behind; it is ours, remove it.
        (Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}" / self.socket).unlink(missing_ok=True)
        shutil.rmtree(self.tmp, ignore_errors=True)


def first_frames(world: World, rounds: int, before: Path | None = None) -> None:
    times: dict[str, list[float]] = {"deck": [], "before": [], "status": []}
    cpu: dict[str, list[float]] = {"deck": [], "before": []}  # the deck's own CPU once its frame was seen
    sides = ["deck", "status"] + (["before"] if before else [])
    for i in range(rounds):
        for which in sides[i % len(sides) :] + sides[: i % len(sides)]:  # alternating, each side first in turn
            if which == "status":
                started, target = world.start(f"{which}{i}", "sh", "-c", f"{sys.executable} -m agentlaunch status; sleep 60")
                done = world.until(target, world.last)
            else:  # its list shows the first rows (the preview takes the rest): the first one and the footer
                started, target = world.start(
                    f"{which}{i}", sys.executable, "-m", "agentlaunch", "deck", pythonpath=before if which == "before" else None
                )
                world.until(target, "agent00")
                done = world.until(target, "⏎ attach")
                pid = int(world.tmux("display-message", "-p", "-t", target, "#{pane_pid}").strip())
                cpu[which].append(cpu_seconds(pid, children=False))
            times[which].append(done - started)
            world.tmux("kill-session", "-t", target[:-1])
        deck, status = times["deck"][-1], times["status"][-1]
        line = (
            f"  round {i + 1}: deck {deck * 1000:6.0f} ms (CPU {cpu['deck'][-1] * 1000:4.0f})   "
            f"status {status * 1000:6.0f} ms   ratio {deck / status:.2f}"
        )
        if before:
            line += (
                f"   before {times['before'][-1] * 1000:6.0f} ms (CPU {cpu['before'][-1] * 1000:4.0f})"
                f"   this/before {deck / times['before'][-1]:.2f}"
            )
        print(line, flush=True)
    summary = (
        f"first frame, {world.count} agents: deck median {statistics.median(times['deck']) * 1000:.0f} ms (target 500), "
        f"`agentlaunch status` {statistics.median(times['status']) * 1000:.0f} ms"
    )
    summary += f"; the deck's CPU by then median {statistics.median(cpu['deck']) * 1000:.0f} ms"
    if before:
        ratio = statistics.median(d / b for d, b in zip(times["deck"], times["before"], strict=True))
        was, was_cpu = statistics.median(times["before"]), statistics.median(cpu["before"])
        summary += f"; before {was * 1000:.0f} ms (CPU {was_cpu * 1000:.0f}), this/before per round median {ratio:.2f}"
    print(summary)


def key_and_idle(world: World, idle: float) -> None:
    started, target = world.start("deck", sys.executable, "-m", "agentlaunch", "deck")
    world.until(target, "⏎ attach")
    time.sleep(2.0)  # the first slow read (worktrees, store) is done
    pid = int(world.tmux("display-message", "-p", "-t", target, "#{pane_pid}").strip())
    answers = []
    for _ in range(15):
        before = world.screen(target)
        title = next(line for line in before.splitlines() if "╭─ agent" in line)
        sent = time.perf_counter()
        world.tmux("send-keys", "-t", target, "Down")
        while world.screen(target).count(title) and time.perf_counter() - sent < 5:
            time.sleep(0.002)
        answers.append(time.perf_counter() - sent)
    print(
        f"a key (Down, until the preview names the next agent): median {statistics.median(answers) * 1000:.0f} ms, "
        f"max {max(answers) * 1000:.0f} ms (target 50; includes capture-pane polling)"
    )
    server = int(world.tmux("display-message", "-p", "#{pid}").strip())
    deck0, own0, server0, t0 = cpu_seconds(pid), cpu_seconds(pid, False), cpu_seconds(server), time.perf_counter()
    time.sleep(idle)
    deck1, own1, server1, t1 = cpu_seconds(pid), cpu_seconds(pid, False), cpu_seconds(server), time.perf_counter()
    share = 100 / (t1 - t0)
    print(
        f"idle {idle:.0f} s with 20 agents: deck {(deck1 - deck0) * share:.2f} % of a core (target 1 %; its own process "
        f"{(own1 - own0) * share:.2f} %, the tmux clients it ran {(deck1 - deck0 - own1 + own0) * share:.2f} %), "
        f"tmux server {(server1 - server0) * share:.2f} %"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--idle", type=float, default=20.0)
    parser.add_argument(
        "--compile",
        action="store_true",
        help="byte-compile this tree first: with PYTHONDONTWRITEBYTECODE set, every run compiles each "
        "agentlaunch module it imports, as an installed copy never does",
    )
    parser.add_argument("--before", type=Path, help="a checkout whose deck runs beside this tree's (e.g. an export of main)")
    parser.add_argument("--no-idle", action="store_true", help="the first frames only")
    args = parser.parse_args()
    if args.compile:
        compileall.compile_dir(str(REPO / "agentlaunch"), quiet=1)
    before = args.before
    if before is not None and args.compile:  # a copy: the other checkout (maybe someone's) gets no __pycache__
        copy = Path(tempfile.mkdtemp(prefix="bench-deck-before-"))
        shutil.copytree(before / "agentlaunch", copy / "agentlaunch")
        compileall.compile_dir(str(copy / "agentlaunch"), quiet=1)
        before = copy
    print(f"{machine_line()}; bytecode {'compiled first' if args.compile else 'as found'}")
    world = World(args.agents)
    try:
        first_frames(world, args.rounds, before)
        if not args.no_idle:
            key_and_idle(world, args.idle)
    finally:
        world.close()
        if before is not None and before != args.before:
            shutil.rmtree(before, ignore_errors=True)


if __name__ == "__main__":
    main()
