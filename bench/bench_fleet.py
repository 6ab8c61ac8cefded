"""Benchmark a team of N real Claude Codes until every first answer: `agentlaunch tmux up` against N bare `claude` in panes.

Run: ``python bench/bench_fleet.py [--agents 20] [--pairs 3] [--max-starting K] [--cold]``

Both sides start N Claude Code agents in a private tmux server (``tmux -L``), one window each (220x60, as `up`
makes them), against one fake Anthropic API on 127.0.0.1, each run in a fresh sealed environment
(harness.sealed_env: throwaway HOME, state and config directories; Claude Code's home seeded and the working
directory trusted, so no dialog stops either side):

- agentlaunch: ``agentlaunch tmux up c00 .. --no-attach`` with its defaults otherwise: at most 3 CLIs starting at a
  time (``max_starting``; ``--max-starting K`` passes K), ``--wait 30``, the ``windows`` layout. Each agent's first
  prompt is agentlaunch's startup message, which it gives Claude Code as the CLI's first prompt: one model call.
  Its state directory starts as the warm-up left it (the launch plans and rendered instructions of the agents'
  previous launch, as a team started again has them; the status records and the store left out); ``--cold``
  starts it empty.
- bare: N ``tmux new-window`` calls at once (no throttle: a person starting N ``claude`` in panes), each running
  ``env -i ENV claude ARGV``: the argv, environment and working directory agentlaunch gave that agent's Claude
  Code in the warm-up (read from ``/proc``), less agentlaunch's ``--settings`` object (its hooks and status
  line: what bare Claude Code does not run), with a fresh session id, the same startup message as its first
  prompt: the same N model calls. The files that argv names (the instructions file) are copied into the run's
  fresh directory.

Both sides share one bytecode cache (``PYTHONPYCACHEPREFIX``, filled by the warm-up: an installed agentlaunch has
its bytecode compiled).

"First answer received" is decided the same way on both sides, by the fake API: the bench wraps its responder and
notes, per session (Claude Code's ``x-claude-code-session-id`` header), when the server has written the last byte
of a streamed ``POST /v1/messages`` reply. The clock starts as the first tmux command is run and stops at the last
of the N sessions' first answers. The CPU is the user+sys CPU, at that moment (sampled every 0.1 s), of the tmux
server's whole tree (every live process's own and the children it has reaped: Claude Code's hook and status-line
processes are counted in its reaped children) and of the tmux client calls that started it (`tmux up` itself,
its polling and tmux calls included; the bare side's `tmux new-window` calls). The same breakdown is printed per
kind of process: the tmux server, agentlaunch's `run` processes (their own CPU, and their reaped children's),
Claude Code's own (the node process and its live helpers), what Claude Code reaped (hooks, status lines and its
other helpers), and the client calls.

Runs alternate in pairs (agentlaunch first, then bare; the next pair the other way round), after one warm-up of
each that is not counted. ``--before CHECKOUT`` adds a third side to each round (the sides take turns going
first): the same `tmux up` from another checkout of agentlaunch (``PYTHONPATH``; main before a change, in a
worktree of its own), with a warm-up and warm state of its own, so a change is measured in the same rounds.
``--before-max-starting K`` gives that third side ``--max-starting K`` (from this checkout when ``--before`` is
not given): two throttles measured in the same rounds. ``--floor`` makes the third side bare Claude Code *with*
agentlaunch's ``--settings`` (its hooks and status line, which then report to nobody: the http hooks' port is
closed, the status line's socket gone): what the CLI's own side of agentlaunch costs, the floor of any design that
keeps the hooks and the status line but adds no process of its own per agent.
Prints each run, the medians, their ratio (target <= 1.15), the middle half of the per-pair ratios, and the load
average. Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_team_start import end_server, make_team, proc_table, server_pid, tree  # noqa: E402
from fleet_cpu import KINDS, cpu_parts, own_and_reaped, rusage_children  # noqa: E402
from harness import find_claude, quartiles  # noqa: E402

from agentlaunch.fakeapi.anthropic import FakeAnthropic  # noqa: E402
from agentlaunch.fakeapi.server import FakeServer, Recorded, Reply  # noqa: E402

TARGET = 1.15
TICK = 0.1  # seconds between two looks at the answers and the process tree
SIZE = ("-x", "220", "-y", "60")  # the window size `tmux up` makes
OURS = ("AGENTLAUNCH_", "TMUX")  # agentlaunch's variables, and tmux's own (each pane gets its own)


class Answers:
    """The fake API's responder, noting when each session's first streamed answer was written whole."""

    def __init__(self, api: FakeAnthropic) -> None:
        self.api = api
        self.lock = threading.Lock()
        self.done: dict[str, float] = {}

    def clear(self) -> None:
        with self.lock:
            self.done.clear()

    def count(self) -> tuple[int, float]:
        with self.lock:
            return len(self.done), max(self.done.values(), default=float("nan"))

    def respond(self, req: Recorded) -> Reply:
        reply = self.api.respond(req)
        session = req.headers.get("x-claude-code-session-id")
        if req.method == "POST" and req.path.split("?")[0].endswith("/v1/messages") and reply.status == 200 and session:
            reply.chunks = self._noted(reply.chunks, session)
        return reply

    def _noted(self, chunks: Iterable[bytes], session: str) -> Iterator[bytes]:
        yield from chunks  # the server writes and flushes each chunk before it asks for the next
        with self.lock:
            self.done.setdefault(session, time.monotonic())


@dataclass
class Run:
    label: str
    answered: float = float("nan")  # seconds until every agent's first answer was written
    cpu: float = float("nan")  # the whole tree's CPU seconds then, the client calls included
    kinds: dict[str, float] = field(default_factory=dict)
    load1: float = 0.0


@dataclass
class Bare:
    """What bare Claude Code is started with, per agent: argv, environment and working directory (from the warm-up)."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    session: str
    settings: list[str]  # ``--settings`` and its value, left out of ``argv``


