"""Benchmark starting a team of real Claude Codes with `tmux up`: throttled (3 at a time) against all at once.

Run: ``python bench/bench_team_start.py [--agents 20] [--pairs 2] [--throttle 3]``

Each run makes a fresh sealed environment (harness.sealed_env: throwaway HOME, state and config directories,
one fake Anthropic API on 127.0.0.1), N Claude Code agents (``c00`` ..) trusted in one working directory, and
a private tmux server (``tmux -L``), then runs ``agentlaunch tmux up c00 .. --max-starting K --no-attach``,
K the throttle, or N for all at once (the behaviour before the throttle). Runs alternate in pairs (throttled
first, then all at once; the next pair the other way round), so a machine's drift falls on both sides alike.

While it runs, every ~0.2 s the bench reads the agents' status records and the process tree of the tmux
server (every agent's agentlaunch, its Claude Code and their children):

- ready: seconds from the start of `up` until every agent's CLI has reported that it is up (its record said
  ``waiting``, or already its startup turn; ``asking`` is not up), each first seen at a sample;
- up: seconds until `tmux up` itself returned (it also checks each agent stays alive 1.5 s);
- settled: seconds until every agent is ``waiting`` again after its first turn (agentlaunch's startup message,
  which each agent gets once its CLI is up: one call to the fake API), and the team's CPU until then: the
  whole cost of bringing the team up, the same work on both sides;
- team CPU: user+sys CPU seconds of the tmux server's whole tree when all were ready (reaped children included;
  an agent up early has its startup turn counted in it, one up late not yet);
- up CPU: the CPU of `tmux up` itself (its polling, its tmux calls);
- runnable max / mean: the team's processes in state R at a sample (of 2 cores: more is a queue);
- team CPU share: team CPU until settled / settled, the cores the team had on average (the machine's scheduler shares its
  cores between runnable processes: a team with fewer of them gets less of a busy machine);
- RSS peak: the tree's summed resident memory at its highest sample;
- idle: the team's CPU over 5 s once all are settled, in % of one core per agent (what an agent that is up costs
  while the rest of the team starts);
- asking: agents seen ``asking`` at some sample (a CLI that did not report within ``ready_timeout``, 20 s: on
  a machine too busy to start it in time, it is taken for one waiting on its own screen until it reports);
- machine: the most runnable processes of the whole machine at a sample (``procs_running``), and the
  1-minute load average at the end, which also count whatever else the machine runs (a shared machine).

Asserts nothing; prints each run, then the medians side by side with their ratio.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import MODEL, find_claude, sealed_env  # noqa: E402

from agentlaunch.fakeapi.anthropic import FakeAnthropic  # noqa: E402
from agentlaunch.live.status import read_records  # noqa: E402
from testbed.claude_tui import seed_home  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
SAMPLE = 0.2  # seconds between two looks


@dataclass
class Run:
    label: str
    ready: float = float("nan")
    settled: float = float("nan")  # every agent waiting again after its startup turn
    settled_cpu: float = float("nan")
    up: float = float("nan")
    team_cpu: float = float("nan")
    up_cpu: float = float("nan")
    runnable: list[int] = field(default_factory=list)
    rss_peak: float = 0.0
    asking: set[str] = field(default_factory=set)
    first_up: dict[str, float] = field(default_factory=dict)  # agent -> when its record first said it started
    not_waiting: dict[str, str] = field(default_factory=dict)  # when up returned: agent -> its state, if not waiting
    idle_pct: float = float("nan")  # the team's CPU once all are up, % of one core per agent
    machine_runnable: int = 0
    load1: float = 0.0
    exit_code: int = 0


def proc_table() -> dict[int, tuple[int, str, float, int]]:
    """pid -> (ppid, state, CPU seconds with reaped children, RSS bytes) of every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        rest = raw[raw.rfind(")") + 2 :].split()  # the command name may hold spaces and parentheses
        cpu = sum(int(x) for x in rest[11:15]) / TICK  # utime, stime, cutime, cstime
        table[int(entry)] = (int(rest[1]), rest[0], cpu, int(rest[21]) * PAGE)
    return table


