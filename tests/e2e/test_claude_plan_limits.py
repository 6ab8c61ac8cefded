"""Claude Code 2.1.332's plan limits, compaction point and cache lifetime, end to end against the fake Anthropic API.

What the CLI does, measured here (the CLI wins over any doc):

* it reads the plan's limits from the replies' ``anthropic-ratelimit-unified-*`` headers only for a claude.ai
  login or a Claude gateway (a token whose audience is ``claude-gateway``): headless it prints a
  ``rate_limit_event``, and its status-line JSON carries ``rate_limits``; with an API key alone, neither;
* ``--autocompact N`` compacts once a call's context reaches N - 33,000;
* ``CLAUDE_CODE_PROMPT_CACHE_TTL=1h`` makes it ask for 1-hour cache entries (``cache_control.ttl``), and its
  status line says ``prompt_cache.ttl: "1h"``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.fakeapi.anthropic import (
    ApiUsage,
    FakeAnthropic,
    asks_one_hour,
    claude_env,
    gateway_token,
    rate_limit_headers,
    text_reply,
    tool_reply,
)
from agentlaunch.usage.store import Store
from testbed.agent_files import write_agent
from testbed.pty_screen import spawn
from tests.e2e.test_native_claude_run import quit_native, setup, status_json
from tests.support.cli_runs import run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
FIVE_RESET = int(time.time()) + 2 * 3600
SEVEN_RESET = int(time.time()) + 3 * 86400


def headers(five: float, seven: float | None = 0.1) -> dict[str, str]:
    return rate_limit_headers(five, seven, five_hour_reset=FIVE_RESET, seven_day_reset=SEVEN_RESET)


def events_of(stdout: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.decode().splitlines()]


@pytest.fixture
def gateway(anthropic: FakeAnthropic, agents_dir: Path, isolated_home: Path, workdir: Path) -> dict[str, str]:
    """The environment of a launch whose Claude Code reads the plan's limits (a gateway token beside the API key)."""
    assert anthropic.server is not None
    env = {**os.environ, **claude_env(anthropic.server.url, isolated_home, {"CLAUDE_CODE_MAX_RETRIES": "0"})}
    env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
    env["ANTHROPIC_AUTH_TOKEN"] = gateway_token()
    return env


def agent(agents_dir: Path, workdir: Path, claude_bin: Path, **conf: Any) -> str:
    write_agent(
        agents_dir,
        "planned",
        {
            "provider": "claude",
            "model": "claude-sonnet-4-5",
            "command": str(claude_bin),
            "working_dir": str(workdir),
            **conf,
        },
    )
    return "planned"


