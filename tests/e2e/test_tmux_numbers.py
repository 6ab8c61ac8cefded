"""The numbers of a Claude agent in tmux, end to end: after `up --resume` (context, cost, the cache's warmth from
the session's stored calls) and on the pane border (a countdown tmux computes from the cache's expiry)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from datetime import datetime
from pathlib import Path

import pexpect
import pytest

from agentlaunch.fakeapi.anthropic import ApiUsage, FakeAnthropic, text_reply
from agentlaunch.live.status import CACHE_EXPIRY_OPTION
from agentlaunch.live.tmux import BORDER_FORMAT
from tests.e2e.test_tmux_claude import claude_agent, cli, env, pane_of, say, screen, settled, state_of, tmux  # noqa: F401  (fixtures)
from tests.support.cli_runs import run_cli_inprocess
from tests.support.waits import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]
COUNTDOWN = re.compile(r"cache warm (\d+)m(\d\d)s")


def record_of(values: dict[str, str], cwd: Path, agent: str) -> dict[str, object]:
    records = json.loads(run_cli_inprocess("status", "--json", env=values, cwd=cwd).stdout)
    return next(r for r in records if r.get("agent") == agent)


def border_values(server: str, session: str, seen: set[str], want: int) -> set[str]:
    """The countdowns an attached client is shown in the border, until ``want`` different ones came (tmux redraws
    the border at every status-interval; agentlaunch writes nothing while the agent waits)."""
    client = pexpect.spawn(
        "tmux", ["-L", server, "attach", "-t", f"={session}"], dimensions=(40, 200), env={**os.environ, "TERM": "xterm"}
    )
    try:
        out = b""
        deadline = time.monotonic() + 30  # a bound on the wait, not a timing assertion
        while len(seen) < want and time.monotonic() < deadline:
            with contextlib.suppress(pexpect.TIMEOUT):
                out += client.read_nonblocking(1 << 16, timeout=0.5)
            seen |= {m.group(0) for m in COUNTDOWN.finditer(out.decode(errors="replace"))}
        return seen
    finally:
        client.terminate(force=True)


def test_up_resume_shows_the_sessions_numbers_and_the_border_counts_the_cache_down(
    socket: str,
    env: dict[str, str],  # noqa: F811
    anthropic: FakeAnthropic,
    agents_dir: Path,
    workdir: Path,
    claude_bin: Path,  # noqa: F811
) -> None:
    name = claude_agent(agents_dir, "counter", claude_bin, workdir)
    anthropic.push(text_reply("Ready.", ApiUsage(10, 8000, 0, 5)), text_reply("Noted.", ApiUsage(20, 400, 8000, 7)))
    assert cli(env, workdir, "tmux", "up", name, "--socket", socket, "--no-attach", "--wait", "60").returncode == 0
    pane = pane_of(socket, name)
    wait_for(lambda: settled(env, workdir, name), timeout=60, what="the interface waiting after its first turn")
    say(socket, pane, "remember PLUM")
    wait_for(lambda: "Noted." in screen(socket, pane), timeout=90, what="the answer")
    wait_for(lambda: record_of(env, workdir, name).get("calls") == 2, timeout=60, what="both calls counted")
    before = record_of(env, workdir, name)
    assert before["context"] == 20 + 400 + 8000 and isinstance(before["cache"], dict)
    assert cli(env, workdir, "tmux", "down", "--socket", socket, "--timeout", "60").returncode == 0

    again = cli(env, workdir, "tmux", "up", "--resume", name, "--socket", socket, "--no-attach", "--wait", "60")
    assert again.returncode == 0, again.stderr.decode()
    wait_for(lambda: state_of(env, workdir, name) == "waiting", timeout=60, what="the resumed interface waiting")
    after = record_of(env, workdir, name)
    # Before its next call, the resumed session shows what its stored calls say (it showed context 0, no cost).
    assert after["context"] == before["context"] and after["cost_usd"] == before["cost_usd"] and after["calls"] == 2
    cache = after["cache"]
    assert isinstance(cache, dict) and cache["expires_at"] == before["cache"]["expires_at"]  # type: ignore[index]
    line = cli(env, workdir, "status", "--line", name).stdout.decode()
    assert COUNTDOWN.search(line) and "ctx " in line and "$" in line, line

    pane = pane_of(socket, name)
    expiry = int(datetime.fromisoformat(str(cache["expires_at"])).timestamp())
    wait_for(
        lambda: tmux(socket, "show-options", "-p", "-v", "-t", pane, CACHE_EXPIRY_OPTION).strip() == str(expiry),
        timeout=30,
        what="the pane's cache expiry",
    )
    title = tmux(socket, "display-message", "-p", "-t", pane, "#{@agentlaunch_line}")
    assert "cache" not in title  # written once per state: the countdown is the border's, not the title's
    border = tmux(socket, "display-message", "-p", "-t", pane, BORDER_FORMAT)
    assert "counter · waiting" in border and COUNTDOWN.search(border), border
    # An attached client sees the countdown move with no write of agentlaunch's (one redraw a second here).
    tmux(socket, "set-option", "-t", "agentlaunch", "status-interval", "1")
    assert len(border_values(socket, "agentlaunch", set(), 2)) >= 2
    # Past the expiry (set by hand here, as no test waits five minutes) the same border says cold.
    tmux(socket, "set-option", "-p", "-t", pane, CACHE_EXPIRY_OPTION, str(int(time.time()) - 1))
    assert "· cache cold" in tmux(socket, "display-message", "-p", "-t", pane, BORDER_FORMAT)
    assert cli(env, workdir, "tmux", "down", "--socket", socket, "--timeout", "60").returncode == 0
