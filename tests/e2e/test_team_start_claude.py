"""`tmux up` starts a team of real Claude Codes a few at a time: never more `starting` at once than the throttle.

A private tmux server; three Claude Code agents against the fake Anthropic API, `--max-starting 2` (the third
waits for a place: a fourth would wait the same way). While `up`
runs, the test looks again and again at the agents' panes and their status records: an agent whose pane is
alive and whose record is missing or says `starting` is starting. Counts, not timing: never more than 2, and 2
reached (the throttle starts two together, it is no queue of one). Afterwards all three are `waiting`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentlaunch.fakeapi.anthropic import FakeAnthropic, claude_env
from agentlaunch.live.status import read_records
from testbed.agent_files import write_agent
from testbed.claude_tui import seed_home
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.required import need
from tests.support.waits import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(400)]

need("tmux")

TEAM = ("t1", "t2", "t3")


def live_panes(socket: str) -> dict[int, str]:
    """pid -> agent of every live agent pane on the server (none before the server exists)."""
    fmt = "#{@agentlaunch_agent}\t#{pane_pid}\t#{pane_dead}"
    proc = subprocess.run(["tmux", "-L", socket, "list-panes", "-a", "-F", fmt], capture_output=True, text=True)
    rows = [line.split("\t") for line in proc.stdout.splitlines()] if proc.returncode == 0 else []
    return {int(pid): agent for agent, pid, dead in rows if agent and dead == "0"}


def starting_now(socket: str, status_dir: Path) -> set[str]:
    """The agents starting: a live pane whose status record is not there yet or says `starting`."""
    panes = live_panes(socket)  # first the panes, then the records: a record read later is never older
    states = {r.data.get("pid"): r.data.get("state") for r in read_records(status_dir, clean=False) if not r.stale}
    return {agent for pid, agent in panes.items() if states.get(pid) in (None, "starting")}


def test_three_claude_codes_with_a_throttle_of_two_start_two_at_a_time_and_all_end_waiting(
    socket: str, anthropic: FakeAnthropic, isolated_home: Path, agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    assert anthropic.server is not None
    env = claude_env(anthropic.server.url, isolated_home, {"CLAUDE_CODE_MAX_RETRIES": "0"})
    seed_home(isolated_home, [workdir], key=env["ANTHROPIC_API_KEY"])  # trusted: no dialog, each reports it is up
    env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
    for name in TEAM:
        write_agent(
            agents_dir,
            name,
            {"provider": "claude", "model": "claude-sonnet-4-5", "command": str(claude_bin), "working_dir": str(workdir)},
        )
    status_dir = Path(os.environ["AGENTLAUNCH_STATE_DIR"]) / "status"
    argv = [
        sys.executable,
        "-m",
        "agentlaunch",
        "tmux",
        "up",
        *TEAM,
        "--socket",
        socket,
        "--no-attach",
        "--wait",
        "120",
        "--max-starting",
        "2",
    ]
    seen: list[set[str]] = []
    with subprocess.Popen(argv, env={**os.environ, **env}, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as up:
        while up.poll() is None:
            seen.append(starting_now(socket, status_dir))
            time.sleep(0.05)  # a start takes seconds: a look each 50 ms sees each; without a pause, looks took a core
        out, err_bytes = up.communicate(timeout=60)
    err = err_bytes.decode()
    assert up.returncode == 0, err
    assert max(len(s) for s in seen) == 2, [sorted(s) for s in seen if s]  # reached, never passed
    assert {agent for s in seen for agent in s} == set(TEAM)  # every one was seen starting
    assert "started 2 of 3, 2 starting… (at most 2 at a time)" in err
    # The last start: 2 starting again (the third took the place of one that came up), or 1 when both came up in
    # the same look (a loaded machine).
    assert re.search(r"started 3 of 3, [12] starting…", err), err
    assert sum(" is up (" in line for line in err.splitlines()) == 3
    assert "tmux session agentlaunch (socket " in err and "started t1, t2, t3" in err

    def states() -> dict[str, str]:
        records = json.loads(run_cli_inprocess("status", "--json", env=env, cwd=workdir).stdout)
        return {str(r["agent"]): str(r["state"]) for r in records}

    wait_for(lambda: states() == dict.fromkeys(TEAM, "waiting"), timeout=90, what="all three waiting")
    assert run_cli("tmux", "down", "--socket", socket, env=env, cwd=workdir, timeout=120).returncode == 0