def test_headless_the_plan_limits_come_from_the_apis_headers_as_a_rate_limits_event(
    anthropic: FakeAnthropic, gateway: dict[str, str], agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    anthropic.headers = headers(0.42, 0.1)
    anthropic.push(text_reply("hello", ApiUsage(10, 0, 1000, 5)))
    name = agent(agents_dir, workdir, claude_bin)
    done = run_cli("run", name, "hi", "--json", cwd=workdir, env=gateway)
    assert done.returncode == 0, done.stderr.decode()
    limits = [e for e in events_of(done.stdout) if e["event"] == "rate_limits"]
    assert limits == [
        {
            "event": "rate_limits",
            "five_hour": {"used_percent": 42.0, "resets_at": FIVE_RESET},
            "seven_day": {"used_percent": 10.0, "resets_at": SEVEN_RESET},
        }
    ]
    assert "cannot read" not in done.stderr.decode()


def test_with_an_api_key_alone_claude_code_reads_no_plan_limits(
    anthropic: FakeAnthropic, gateway: dict[str, str], agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    anthropic.headers = headers(0.42)
    anthropic.push(text_reply("hello", ApiUsage(10, 0, 1000, 5)))
    del gateway["ANTHROPIC_AUTH_TOKEN"]
    name = agent(agents_dir, workdir, claude_bin, budget={"five_hour_percent": 10})
    done = run_cli("run", name, "hi", "--json", cwd=workdir, env=gateway)
    assert done.returncode == 0, done.stderr.decode()  # a plan budget never stops what reports no plan
    assert not [e for e in events_of(done.stdout) if e["event"] == "rate_limits"]


def test_a_five_hour_budget_stops_the_agent_before_the_tool_of_the_call_that_crossed_it(
    anthropic: FakeAnthropic, gateway: dict[str, str], agents_dir: Path, workdir: Path, claude_bin: Path, isolated_home: Path
) -> None:
    anthropic.headers = headers(0.95)
    anthropic.push(
        # A tool that lasts until the stop ends it (see test_budget_e2e: an instant one could race the interrupt).
        tool_reply(
            "Bash",
            {"command": "timeout 30 tail -f /dev/null; echo hi > ran.txt", "description": "Print hi"},
            ApiUsage(10, 0, 1000, 5),
        ),
        text_reply("It printed hi.", ApiUsage(8, 0, 1100, 9)),
    )
    name = agent(agents_dir, workdir, claude_bin, allowed_tools=["Bash"], budget={"five_hour_percent": 90})
    done = run_cli("run", name, "run echo hi", cwd=workdir, env=gateway, timeout=240)
    err = done.stderr.decode()
    assert done.returncode == 6, err
    assert "budget: stopped the agent: the 5-hour plan-limit budget of agent 'planned' (90%) is spent: 95% so far" in err
    assert "five_hour_percent" in err
    assert len(anthropic.message_requests()) == 1, "no call may follow the one after which the limit was spent"
    assert not (workdir / "ran.txt").exists()


def test_compaction_happens_where_compaction_at_sets_it(
    anthropic: FakeAnthropic, gateway: dict[str, str], agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    # 70,015 in context after the second turn: past compaction_at (67,000), far short of the window less 33,000 (167,000).
    anthropic.push(text_reply("one", ApiUsage(10, 0, 1000, 5)), text_reply("two", ApiUsage(10, 0, 70_000, 5)))
    anthropic.default = text_reply("<summary>what was said</summary>", ApiUsage(10, 0, 1000, 5))
    name = agent(agents_dir, workdir, claude_bin, compaction_at=67_000)
    outputs = []
    for i, prompt in enumerate(("first", "second", "third")):
        done = run_cli("run", name, *(["-c"] if i else []), prompt, "--json", cwd=workdir, env=gateway)
        assert done.returncode == 0, done.stderr.decode()
        outputs.append(done)
    second = outputs[1].stderr.decode()
    assert "passed the compaction threshold 67,000" in second, second  # agentlaunch warns where the CLI will compact
    compactions = [e for e in events_of(outputs[2].stdout) if e["event"] == "compaction"]
    assert len(compactions) == 1 and compactions[0]["trigger"] == "auto" and compactions[0]["pre_tokens"] >= 67_000
    for earlier in outputs[:2]:
        assert not [e for e in events_of(earlier.stdout) if e["event"] == "compaction"]


def test_without_compaction_at_the_same_context_is_not_compacted(
    anthropic: FakeAnthropic, gateway: dict[str, str], agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    # The turns of the test above, which compact there at the third (a second turn does not compact after one).
    anthropic.push(
        text_reply("one", ApiUsage(10, 0, 1000, 5)),
        text_reply("two", ApiUsage(10, 0, 70_000, 5)),
        text_reply("three", ApiUsage(10, 0, 70_100, 5)),
    )
    name = agent(agents_dir, workdir, claude_bin)
    last = None
    for i, prompt in enumerate(("first", "second", "third")):
        last = run_cli("run", name, *(["-c"] if i else []), prompt, "--json", cwd=workdir, env=gateway)
        assert last.returncode == 0, last.stderr.decode()
    assert last is not None and not [e for e in events_of(last.stdout) if e["event"] == "compaction"]
    assert len(anthropic.message_requests()) == 3  # no summary call


def test_cache_ttl_makes_claude_code_ask_for_one_hour_entries_and_they_are_priced_so(
    anthropic: FakeAnthropic, gateway: dict[str, str], agents_dir: Path, workdir: Path, claude_bin: Path, isolated_home: Path
) -> None:
    anthropic.push(text_reply("hello", ApiUsage(10, 5000, 0, 5)))
    name = agent(agents_dir, workdir, claude_bin, cache_ttl="1h")
    done = run_cli("run", name, "hi", "--json", cwd=workdir, env=gateway)
    assert done.returncode == 0, done.stderr.decode()
    (request,) = anthropic.message_requests()
    assert asks_one_hour(request.body)
    (usage,) = [e["usage"] for e in events_of(done.stdout) if e["event"] == "usage"]
    assert usage["cache_write"] == usage["cache_write_1h"] == 5000  # the fake writes what was asked, as the API does
    with Store.open(isolated_home / "state" / "usage.sqlite3") as store:
        (call,) = [c for s in store.list_sessions() for c in store.calls_for_session(s.session_id)]
    # 1-hour writes at 2x input ($6/M for Sonnet 4.5) against 1.25x for 5 minutes
    assert call.cost_usd == pytest.approx(10 * 3e-6 + 5000 * 6e-6 + 5 * 15e-6, abs=1e-9)


# -- Claude Code's own interface -----------------------------------------------------------------------


@pytest.fixture
def root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="alpl-") as folder:
        yield Path(folder)


def line_of(env: dict[str, str], cwd: Path, name: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "agentlaunch", "status", "--line", name],
        env=env,
        cwd=cwd,
        capture_output=True,
        timeout=60,
        check=True,
    )
    return done.stdout.decode().strip()


def test_the_interface_shows_the_plan_limits_and_keeps_a_one_hour_clock(root: Path, agents_dir: Path, claude_bin: Path) -> None:
    api = FakeAnthropic([text_reply("Done.", ApiUsage(10, 4000, 0, 5))], headers=headers(0.42, 0.1))
    with api.serve():
        env, work = setup(root, agents_dir, claude_bin, api, "Say hi.")
        env["ANTHROPIC_AUTH_TOKEN"] = gateway_token()
        write_agent(
            agents_dir,
            "native",
            {
                "provider": "claude",
                "model": "claude-sonnet-4-5",
                "command": str(claude_bin),
                "working_dir": str(work),
                "startup": "Say hi.",
                "cache_ttl": "1h",
            },
        )
        screen = spawn([sys.executable, "-m", "agentlaunch", "run", "native", "--agents-dir", str(agents_dir)], env, work)
        try:
            screen.wait_for(lambda t: "Done." in t, 90, "the answer")
            screen.wait_for(lambda t: "5h 42% · resets" in t, 60, "the plan's limits in the status line")
            record: dict[str, Any] = {}

            def limits_kept() -> bool:
                nonlocal record
                found = [r for r in status_json(env, work) if r.get("agent") == "native"]
                record = found[0] if found else {}
                return bool(record.get("rate_limits")) and bool(record.get("cache"))

            screen.until(limits_kept, 60, "the record's rate_limits and cache")
            five = datetime.fromtimestamp(FIVE_RESET).astimezone()
            assert set(record["rate_limits"]) == {"five_hour", "seven_day"}
            assert record["rate_limits"]["five_hour"]["used_percent"] == 42.0
            assert datetime.fromisoformat(record["rate_limits"]["five_hour"]["resets_at"]).timestamp() == FIVE_RESET
            assert record["rate_limits"]["seven_day"]["used_percent"] == 10.0
            assert datetime.fromisoformat(record["rate_limits"]["seven_day"]["resets_at"]).timestamp() == SEVEN_RESET
            assert record["cache"]["ttl_s"] == 3600, record["cache"]  # the session wrote 1-hour entries
            left = datetime.fromisoformat(record["cache"]["expires_at"]).timestamp() - time.time()
            assert 3000 < left <= 3600
            line = line_of(env, work, "native")
            assert f"5h 42% · resets {five:%H:%M} · 7d 10%" in line, line
            assert re.search(r"cache warm (5\dm\d\ds|1h00m)", line), line
            quit_native(screen)
        finally:
            if screen.child.isalive():
                screen.child.terminate(force=True)
    (request,) = api.message_requests()
    assert asks_one_hour(request.body)