def tree(table: dict[int, tuple[int, str, float, int]], root: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for pid, (ppid, *_rest) in table.items():
        kids.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in table:
            found.append(pid)
            todo += kids.get(pid, [])
    return found


def machine_runnable() -> int:
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("procs_running"):
            return int(line.split()[1]) - 1  # less this bench, which is running as it reads
    return 0


def server_pid(socket: str) -> int | None:
    proc = subprocess.run(["tmux", "-L", socket, "display-message", "-p", "#{pid}"], capture_output=True, text=True)
    return int(proc.stdout.strip()) if proc.returncode == 0 and proc.stdout.strip().isdigit() else None


def make_team(root: Path, api_url: str, claude: Path, count: int) -> tuple[dict[str, str], Path, list[str]]:
    env = sealed_env(root, api_url)
    work, agents = root / "work", root / "agents"
    work.mkdir()
    seed_home(root / "home", [work], key=env["ANTHROPIC_API_KEY"])  # trusted: no dialog, each CLI reports it is up
    names = [f"c{i:02d}" for i in range(count)]
    for name in names:
        (agents / name).mkdir(parents=True)
        config = {"provider": "claude", "model": MODEL, "command": str(claude), "working_dir": str(work)}
        (agents / name / "agent.yaml").write_text(yaml.safe_dump(config))
    env.update(AGENTLAUNCH_AGENTS_DIR=str(agents), CLAUDE_CODE_MAX_RETRIES="0", AGENTLAUNCH_TITLE="0")
    return env, work, names


def one_run(label: str, throttle: int, api_url: str, claude: Path, count: int) -> Run:
    run = Run(label)
    socket = f"al-bench-team-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    with tempfile.TemporaryDirectory(prefix="al-bench-team-") as folder:
        env, work, names = make_team(Path(folder), api_url, claude, count)
        status = Path(env["AGENTLAUNCH_STATE_DIR"]) / "status"
        argv = [
            sys.executable,
            "-m",
            "agentlaunch",
            "tmux",
            "up",
            *names,
            "--socket",
            socket,
            "--no-attach",
            "--wait",
            "300",
            "--max-starting",
            str(throttle),
        ]
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        server = None
        up = subprocess.Popen(
            argv, env=env, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            while True:
                now = time.monotonic()
                returned = up.poll() is not None and run.up != run.up
                if returned:
                    run.up = now - start
                server = server or server_pid(socket)
                table = proc_table()
                team = tree(table, server) if server else []
                run.runnable.append(sum(table[p][1] == "R" for p in team))
                run.rss_peak = max(run.rss_peak, sum(table[p][3] for p in team) / 2**30)
                run.machine_runnable = max(run.machine_runnable, machine_runnable())
                records = [r.data for r in read_records(status, clean=False) if not r.stale]
                states = {str(r.get("agent")): r.get("state") for r in records}
                run.asking |= {a for a, s in states.items() if s == "asking"}
                for agent, state in states.items():
                    if state in ("waiting", "thinking", "tool"):  # its CLI reported it is up (asking: not yet)
                        run.first_up.setdefault(agent, now - start)
                if returned:
                    run.not_waiting = {a: str(s) for a, s in states.items() if s != "waiting"}
                if run.ready != run.ready and len(run.first_up) == count:
                    run.ready = max(run.first_up.values())
                    run.team_cpu = sum(table[p][2] for p in team)
                done = [r for r in records if r.get("state") == "waiting" and r.get("turns")]
                if run.settled != run.settled and len(done) == count:
                    run.settled = now - start
                    run.settled_cpu = sum(table[p][2] for p in team)
                if run.ready == run.ready and run.up == run.up and run.settled == run.settled:
                    break
                if now - start > 600:
                    raise SystemExit(f"{label}: not all ready after 600 s: {states}")
                time.sleep(SAMPLE)
            run.idle_pct = idle_cpu(server, count) if server else float("nan")
            err = up.stderr.read().decode() if up.stderr else ""
            run.exit_code = up.wait()
            cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            run.up_cpu = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime
            run.load1 = os.getloadavg()[0]
            if run.exit_code != 0:
                sys.stderr.write(err)
        finally:
            if up.poll() is None:
                up.kill()
                up.wait()
            end_server(socket, server)
    return run


def idle_cpu(server: int, count: int, seconds: float = 5.0) -> float:
    """The whole team's CPU over ``seconds`` once it is up, in % of one core per agent."""
    before = proc_table()
    time.sleep(seconds)
    after = proc_table()
    used = sum(after[p][2] - before[p][2] for p in tree(after, server) if p in before)
    return 100 * used / seconds / count


def end_server(socket: str, server: int | None) -> None:
    """Kill the private server (its agents get SIGHUP) and wait until its processes are gone."""
    team = tree(proc_table(), server) if server else []
    subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
    deadline = time.monotonic() + 60
    while team and time.monotonic() < deadline:
        team = [p for p in team if Path(f"/proc/{p}").exists()]
        time.sleep(0.2)
    (Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}" / socket).unlink(missing_ok=True)


def show(run: Run) -> str:
    mean = statistics.fmean(run.runnable) if run.runnable else 0.0
    return (
        f"{run.label:<12} ready {run.ready:6.1f}s  up {run.up:6.1f}s  team CPU {run.team_cpu:6.1f}s  "
        f"settled {run.settled:6.1f}s with CPU {run.settled_cpu:6.1f}s  "
        f"up CPU {run.up_cpu:5.1f}s  runnable max {max(run.runnable, default=0):3d} mean {mean:5.2f}  "
        f"RSS peak {run.rss_peak:5.2f} GiB  idle {run.idle_pct:4.1f}%/agent  asking {len(run.asking):2d}  "
        f"machine runnable max {run.machine_runnable:3d}  "
        f"load1 {run.load1:5.2f}  exit {run.exit_code}"
        + (f"  not waiting when up returned: {run.not_waiting}" if run.not_waiting else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--throttle", type=int, default=3)
    args = parser.parse_args()
    claude = find_claude()
    runs: dict[str, list[Run]] = {"throttled": [], "all at once": []}
    print(
        f"{args.agents} Claude Code agents, throttle {args.throttle} against all at once, {args.pairs} pairs; "
        f"{os.cpu_count()} CPUs, load before {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    api = FakeAnthropic()
    with api.serve():
        assert api.server is not None
        for pair in range(args.pairs):
            order = [("throttled", args.throttle), ("all at once", args.agents)]
            for label, throttle in order if pair % 2 == 0 else order[::-1]:
                run = one_run(label, throttle, api.server.url, claude, args.agents)
                runs[label].append(run)
                print(show(run), flush=True)
    print()
    rows = [
        ("all ready (s)", lambda r: r.ready),
        ("tmux up returned (s)", lambda r: r.up),
        ("team CPU until ready (s)", lambda r: r.team_cpu),
        ("all settled (s)", lambda r: r.settled),
        ("team CPU until settled (s)", lambda r: r.settled_cpu),
        ("tmux up's own CPU (s)", lambda r: r.up_cpu),
        ("team runnable, max", lambda r: float(max(r.runnable, default=0))),
        ("team runnable, mean", lambda r: statistics.fmean(r.runnable) if r.runnable else 0.0),
        ("team CPU share (cores)", lambda r: r.settled_cpu / r.settled),
        ("team RSS peak (GiB)", lambda r: r.rss_peak),
        ("idle CPU, % core per agent", lambda r: r.idle_pct),
        ("agents seen asking", lambda r: float(len(r.asking))),
        ("machine runnable, max", lambda r: float(r.machine_runnable)),
    ]
    print(f"{'median of ' + str(args.pairs) + ' runs each':<28}{'throttled':>12}{'all at once':>14}{'ratio':>8}")
    for name, value in rows:
        a = statistics.median(value(r) for r in runs["throttled"])
        b = statistics.median(value(r) for r in runs["all at once"])
        ratio = f"{a / b:.2f}" if b else "-"
        print(f"{name:<28}{a:>12.2f}{b:>14.2f}{ratio:>8}")


if __name__ == "__main__":
    main()