def watch(
    label: str, answers: Answers, count: int, socket: str, start: float, cpu0: float, client: subprocess.Popen[bytes] | None
) -> Run:
    """Sample until every session has its first answer; the run's figures at that moment."""
    run = Run(label)
    while True:
        done, last = answers.count()
        if done >= count:
            running = client is not None and client.poll() is None  # reaped now if it ended: in RUSAGE_CHILDREN
            clients = rusage_children() - cpu0  # before the bench's own tmux call below
            if running and client is not None:
                own = sum(own_and_reaped(client.pid))  # `tmux up` still running: its own CPU and its tmux calls
                clients = clients + own if client.poll() is None else rusage_children() - cpu0
            server = server_pid(socket)
            if server is None:
                raise SystemExit(f"{label}: no tmux server on {socket}")
            parts = cpu_parts(proc_table(), server)
            parts["tmux clients"] = clients
            run.kinds, run.cpu, run.answered = parts, sum(parts.values()), last - start
            run.load1 = os.getloadavg()[0]
            return run
        if time.monotonic() - start > 600:
            raise SystemExit(f"{label}: {done} of {count} first answers after 600 s")
        if client is not None and client.poll() not in (None, 0):
            err = client.stderr.read().decode() if client.stderr else ""
            raise SystemExit(f"{label}: tmux up failed ({client.returncode}):\n{err}")
        time.sleep(TICK)


def fresh_root(base: Path, name: str) -> Path:
    root = base / name
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    return root


