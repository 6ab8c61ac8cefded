"""`agentlaunch usage` over a store filled by real runs of the fake provider, and its bad inputs."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path

import pytest

from tests.support.cli_runs import run_cli_inprocess


@pytest.fixture
def two_sessions(agents_dir: Path) -> list[str]:
    ids = []
    for prompt in ("first", "second /tool"):
        result = run_cli_inprocess("run", "demo", prompt, "--json", "--agents-dir", str(agents_dir))
        assert result.returncode == 0, result.stderr
        ids.append(next(json.loads(line)["session_id"] for line in result.stdout.splitlines() if b'"session"' in line))
    return ids


def test_usage_by_session_json_counts_every_call(two_sessions: list[str], agents_dir: Path) -> None:
    result = run_cli_inprocess("usage", "--by", "session", "--json")
    assert result.returncode == 0, result.stderr
    rows = {r["session"]: r for r in json.loads(result.stdout)}
    assert rows[two_sessions[0]]["calls"] == 1 and rows[two_sessions[1]]["calls"] == 2
    assert all(r["cost_usd"] is None and r["unpriced_calls"] == r["calls"] for r in rows.values())  # fake: never $0
    first = rows[two_sessions[0]]
    assert first["cache_write"] > 0 and first["cache_read"] == 0


def test_usage_calls_of_a_session_shows_where_caching_missed(two_sessions: list[str]) -> None:
    result = run_cli_inprocess("usage", "--session", two_sessions[1], "--calls", "--json")
    assert result.returncode == 0, result.stderr
    calls = json.loads(result.stdout)
    assert len(calls) == 2 and calls[0]["cache_write"] > 0 and calls[1]["cache_read"] > 0
    assert calls[1]["cache_hit_ratio"] > 0.9
    table = run_cli_inprocess("usage", "--session", two_sessions[1], "--calls")
    assert b"calls of session" in table.stdout and b"unpriced" in table.stdout


def test_usage_table_chart_and_csv(two_sessions: list[str]) -> None:
    table = run_cli_inprocess("usage")
    assert (
        table.returncode == 0 and b"cache hit" in table.stdout and b"\xe2\x96\x91" in table.stdout
    )  # the chart's cache-read bar
    csv_out = run_cli_inprocess("usage", "--by", "agent", "--csv").stdout.decode().splitlines()
    assert csv_out[0].startswith("agent,calls,input,cache_write,cache_read,output") and csv_out[1].startswith("demo,3,")


def test_env_rates_price_the_fake_provider(agents_dir: Path) -> None:
    env = {"AGENTLAUNCH_PRICE_INPUT": "3", "AGENTLAUNCH_PRICE_OUTPUT": "15"}
    result = run_cli_inprocess("run", "demo", "hi", "--agents-dir", str(agents_dir), env=env)
    assert result.returncode == 0
    assert b"$0." in result.stderr.splitlines()[-1]
    rows = json.loads(run_cli_inprocess("usage", "--json").stdout)
    assert rows[0]["cost_usd"] > 0 and rows[0]["unpriced_calls"] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--by", "week"], b"--by: unknown grouping 'week'"),
        (["--since", "yesterdayish"], b"--since: cannot read 'yesterdayish'"),
        (["--calls"], b"--calls needs --session"),
        (["--session", "nope", "--calls"], b"no session 'nope'"),
    ],
)
def test_bad_report_options_exit_2(args: list[str], message: bytes) -> None:
    result = run_cli_inprocess("usage", *args)
    assert result.returncode == 2 and message in result.stderr


def test_corrupted_store_is_named_and_left_alone(isolated_home: Path) -> None:
    store = isolated_home / "state" / "usage.sqlite3"
    store.parent.mkdir(parents=True)
    store.write_bytes(b"this is not a database" * 100)
    before = store.read_bytes()
    result = run_cli_inprocess("usage")
    assert result.returncode == 5 and str(store).encode() in result.stderr
    assert store.read_bytes() == before


def test_store_from_a_newer_agentlaunch_is_refused(isolated_home: Path) -> None:
    store = isolated_home / "state" / "usage.sqlite3"
    store.parent.mkdir(parents=True)
    with sqlite3.connect(store) as conn:
        conn.execute("PRAGMA user_version = 999")
    result = run_cli_inprocess("usage")
    assert result.returncode == 5 and b"newer" in result.stderr


def test_malformed_pricing_yaml_stops_a_run_with_file_and_line(agents_dir: Path) -> None:
    (agents_dir / "pricing.yaml").write_text("fake-1:\n  input: -3\n  output: lots\n")
    result = run_cli_inprocess("run", "demo", "hi", "--agents-dir", str(agents_dir))
    assert result.returncode == 3
    err = result.stderr.decode()
    assert "pricing.yaml:2" in err and "input" in err and "output" in err


def test_state_dir_that_is_a_file_is_a_clear_error(isolated_home: Path, agents_dir: Path) -> None:
    blocker = isolated_home / "not-a-dir"
    blocker.write_text("x")
    result = run_cli_inprocess("run", "demo", "hi", "--agents-dir", str(agents_dir), env={"AGENTLAUNCH_STATE_DIR": str(blocker)})
    assert result.returncode in (3, 5) and b"Traceback" not in result.stderr and str(blocker).encode() in result.stderr


def _store_with(session_id: str, costs: list[float]) -> None:
    from agentlaunch import paths
    from agentlaunch.token_usage import Usage
    from agentlaunch.usage.records import CallRecord
    from agentlaunch.usage.store import Store

    with Store.open(paths.store_path()) as store:
        store.start_session(session_id, agent="demo", provider="claude", working_dir="/w", model="claude-opus-4-5")
        for i, cost in enumerate(costs, 1):
            store.record_call(
                CallRecord(
                    agent="demo",
                    provider="claude",
                    usage=Usage(input=10, cache_read=90, output=5),
                    session_id=session_id,
                    turn=i,
                    model_requested="claude-opus-4-5",
                    cost_usd=cost,
                    price_key="genai-prices:anthropic/claude-opus-4-5",
                )
            )


def test_calls_csv_of_a_session_without_calls_prints_the_calls_header() -> None:
    from agentlaunch.usage.reports import CALL_FIELDS

    _store_with("empty-session", [])
    result = run_cli_inprocess("usage", "--session", "empty-session", "--calls", "--csv")
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().splitlines() == [",".join(CALL_FIELDS)]
    # The same header as a session with calls, so a script reads both alike.
    _store_with("busy-session", [0.001])
    busy = run_cli_inprocess("usage", "--session", "busy-session", "--calls", "--csv").stdout.decode().splitlines()
    assert busy[0] == ",".join(CALL_FIELDS) and len(busy) == 2
    assert json.loads(run_cli_inprocess("usage", "--session", "empty-session", "--calls", "--json").stdout) == []


def test_json_and_csv_carry_costs_at_full_precision() -> None:
    # Costs whose sum is not a short decimal: rounding to 6 places would change it.
    costs = [0.0012345678912345, 0.0261234567891234]
    _store_with("precise", costs)
    calls = json.loads(run_cli_inprocess("usage", "--session", "precise", "--calls", "--json").stdout)
    assert [c["cost_usd"] for c in calls] == costs
    calls_csv = run_cli_inprocess("usage", "--session", "precise", "--calls", "--csv").stdout.decode()
    assert [float(r["cost_usd"]) for r in csv.DictReader(io.StringIO(calls_csv))] == costs
    (row,) = json.loads(run_cli_inprocess("usage", "--by", "session", "--json").stdout)
    assert row["cost_usd"] == sum(costs) and round(row["cost_usd"], 6) != row["cost_usd"]
    (csv_row,) = csv.DictReader(io.StringIO(run_cli_inprocess("usage", "--by", "session", "--csv").stdout.decode()))
    assert float(csv_row["cost_usd"]) == sum(costs)
    table = run_cli_inprocess("usage", "--by", "session").stdout.decode()
    assert f"${sum(costs):.4f}" in table  # people get the rounded figure


def test_usage_by_session_names_each_sessions_agent(two_sessions: list[str], agents_dir: Path) -> None:
    from testbed.agent_files import write_agent

    write_agent(agents_dir, "other-agent", {"provider": "fake", "model": "fake-1"})
    result = run_cli_inprocess("run", "other-agent", "hi", "--json", "--agents-dir", str(agents_dir))
    assert result.returncode == 0, result.stderr
    other = next(json.loads(line)["session_id"] for line in result.stdout.splitlines() if b'"session"' in line)
    rows = {r["session"]: r for r in json.loads(run_cli_inprocess("usage", "--by", "session", "--json").stdout)}
    assert {s: r["agent"] for s, r in rows.items()} == {two_sessions[0]: "demo", two_sessions[1]: "demo", other: "other-agent"}
    # CSV: the agent is the last column (a reader by column position keeps working); the table has it beside the session.
    lines = run_cli_inprocess("usage", "--by", "session", "--csv").stdout.decode().splitlines()
    assert lines[0].startswith("session,calls,") and lines[0].endswith(",saved_usd,agent")
    assert {line.split(",")[0]: line.split(",")[-1] for line in lines[1:]}[other] == "other-agent"
    table = run_cli_inprocess("usage", "--by", "session").stdout.decode().splitlines()
    header = next(line for line in table if "session" in line and "calls" in line)
    assert header.index("agent") < header.index("calls")
    assert any(other[:8] in line and "other-agent" in line for line in table)
    # Grouped otherwise, no agent field is added (by agent, the key is the agent already).
    assert all("agent" not in r for r in json.loads(run_cli_inprocess("usage", "--by", "model", "--json").stdout))
