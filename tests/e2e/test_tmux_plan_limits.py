"""The plan's limits on a Claude agent's pane border in tmux, end to end (the real Claude Code, a gateway token, the
fake API's ``anthropic-ratelimit-unified-*`` headers)."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path

import pytest

from agentlaunch.fakeapi.anthropic import ApiUsage, FakeAnthropic, gateway_token, rate_limit_headers, text_reply
from agentlaunch.live.tmux import BORDER_FORMAT
from tests.e2e.test_tmux_claude import claude_agent, cli, env, pane_of, say, screen, state_of, tmux  # noqa: F401  (fixtures)
from tests.support.cli_runs import run_cli_inprocess
from tests.support.waits import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]


def test_the_pane_border_says_the_five_hour_window_and_when_it_resets(
    socket: str,
    env: dict[str, str],  # noqa: F811
    anthropic: FakeAnthropic,
    agents_dir: Path,
    workdir: Path,
    claude_bin: Path,  # noqa: F811
) -> None:
    reset = int(time.time()) + 3 * 3600
    anthropic.headers = rate_limit_headers(0.42, 0.1, five_hour_reset=reset, seven_day_reset=reset + 4 * 86400)
    env["ANTHROPIC_AUTH_TOKEN"] = gateway_token()
    name = claude_agent(agents_dir, "subscriber", claude_bin, workdir)
    anthropic.push(text_reply("Noted.", ApiUsage(20, 400, 0, 7)))
    assert cli(env, workdir, "tmux", "up", name, "--socket", socket, "--no-attach", "--wait", "60").returncode == 0
    pane = pane_of(socket, name)
    wait_for(lambda: state_of(env, workdir, name) == "waiting", timeout=60, what="the interface waiting")
    say(socket, pane, "remember PLUM")
    wait_for(lambda: "Noted." in screen(socket, pane), timeout=90, what="the answer")

    def record() -> dict[str, object]:
        records = json.loads(run_cli_inprocess("status", "--json", env=env, cwd=workdir).stdout)
        return next((r for r in records if r.get("agent") == name), {})

    wait_for(lambda: record().get("rate_limits"), timeout=60, what="the record's rate_limits")
    local = datetime.fromtimestamp(reset).astimezone()
    want = f"5h 42% · resets {local:%H:%M} · 7d 10%"
    wait_for(lambda: want in tmux(socket, "display-message", "-p", "-t", pane, BORDER_FORMAT), timeout=30, what="the border")
    table = cli({**env, "COLUMNS": "300"}, workdir, "status").stdout.decode()  # one row a line
    assert "plan limits" in table and "5h 42%" in table, table
    assert cli(env, workdir, "tmux", "down", "--socket", socket, "--timeout", "60").returncode == 0