def ours(
    base: Path,
    answers: Answers,
    api_url: str,
    claude: Path,
    count: int,
    max_starting: int | None,
    warm: Path | None,
    checkout: Path | None = None,
    label: str = "agentlaunch",
) -> tuple[Run, Path]:
    """One `tmux up` of the team (from ``checkout`` when given); its run and its root (kept until the next run)."""
    root = fresh_root(base, "al")  # one place for both agentlaunch sides: the launch plans are keyed by it
    env, work, names = make_team(root, api_url, claude, count)
    env["PYTHONPYCACHEPREFIX"] = str(base / "pycache")
    if checkout is not None:
        env["PYTHONPATH"] = str(checkout)  # `tmux up`, each pane's `run` and their hook scripts come from there
    if warm is not None:
        shutil.copytree(warm, env["AGENTLAUNCH_STATE_DIR"], dirs_exist_ok=True)
    socket = f"al-bench-fleet-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    argv = [sys.executable, "-m", "agentlaunch", "tmux", "up", *names, "--socket", socket, "--no-attach"]
    if max_starting is not None:
        argv += ["--max-starting", str(max_starting)]
    answers.clear()
    cpu0 = rusage_children()
    start = time.monotonic()
    up = subprocess.Popen(argv, env=env, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        run = watch(label, answers, count, socket, start, cpu0, up)
        if up.wait(timeout=300) != 0:
            raise SystemExit(f"tmux up exited {up.returncode}:\n{up.stderr.read().decode() if up.stderr else ''}")
        if not bare_of:  # the warm-up's argv are the bare side's in every run
            bare_of.update(read_bare(server_pid(socket)))
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
        end_server(socket, server_pid(socket))
    return run, root


bare_of: dict[str, Bare] = {}


def read_bare(server: int | None) -> dict[str, Bare]:
    """Each agent's Claude Code under the server: argv without ``--settings``, environment, working directory."""
    found: dict[str, Bare] = {}
    if server is None:
        return found
    table = proc_table()
    for pid in tree(table, server):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
            environ = Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0")[:-1]
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except (OSError, ValueError):
            continue
        if "--settings" not in argv or "--session-id" not in argv:
            continue
        env = dict(item.split("=", 1) for item in environ if "=" in item)
        at = argv.index("--settings")
        agent = env.get("AGENTLAUNCH_AGENT") or argv[argv.index("--session-id") + 1]
        session = argv[argv.index("--session-id") + 1]
        found[agent] = Bare(argv[:at] + argv[at + 2 :], env, cwd, session, argv[at : at + 2])
    return found


def bare(base: Path, answers: Answers, ours_root: Path, count: int, settings: bool = False) -> Run:
    """N bare Claude Codes in the windows of a private tmux server, all started at once (``settings``: agentlaunch's)."""
    root = fresh_root(base, "bare")
    old = str(ours_root)

    def moved(text: str) -> str:
        return text.replace(old, str(root))

    env0, _work, _names = make_team(root, "http://unused", Path("claude"), 0)  # the seeded home and work directory
    prompts = Path(ours_root) / "state" / "system-prompts"
    if prompts.exists():
        shutil.copytree(prompts, root / "state" / "system-prompts")
    socket = f"al-bench-fleet-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    commands = []
    for i, spec in enumerate(sorted(bare_of.values(), key=lambda b: b.argv[-1])[:count]):
        session = str(uuid.uuid4())
        argv = [moved(a).replace(spec.session, session) for a in spec.argv + (spec.settings if settings else [])]
        env = [f"{k}={moved(v)}" for k, v in spec.env.items() if not k.startswith(OURS)]
        head = ["new-session", "-d", "-s", "bare", *SIZE] if i == 0 else ["new-window", "-d", "-t", "bare:"]
        commands.append(
            [
                "tmux",
                "-L",
                socket,
                *head,
                "-n",
                f"b{i:02d}",
                "-c",
                moved(spec.cwd),
                *(x for item in env for x in ("-e", item)),
                "--",
                *argv,
            ]
        )
    client_env = {k: v for k, v in env0.items() if not k.startswith(OURS)}
    answers.clear()
    cpu0 = rusage_children()
    start = time.monotonic()
    try:
        for command in commands:
            subprocess.run(command, check=True, env=client_env, stdin=subprocess.DEVNULL, capture_output=True)
        return watch("floor" if settings else "bare", answers, count, socket, start, cpu0, None)
    finally:
        end_server(socket, server_pid(socket))


def show(run: Run) -> str:
    parts = "  ".join(f"{k} {v:.1f}" for k, v in run.kinds.items() if k in KINDS)
    return f"{run.label:<12} answered {run.answered:6.2f}s  CPU {run.cpu:6.2f}s  ({parts})  load1 {run.load1:5.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--max-starting", type=int, default=None, help="passed to `tmux up` (default: its own, 3)")
    parser.add_argument("--cold", action="store_true", help="agentlaunch's state directory starts empty each run")
    parser.add_argument("--before", type=Path, help="a third side: the same `tmux up` from this checkout of agentlaunch")
    parser.add_argument(
        "--before-max-starting",
        type=int,
        default=None,
        help="the third side's --max-starting (the third side is this checkout unless --before names one)",
    )
    parser.add_argument(
        "--floor", action="store_true", help="the third side: bare Claude Code with agentlaunch's --settings (hooks, status line)"
    )
    args = parser.parse_args()
    if args.floor and (args.before is not None or args.before_max_starting is not None):
        parser.error("--floor is a third side of its own: not with --before or --before-max-starting")
    third = args.before is not None or args.before_max_starting is not None or args.floor
    if args.pairs < 1 or args.agents < 1:
        parser.error("--agents and --pairs must be at least 1")
    claude = find_claude()
    api = FakeAnthropic()
    answers = Answers(api)
    base = Path(tempfile.mkdtemp(prefix="al-bench-fleet-"))
    print(
        f"{args.agents} Claude Code agents until every first answer: agentlaunch tmux up (max-starting "
        f"{args.max_starting or 'default'}, {'cold' if args.cold else 'warm'} state) against bare claude in "
        f"windows; {args.pairs} pairs; {os.cpu_count()} CPUs, load before {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    if args.floor:
        print("third side, 'before': bare Claude Code with agentlaunch's --settings", flush=True)
    elif third:
        print(
            f"third side, 'before': {args.before or 'this checkout'}, max-starting "
            f"{args.before_max_starting or args.max_starting or 'default'}",
            flush=True,
        )
    runs: dict[str, list[Run]] = {"agentlaunch": [], "bare": [], "before": []}
    sides = ["agentlaunch", "bare"] + (["before"] if third else [])
    try:
        with FakeServer(answers.respond) as server:
            api.server = server

            def team(warm: Path | None, side: str = "agentlaunch") -> tuple[Run, Path]:
                if side == "agentlaunch":
                    return ours(base, answers, server.url, claude, args.agents, args.max_starting, warm)
                starting = args.max_starting if args.before_max_starting is None else args.before_max_starting
                return ours(base, answers, server.url, claude, args.agents, starting, warm, args.before, "before")

            warmup, root = team(None)
            print("warm-up " + show(warmup), flush=True)
            if len(bare_of) < args.agents:
                raise SystemExit(f"warm-up: found {len(bare_of)} Claude Codes of {args.agents}")
            warm = {"agentlaunch": None if args.cold else kept_state(base, root, "agentlaunch")}
            if third and not args.floor:
                warmup, root = team(None, "before")
                print("warm-up " + show(warmup), flush=True)
                warm["before"] = None if args.cold else kept_state(base, root, "before")
            print("warm-up " + show(bare(base, answers, root, args.agents)), flush=True)
            for pair in range(args.pairs):
                for side in sides[pair % len(sides) :] + sides[: pair % len(sides)]:  # each side first in turn
                    if side == "bare" or (side == "before" and args.floor):
                        run = bare(base, answers, root, args.agents, settings=side == "before")
                    else:
                        run, root = team(warm[side], side)
                    runs[side].append(run)
                    print(show(run), flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    report(runs, args.pairs, "floor" if args.floor else "before")


def kept_state(base: Path, root: Path, side: str) -> Path:
    """The warm-up's state directory less its status records and store: what a team started again finds."""
    warm = base / f"warm-state-{side}"
    shutil.copytree(root / "state", warm, ignore=shutil.ignore_patterns("status", "*.db", "*.db-*", "*.sqlite*"))
    return warm


def report(runs: dict[str, list[Run]], pairs: int, third: str = "before") -> None:
    ours_, bare_, before = runs["agentlaunch"], runs["bare"], runs["before"]
    print()
    head = f"{'median of ' + str(pairs) + ' runs each':<34}{'agentlaunch':>12}{'bare':>10}{'ratio':>8}"
    print(head + (f"{third:>10}{'ratio':>8}{'agentlaunch/' + third:>20}" if before else ""))
    rows: list[tuple[str, Callable[[Run], float]]] = [
        ("every first answer (s)", lambda r: r.answered),
        ("tree CPU until then (s)", lambda r: r.cpu),
    ]
    rows += [(f"  {kind} CPU (s)", partial(kind_cpu, kind=kind)) for kind in KINDS]
    for name, value in rows:
        a = statistics.median(value(r) for r in ours_)
        b = statistics.median(value(r) for r in bare_)
        line = f"{name:<34}{a:>12.2f}{b:>10.2f}{ratio(a, b):>8}"
        if before:
            c = statistics.median(value(r) for r in before)
            line += f"{c:>10.2f}{ratio(c, b):>8}{ratio(a, c):>20}"
        print(line)
    for name, value in rows[:2]:
        for label, side, base in (
            ("agentlaunch/bare", ours_, bare_),
            (f"{third}/bare", before, bare_),
            (f"agentlaunch/{third}", ours_, before),
        ):
            if side and base:
                ratios = [value(a) / value(b) for a, b in zip(side, base, strict=True)]
                q1, q3 = quartiles(ratios) if len(ratios) > 1 else (ratios[0], ratios[0])
                print(f"per-pair ratios {label}, {name}: middle half {q1:.3f} .. {q3:.3f}")
    print(f"target: every first answer <= {TARGET:.2f} of bare; load average now {os.getloadavg()[0]:.2f}")


def kind_cpu(run: Run, kind: str) -> float:
    return run.kinds.get(kind, 0.0)


def ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}" if b else "-"


if __name__ == "__main__":
    main()
