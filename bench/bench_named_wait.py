"""Benchmark what ``NAMED_WAIT`` (5 s, agentlaunch/launch/native/cli_report.py) costs a native launch: per turn, the
gap between the CLI's own ``done`` (its OSC 7501 report) and the ``waiting`` of the source that follows the turn
(Claude Code's hooks; Codex's app-server on the default route).

Run: ``python bench/bench_named_wait.py [--turns N] [--cli claude|codex|both]``

One native launch per CLI (the real pinned binary on a PTY, its screen read; a fake API on 127.0.0.1; a seeded
throwaway home), its startup turn first; then N turns, each sent with ``agentlaunch send AGENT PROMPT --wait`` (Claude
Code: typed into its interface; Codex: ``turn/start`` on the app-server), the next once the launch says ``waiting``.
The launch runs in a Python that records, with the monotonic clock the bench shares, every report the CLI makes
(``CliReports.on_report``) and every state set (``Launch.set_state``: its state and source); nothing in agentlaunch
changes. Per turn (between two sends):

* ``gap``: the source's ``waiting`` minus the CLI's first ``done`` (negative: the source said it first, and the
  ``done`` changes nothing);
* ``lag``: how long the launch's ``waiting`` came after the CLI's ``done`` (0 when the source came first): what the
  wait costs. Where no source says ``waiting`` within ``NAMED_WAIT``, the CLI's word ends the turn after the wait
  (``lag`` about 5 s: counted as "by the CLI").

Prints, per CLI, the turns, how many had the CLI's ``done`` first, the median / 90th percentile / largest ``gap``
and ``lag``, and the turns ended by the CLI's word.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import MODEL, REPO, find_claude  # noqa: E402

from agentlaunch.fakeapi.anthropic import FakeAnthropic, text_reply  # noqa: E402
from agentlaunch.fakeapi.responses import ResponsesScript  # noqa: E402
from agentlaunch.launch.native.cli_report import NAMED_WAIT, NAMING  # noqa: E402
from testbed.claude_tui import seed_home, tui_env  # noqa: E402
from testbed.clis import ensure_cli  # noqa: E402
from testbed.native_tui import TitledResponsesFake, seed_codex_home  # noqa: E402
from testbed.pty_screen import Screen, spawn  # noqa: E402

PROBE = """
import json, os, sys, time
from agentlaunch.launch import session
from agentlaunch.launch.native import cli_report
log = open(os.environ["BENCH_NAMED_WAIT_LOG"], "a", buffering=1)
def say(**fields):
    log.write(json.dumps({"t": time.monotonic(), **fields}) + "\\n")
on_report = cli_report.CliReports.on_report
def report(self, said):
    say(kind="cli", state=said.state)
    on_report(self, said)
cli_report.CliReports.on_report = report
set_state = session.Launch.set_state
def state(self, state, *, always=False, reason=None, source="agentlaunch"):
    before = self.state
    set_state(self, state, always=always, reason=reason, source=source)
    say(kind="state", state=state, source=source, before=before, now=self.state)
