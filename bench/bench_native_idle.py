"""agentlaunch's own CPU while the real Codex / Gemini interface sits idle at its prompt, natively followed.

Run: ``python bench/bench_native_idle.py [--idle 30] [codex] [gemini]``

For each CLI (cached in ``$AGENTLAUNCH_TEST_CLI_CACHE``, default
``/tmp/agentlaunch-provider-clis``): ``agentlaunch run AGENT`` on a PTY against
the fake API, the startup turn answered, then ``--idle`` seconds with nothing
typed. Printed: agentlaunch's CPU over that time (its process: user + system,
from /proc) as a share of one core, beside the CLI's own (its process tree
below agentlaunch), so the cost of the sources (Codex: the hook socket and its
rollout; Gemini: inotify on its session folders) shows against the CLI's.
Target: agentlaunch under 0.5 % of a core. HOME and the state directory are
temporary folders.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from agentlaunch.fakeapi import gemini as gfake  # noqa: E402
from agentlaunch.fakeapi import responses as cfake  # noqa: E402
from testbed.agent_files import write_agent  # noqa: E402
from testbed.native_flows import cli_path  # noqa: E402
from testbed.native_tui import TitledResponsesFake, seed_codex_home  # noqa: E402
from testbed.pty_screen import spawn  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def tree(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout
    children: dict[int, list[int]] = {}
    for line in out.splitlines():
        p, pp = (int(x) for x in line.split())
        children.setdefault(pp, []).append(p)
    found, todo = [], list(children.get(pid, []))
    while todo:
        p = todo.pop()
        found.append(p)
        todo += children.get(p, [])
    return found


def state_of(env: dict[str, str], work: Path, agent: str) -> str | None:
    done = subprocess.run([sys.executable, "-m", "agentlaunch", "status", "--json"], env=env, cwd=work, capture_output=True)
    records = [r for r in json.loads(done.stdout or b"[]") if r.get("agent") == agent]
    return str(records[-1].get("state")) if records else None


def measure(name: str, idle: float) -> None:
    with tempfile.TemporaryDirectory(prefix="albench-") as tmp:
        root = Path(tmp)
        work, agents = root / "work", root / "agents"
        work.mkdir()
        agents.mkdir()
        state = root / "state"
        model = "gpt-5.5" if name == "codex" else "gemini-2.5-pro"
        write_agent(
            agents,
            "idle",
            {"provider": name, "model": model, "command": str(cli_path(name)), "working_dir": str(work), "startup": "Say hello."},
        )
        fake = (
            TitledResponsesFake(cfake.ResponsesScript(default=cfake.TextReply("hello there")))
            if name == "codex"
            else gfake.GeminiFake(gfake.GeminiScript(default=gfake.TextReply("hello there")))
        )
        with fake as api:
            if name == "codex":
                base = seed_codex_home(root / "home", api.base_url, work)
            else:
                base = gfake.prepare_gemini_home(root / "home", api.base_url)
            env = {
                **base,
                "AGENTLAUNCH_STATE_DIR": str(state),
                "AGENTLAUNCH_CONFIG_DIR": str(root / "config"),
                "AGENTLAUNCH_AGENTS_DIR": str(agents),
                "AGENTLAUNCH_TITLE": "0",
                "TERM": "xterm-256color",
                "PYTHONPATH": str(REPO),
            }
            tui = spawn([sys.executable, "-m", "agentlaunch", "run", "idle"], env, work)
            try:
                end = time.monotonic() + 90
                while time.monotonic() < end and not ("hello there" in tui.text() and state_of(env, work, "idle") == "waiting"):
                    tui.within(lambda: False, 1.0)
                reached = state_of(env, work, "idle")
                tui.within(lambda: False, 2.0)
                pid = tui.child.pid
                kids = tree(pid)
                before = cpu_seconds(pid), sum(cpu_seconds(k) for k in kids if Path(f"/proc/{k}").exists())
                t0 = time.monotonic()
                tui.within(lambda: False, idle)
                spent = time.monotonic() - t0
                after = cpu_seconds(pid), sum(cpu_seconds(k) for k in kids if Path(f"/proc/{k}").exists())
            finally:
                tui.close()
        ours, cli = after[0] - before[0], after[1] - before[1]
        print(
            f"{name:7s} idle {spent:5.1f} s: agentlaunch {ours:.2f} s CPU ({100 * ours / spent:.3f} % of a core), "
            f"the CLI {cli:.2f} s ({100 * cli / spent:.2f} %); status before: {reached}"
        )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--idle", type=float, default=30.0)
    parser.add_argument("clis", nargs="*", default=["codex", "gemini"])
    args = parser.parse_args()
    for name in args.clis:
        measure(name, args.idle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
