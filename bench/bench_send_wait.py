"""Benchmark `agentlaunch send AGENT PROMPT --wait` to Claude Code's own interface: this tree against another one.

Run: ``python bench/bench_send_wait.py --baseline /work/main [--runs N]``

Two native launches of the real Claude Code run side by side on PTYs (their screens read, or the interface blocks)
against one fake Anthropic API, in one seeded throwaway HOME: one of agent ``new`` from this tree, one of agent
``old`` from the ``--baseline`` source tree (put first on ``PYTHONPATH``). Each run sends one prompt to each with
``send --wait`` (the send itself from the same tree as its launch), alternating which goes first, and times it from
the send's start to its exit. What differs: this tree answers once Claude Code's ``Stop`` hook said the turn's last
message (its ``waiting``), a tree without that reads the transcript once more 0.3 s later. One warm-up send each is
not counted. Prints each side's median, their difference and ratio, and the middle half of the per-pair differences.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import MODEL, REPO, find_claude, quartiles  # noqa: E402

from agentlaunch.fakeapi.anthropic import FakeAnthropic, text_reply  # noqa: E402
from testbed.claude_tui import seed_home, tui_env  # noqa: E402
from testbed.pty_screen import Screen, spawn


def write_agent(agents: Path, name: str, claude: Path, work: Path) -> None:
    folder = agents / name
    folder.mkdir(parents=True)
    config = {"provider": "claude", "model": MODEL, "command": str(claude), "working_dir": str(work)}
    (folder / "agent.yaml").write_text(json.dumps(config))


def state(env: dict[str, str], work: Path, agent: str) -> str | None:
    done = subprocess.run(
        [sys.executable, "-m", "agentlaunch", "status", "--json"], env=env, cwd=work, capture_output=True, timeout=30
    )
    try:
        records = json.loads(done.stdout)
    except ValueError:
        return None
    return next((str(r.get("state")) for r in records if r.get("agent") == agent), None)


def pump_until(screens: list[Screen], done: object, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for screen in screens:
            screen.pump(0.01)
        if callable(done) and done():
            return
    raise SystemExit("timed out; screens:\n" + "\n---\n".join(s.text() for s in screens))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="another agentlaunch source tree (its repo root)")
    parser.add_argument("--runs", type=int, default=12)
    args = parser.parse_args()
    claude = find_claude()
    with tempfile.TemporaryDirectory(prefix="alsw-") as tmp:
        root = Path(tmp)
        home, work, agents = root / "home", root / "work", root / "agents"
        for folder in (home, work):
            folder.mkdir(mode=0o700)
        seed_home(home, [work])
        for name in ("new", "old"):
            write_agent(agents, name, claude, work)
        api = FakeAnthropic(default=text_reply("Answered."))
        with api.serve() as server:
            base = tui_env(
                server.url,
                home,
                {
                    "AGENTLAUNCH_TITLE": "0",
                    "AGENTLAUNCH_AGENTS_DIR": str(agents),
                    "AGENTLAUNCH_STATE_DIR": str(root / "state"),
                    "AGENTLAUNCH_CONFIG_DIR": str(root / "config"),
                    "PYTHONDONTWRITEBYTECODE": "1",
                },
            )
            envs = {"new": {**base, "PYTHONPATH": str(REPO)}, "old": {**base, "PYTHONPATH": str(args.baseline.resolve())}}
            screens = {n: spawn([sys.executable, "-m", "agentlaunch", "run", n], envs[n], work) for n in envs}
            try:
                for name in envs:
                    pump_until(list(screens.values()), lambda n=name: state(envs[n], work, n) == "waiting")
                times: dict[str, list[float]] = {"new": [], "old": []}
                for run in range(args.runs + 1):
                    order = ("new", "old") if run % 2 == 0 else ("old", "new")
                    for name in order:
                        start = time.monotonic()
                        argv = [sys.executable, "-m", "agentlaunch", "send", name, f"run {run}", "--wait"]
                        proc = subprocess.Popen(argv, env=envs[name], cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                        pump_until(list(screens.values()), lambda p=proc: p.poll() is not None)
                        took = time.monotonic() - start
                        out, err = proc.communicate()
                        if proc.returncode != 0 or b"Answered." not in out:
                            raise SystemExit(f"{name}: send exited {proc.returncode}: {out!r} {err!r}")
                        if run:  # the first is a warm-up
                            times[name].append(took)
                        pump_until(list(screens.values()), lambda n=name: state(envs[n], work, n) == "waiting")
            finally:
                for screen in screens.values():
                    screen.child.terminate(force=True)
    new, old = median(times["new"]), median(times["old"])
    diffs = [o - n for n, o in zip(times["new"], times["old"], strict=True)]
    q1, q3 = quartiles(diffs)
    print(f"send --wait, {args.runs} alternating pairs against Claude Code's interface (real claude, fake API):")
    print(f"  this tree  median {new * 1000:.0f} ms")
    print(f"  baseline   median {old * 1000:.0f} ms  ({args.baseline})")
    print(
        f"  baseline - this tree: median {median(diffs) * 1000:.0f} ms (middle half {q1 * 1000:.0f} .. {q3 * 1000:.0f} ms);"
        f" ratio of medians {new / old:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
