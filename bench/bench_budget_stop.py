"""Budgets stop before the next call: N runs per mode on the real Claude Code against the fake Anthropic API.

Run: ``python bench/bench_budget_stop.py [--runs 40] [--modes headless,native] [--lock]``

Each run: a new session whose first call asks for an instant tool (``echo hi``) and costs $0.30 of a $0.05
session budget; the fake API has two more replies queued, so every request after the crossing one is a call
the budget should have prevented. Prints, per mode, the runs with calls after the crossing call, the total
of such calls, and how many runs stored exactly the requests the fake API served (store == provider's own
record). ``--lock`` holds the store's write lock during each run (the guard then runs 0.25-1 s late, as the
e2e tests make it). Figures only: no assertion, no timing.

The real claude comes from ``testbed.clis.ensure_cli("claude")`` (``AGENTLAUNCH_TEST_CLI_CACHE``).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agentlaunch.fakeapi.anthropic import ApiUsage, FakeAnthropic, claude_env, text_reply, tool_reply  # noqa: E402
from agentlaunch.usage.store import Store  # noqa: E402
from testbed.agent_files import write_agent  # noqa: E402
from testbed.claude_tui import seed_home, tui_env  # noqa: E402
from testbed.clis import ensure_cli  # noqa: E402
from testbed.pty_screen import run_to_exit  # noqa: E402


def script() -> FakeAnthropic:
    return FakeAnthropic(
        [
            tool_reply("Bash", {"command": "echo hi", "description": "Print hi"}, ApiUsage(100_000, 0, 0, 30)),
            tool_reply("Bash", {"command": "echo again", "description": "Print again"}, ApiUsage(8, 0, 0, 9)),
            text_reply("never", ApiUsage(1, 0, 0, 1)),
        ]
    )


def stored(state: Path) -> int:
    with Store.open(state / "usage.sqlite3") as store:
        return sum(len(store.calls_for_session(s.session_id)) for s in store.list_sessions())


def one_run(mode: str, claude: Path, lock: bool) -> tuple[int, int, int]:
    """(exit code, requests the fake API served, calls stored) of one run."""
    api = script()
    with tempfile.TemporaryDirectory(prefix="albb-") as folder, api.serve():
        root = Path(folder)
        home, work, agents, state = root / "home", root / "work", root / "agents", root / "state"
        for path in (home, work, agents, state):
            path.mkdir(mode=0o700)
        assert api.server is not None
        conf = {
            "provider": "claude",
            "model": "claude-sonnet-4-5",
            "command": str(claude),
            "working_dir": str(work),
            "allowed_tools": ["Bash"],
            "budget": {"session_usd": 0.05},
            "startup": "Spend.",
        }
        write_agent(agents, "spender", conf)
        extra = {
            "AGENTLAUNCH_STATE_DIR": str(state),
            "AGENTLAUNCH_CONFIG_DIR": str(root / "config"),
            "AGENTLAUNCH_AGENTS_DIR": str(agents),
            "AGENTLAUNCH_TITLE": "0",
            "CLAUDE_CODE_MAX_RETRIES": "0",
            "AGENTLAUNCH_STORE_BUSY_TIMEOUT": "1",
        }
        holder = None
        if lock:
            Store.open(state / "usage.sqlite3").close()
            holder = sqlite3.connect(state / "usage.sqlite3", isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")
        try:
            if mode == "headless":
                env = {**os.environ, **claude_env(api.server.url, home, extra)}
                done = subprocess.run(
                    [sys.executable, "-m", "agentlaunch", "run", "spender", "run echo hi"],
                    env=env,
                    cwd=work,
                    capture_output=True,
                    timeout=240,
                )
                code = done.returncode
            else:
                seed_home(home, [work])
                keep = {k: os.environ[k] for k in os.environ if k.startswith("XDG_")}
                env = tui_env(api.server.url, home, {**keep, **extra})
                screen = run_to_exit([sys.executable, "-m", "agentlaunch", "run", "spender"], env, work)
                code = screen.child.exitstatus if screen.child.exitstatus is not None else -1
        finally:
            if holder is not None:
                holder.execute("ROLLBACK")
                holder.close()
        return code, len(api.message_requests()), stored(state)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--modes", default="headless,native")
    parser.add_argument("--lock", action="store_true", help="hold the store's write lock during each run")
    args = parser.parse_args()
    claude = ensure_cli("claude")
    for mode in args.modes.split(","):
        results = [one_run(mode, claude, args.lock) for _ in range(args.runs)]
        after = [requests - 1 for _, requests, _ in results]
        print(
            f"{mode:8s} runs {len(results)}: exit 6 in {sum(code == 6 for code, _, _ in results)}; "
            f"calls after the crossing call: {sum(a > 0 for a in after)} runs, {sum(after)} calls; "
            f"store == requests in {sum(s == r for _, r, s in results)} runs "
            f"(requests {sum(r for _, r, _ in results)}, stored {sum(s for _, _, s in results)})",
            flush=True,
        )


if __name__ == "__main__":
    main()