session.Launch.set_state = state
from agentlaunch.entry import main
sys.argv = ["agentlaunch", *sys.argv[1:]]
main()
"""


def status(env: dict[str, str], work: Path, agent: str) -> str | None:
    done = subprocess.run(
        [sys.executable, "-m", "agentlaunch", "status", "--json"], env=env, cwd=work, capture_output=True, timeout=30
    )
    try:
        records = json.loads(done.stdout)
    except ValueError:
        return None
    return next((str(r.get("state")) for r in records if r.get("agent") == agent), None)


def pump_until(screen: Screen, done: Callable[[], bool], timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        screen.pump(0.05)
        if done():
            return
    raise SystemExit("timed out; the screen:\n" + screen.text())


def drive(cli: str, turns: int, root: Path) -> tuple[list[float], Path]:
    """One launch of ``cli``, its startup turn, then ``turns`` sent turns; the sends' times and the probe's log."""
    home, work, agents, log = root / "home", root / "work", root / "agents", root / "states.jsonl"
    for folder in (home, work, agents / "bench"):
        folder.mkdir(parents=True, mode=0o700)
    common = {
        "AGENTLAUNCH_TITLE": "0",
        "AGENTLAUNCH_AGENTS_DIR": str(agents),
        "AGENTLAUNCH_STATE_DIR": str(root / "state"),
        "AGENTLAUNCH_CONFIG_DIR": str(root / "config"),
        "BENCH_NAMED_WAIT_LOG": str(log),
        "PYTHONPATH": str(REPO),
    }
    config: dict[str, Any] = {"working_dir": str(work), "startup": "Say hi."}
    if cli == "claude":
        claude = find_claude()
        seed_home(home, [work])
        api: Any = FakeAnthropic(default=text_reply("Answered."))
        config.update(provider="claude", model=MODEL, command=str(claude))
        served = api.serve()
        url = served.__enter__().url
        env = tui_env(url, home, common)
    else:
        served = TitledResponsesFake(ResponsesScript())  # every turn: the default text reply
        fake = served.__enter__()
        config.update(provider="codex", model="gpt-5.5", command=str(ensure_cli("codex")))
        env = {**seed_codex_home(home, fake.base_url, work), **common}
    (agents / "bench" / "agent.yaml").write_text(json.dumps(config))
    sends: list[float] = []
    screen = spawn([sys.executable, "-c", PROBE, "run", "bench"], env, work)
    try:
        pump_until(screen, lambda: status(env, work, "bench") == "waiting")
        for turn in range(turns):
            sends.append(time.monotonic())
            argv = [sys.executable, "-m", "agentlaunch", "send", "bench", f"turn {turn}", "--wait"]
            proc = subprocess.Popen(argv, env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            pump_until(screen, lambda p=proc: p.poll() is not None)  # type: ignore[misc]
            out, err = proc.communicate()
            if proc.returncode != 0:
                raise SystemExit(f"{cli}: send exited {proc.returncode}: {out!r} {err!r}")
            pump_until(screen, lambda: status(env, work, "bench") == "waiting")
        sends.append(time.monotonic())
    finally:
        screen.child.terminate(force=True)
        served.__exit__(None, None, None)
    return sends, log


def turns_of(sends: list[float], log: Path) -> list[dict[str, float | None]]:
    """Per sent turn: the CLI's first ``done``, the source's first ``waiting``, and the launch's ``waiting``."""
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    found = []
    for start, end in zip(sends, sends[1:], strict=False):
        within = [e for e in lines if start <= e["t"] < end]
        cli = next((e["t"] for e in within if e["kind"] == "cli" and e["state"] == "done"), None)
        said = [e for e in within if e["kind"] == "state" and e["state"] == "waiting" and e["source"] in NAMING]
        source = said[0]["t"] if said else None
        ended = next((e for e in within if e["kind"] == "state" and e["now"] == "waiting" and e["before"] != "waiting"), None)
        found.append(
            {
                "cli": cli,
                "source": source,
                "ended": ended["t"] if ended else None,
                "by_cli": 1.0 if ended and ended["source"] == "cli" else 0.0,
            }
        )
    return found


def ms(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return f"median {median(ordered) * 1000:.0f} ms, p90 {p90 * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--cli", choices=("claude", "codex", "both"), default="both")
    args = parser.parse_args()
    for cli in ("claude", "codex") if args.cli == "both" else (args.cli,):
        with tempfile.TemporaryDirectory(prefix="alnw-") as tmp:
            sends, log = drive(cli, args.turns, Path(tmp))
            turns = turns_of(sends, log)
        reported = [t for t in turns if t["cli"] is not None]
        gaps = [t["source"] - t["cli"] for t in reported if t["source"] is not None]  # type: ignore[operator]
        lags = [max(t["ended"] - t["cli"], 0.0) for t in reported if t["ended"] is not None]  # type: ignore[operator]
        first = sum(1 for g in gaps if g > 0)
        by_cli = sum(int(t["by_cli"] or 0) for t in turns)
        print(f"{cli}: {len(turns)} turns, the CLI's done in {len(reported)}, a source's waiting in {len(gaps)}")
        print(f"  the CLI's done first in {first} of {len(gaps)} turns (NAMED_WAIT {NAMED_WAIT:g} s)")
        print(f"  gap (source's waiting - CLI's done): {ms(gaps)}; smallest {min(gaps, default=0) * 1000:.0f} ms")
        print(f"  lag (the launch's waiting after the CLI's done): {ms(lags)}")
        print(f"  turns ended by the CLI's word after the wait (no source said waiting within it): {by_cli}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
