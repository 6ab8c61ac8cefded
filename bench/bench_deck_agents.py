"""The deck must not slow the agents: 20 Claude Code agents' answers with the deck open against without.

Run: ``python bench/bench_deck_agents.py [--agents 20] [--pairs 4]``

One sealed environment (harness.sealed_env: throwaway HOME, state and config directories, one fake Anthropic
API on 127.0.0.1), N real Claude Code agents (``c00`` ..) trusted in one working directory, started once with
``agentlaunch tmux up`` on a private tmux server (bench_team_start's team), and waited for until each has
answered its startup message. Then rounds, alternating (pair 1: deck, none; pair 2: none, deck; ...):

- deck: ``agentlaunch deck`` runs in a 160x40 session of the agents' own server (as a person runs it), up
  (its footer and first row on screen) and settled (its first read of the worktrees, the store and the 20
  definitions done: its CPU grew by less than 20 ms in a second) before the prompts, then 2 s of quiet; it
  is quit with ``q`` after the round;
- none: no deck, the same 2 s of quiet before the prompts.

In each round every agent is sent one prompt at once (N ``agentlaunch send AGENT PROMPT --wait`` started
together): each agent's answer time is its ``send``'s wall time, the round's figure the median of the N and
the last one (all answered). Printed: each round, then the medians of the rounds side by side with their
ratio (deck/none), and the deck's own CPU per round (its process and the tmux clients it ran). The load
average is printed before and after: the machine is shared. Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_deck import cpu_seconds  # noqa: E402
from bench_team_start import end_server, make_team, server_pid  # noqa: E402
from harness import find_claude  # noqa: E402

from agentlaunch.fakeapi.anthropic import FakeAnthropic  # noqa: E402
from agentlaunch.live.status import read_records  # noqa: E402

SETTLE = 2.0  # seconds of quiet before the prompts, on both sides (the deck has settled already: open_deck waits)


@dataclass
class Round:
    side: str
    median: float
    last: float
    failed: int
    deck_cpu: float = 0.0  # seconds: the deck's process and its tmux clients over the round
    load1: float = 0.0


class Team:
    def __init__(self, root: Path, api_url: str, count: int) -> None:
        self.env, self.work, self.names = make_team(root, api_url, find_claude(), count)
        self.socket = f"al-bench-deck-agents-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.env["AGENTLAUNCH_TMUX_SOCKET"] = self.socket
        self.status = Path(self.env["AGENTLAUNCH_STATE_DIR"]) / "status"

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True).stdout

    def up(self) -> None:
        argv = [sys.executable, "-m", "agentlaunch", "tmux", "up", *self.names, "--no-attach", "--wait", "600"]
        done = subprocess.run(argv, env=self.env, cwd=self.work, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"tmux up failed ({done.returncode}): {done.stderr}")
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:  # each has answered its startup message and waits
            records = [r.data for r in read_records(self.status, clean=False) if not r.stale]
            if sum(r.get("state") == "waiting" and bool(r.get("turns")) for r in records) == len(self.names):
                return
            time.sleep(0.5)
        raise SystemExit("the team never settled")

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "=deck:")

    def open_deck(self) -> int:
        env = [f"-e{k}={v}" for k, v in self.env.items() if k.startswith(("AGENTLAUNCH_", "HOME", "XDG_", "PYTHON"))]
        self.tmux(
            "new-session",
            "-d",
            "-s",
            "deck",
            "-x",
            "160",
            "-y",
            "40",
            "-c",
            str(self.work),
            *env,
            sys.executable,
            "-m",
            "agentlaunch",
            "deck",
        )
        deadline = time.monotonic() + 60
        while not ("⏎ attach" in (shown := self.screen()) and self.names[0] in shown):
            if time.monotonic() > deadline:
                raise SystemExit(f"the deck never showed its agents:\n{shown}")
            time.sleep(0.05)
        pid = int(self.tmux("display-message", "-p", "-t", "=deck:", "#{pane_pid}").strip())
        before = cpu_seconds(pid)
        while time.monotonic() < deadline:  # settled: its start's work done (the definitions' load is the most)
            time.sleep(1.0)
            now = cpu_seconds(pid)
            if now - before < 0.02:
                break
            before = now
        return pid

    def close_deck(self) -> None:
        self.tmux("send-keys", "-t", "=deck:", "q")
        deadline = time.monotonic() + 30
        while "deck" in self.tmux("list-sessions", "-F", "#{session_name}").split():
            if time.monotonic() > deadline:
                raise SystemExit(f"the deck did not quit:\n{self.screen()}")
            time.sleep(0.05)

    def ask_all(self, prompt: str) -> tuple[list[float], int]:
        """Every agent sent ``prompt`` at once; each one's seconds until its answer, and how many failed."""
        start = time.monotonic()
        sends = {
            name: subprocess.Popen(
                [sys.executable, "-m", "agentlaunch", "send", name, f"{prompt} ({name})", "--wait"],
                env=self.env,
                cwd=self.work,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for name in self.names
        }
        took, failed = [], 0
        waiting = dict(sends)
        while waiting:
            for name, proc in list(waiting.items()):
                if proc.poll() is not None:
                    took.append(time.monotonic() - start)
                    del waiting[name]
                    if proc.returncode != 0:
                        failed += 1
                        said = proc.stderr.read().decode().strip().splitlines() if proc.stderr else []
                        print(f"    {name}: send exit {proc.returncode}: {said[-1] if said else ''}", flush=True)
            time.sleep(0.01)
        for proc in sends.values():
            if proc.stderr:
                proc.stderr.close()
        return took, failed


def one_round(team: Team, side: str, number: int) -> Round:
    pid = team.open_deck() if side == "deck" else 0
    before = cpu_seconds(pid) if pid else 0.0
    time.sleep(SETTLE)
    took, failed = team.ask_all(f"Round {number}: say pong.")
    cpu = (cpu_seconds(pid) - before) if pid else 0.0
    if side == "deck":
        team.close_deck()
    return Round(side, statistics.median(took), max(took), failed, cpu, os.getloadavg()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--pairs", type=int, default=4)
    args = parser.parse_args()
    print(
        f"{args.agents} Claude Code agents, {args.pairs} pairs (deck open / none); {os.cpu_count()} CPUs, "
        f"load before {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        flush=True,
    )
    api = FakeAnthropic()
    rounds: list[Round] = []
    with api.serve(), tempfile.TemporaryDirectory(prefix="al-bench-deck-agents-") as folder:
        assert api.server is not None
        team = Team(Path(folder), api.server.url, args.agents)
        started = time.monotonic()
        try:
            team.up()
            print(f"team up and settled in {time.monotonic() - started:.1f} s", flush=True)
            for pair in range(args.pairs):
                for side in ("deck", "none") if pair % 2 == 0 else ("none", "deck"):
                    r = one_round(team, side, len(rounds) + 1)
                    rounds.append(r)
                    print(
                        f"  pair {pair + 1} {side:<4}  answers: median {r.median:5.2f} s, all {r.last:5.2f} s, "
                        f"failed {r.failed}"
                        + (f", deck CPU {r.deck_cpu:.2f} s" if side == "deck" else "")
                        + f"  (load1 {r.load1:.2f})",
                        flush=True,
                    )
        finally:
            end_server(team.socket, server_pid(team.socket))
    deck = [r for r in rounds if r.side == "deck"]
    none = [r for r in rounds if r.side == "none"]
    print(f"\nmedian of {len(deck)} rounds each     deck open      none   ratio")
    for name, value in (("an agent's answer (s)", lambda r: r.median), ("all answered (s)", lambda r: r.last)):
        a, b = statistics.median(value(r) for r in deck), statistics.median(value(r) for r in none)
        print(f"{name:<32}{a:>10.2f}{b:>10.2f}{a / b:>8.2f}")
    pairs = [d.last / n.last for d, n in zip(deck, none, strict=True)]
    print(f"per pair, all answered deck/none: {' '.join(f'{x:.2f}' for x in pairs)}")
    print(
        f"the deck's CPU in a round: median {statistics.median(r.deck_cpu for r in deck):.2f} s; "
        f"load after {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )


if __name__ == "__main__":
    main()
