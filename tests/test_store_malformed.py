"""A malformed row in the usage store is skipped with one warning naming it, never a traceback.

Another program (or a damaged file) can leave anything in a column: SQLite's
affinity keeps a ``calls.at`` of 'x' as text. Reports and budgets leave such a
row out and name it once; everything else is counted as before.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from agentlaunch import paths
from agentlaunch.token_usage import Usage
from agentlaunch.usage.records import CallRecord
from agentlaunch.usage.store import Store
from tests.support.cli_runs import run_cli, run_cli_inprocess

RATES = "fake-1: {input: 1, output: 1, cache_read: 1, cache_write: 1}\n"


def call(at: datetime, session: str = "s1", cost: float = 0.5) -> CallRecord:
    return CallRecord(
        at=at,
        agent="demo",
        provider="fake",
        session_id=session,
        turn=1,
        model_requested="fake-1",
        model_reported="fake-1",
        usage=Usage(input=100, output=10),
        cost_usd=cost,
    )


def damage(column: str, value: object, row: int = 1) -> None:
    conn = sqlite3.connect(paths.store_path())
    with conn:
        conn.execute(f"UPDATE calls SET {column} = ? WHERE id = ?", (value, row))
    conn.close()


@pytest.fixture
def two_calls() -> None:
    """Two calls of one session today: row 1 is the one damaged, row 2 stays whole."""
    now = datetime.now(UTC)
    with Store.open(paths.store_path()) as store:
        store.start_session("s1", agent="demo", provider="fake", working_dir="/w", model="fake-1")
        store.record_call(call(now))
        store.record_call(call(now))


def no_traceback(done: subprocess.CompletedProcess[bytes]) -> str:
    err = done.stderr.decode()
    assert "Traceback" not in err and "Error" not in err, err
    return err


@pytest.mark.usefixtures("two_calls")
@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("x", "calls.at is 'x', not a time"),
        (1e300, "calls.at is 1e+300, not a time"),
        (-5, "calls.at is -5.0, not a time"),
        (b"\x1b[2J", "calls.at is b'\\x1b[2J', not a time"),
    ],
)
@pytest.mark.parametrize("by", ["day", "session", "agent", "model"])
def test_usage_skips_a_row_without_a_time_with_one_warning_naming_it(value: object, said: str, by: str) -> None:
    damage("at", value)
    done = run_cli_inprocess("usage", "--by", by, "--json")
    assert done.returncode == 0
    err = no_traceback(done)
    assert err.count("warning:") == 1 and "skipped call row 1:" in err and said in err
    rows = json.loads(done.stdout)
    assert [r["calls"] for r in rows] == [1]  # the whole row still counts


@pytest.mark.usefixtures("two_calls")
def test_the_table_and_chart_name_the_row_once() -> None:
    damage("at", "x")
    done = run_cli_inprocess("usage", "--by", "agent")  # the table, then the daily chart (a second report)
    assert done.returncode == 0
    assert no_traceback(done).count("skipped call row 1:") == 1


@pytest.mark.usefixtures("two_calls")
@pytest.mark.parametrize(
    ("column", "value", "said"),
    [
        ("at", "x", "calls.at is 'x'"),
        ("input", "lots", "calls.input is 'lots', not a token count"),
        ("output", -1, "calls.output is -1"),
        ("cost_usd", "free", "calls.cost_usd is 'free', not an amount"),
    ],
)
def test_a_sessions_calls_skip_a_malformed_row(column: str, value: object, said: str) -> None:
    damage(column, value)
    done = run_cli_inprocess("usage", "--session", "s1", "--calls", "--json")
    assert done.returncode == 0
    err = no_traceback(done)
    assert err.count("skipped call row 1:") == 1 and said in err
    assert len(json.loads(done.stdout)) == 1
    sessions = run_cli_inprocess("sessions", "--json")
    assert sessions.returncode == 0, sessions.stderr


def test_a_budgeted_launch_skips_a_malformed_row_and_names_it_once(agents_dir: Path) -> None:
    (agents_dir / "pricing.yaml").write_text(RATES)
    path = agents_dir / "demo" / "agent.yaml"
    conf = yaml.safe_load(path.read_text())
    conf["budget"] = {"daily_usd": 1000, "session_usd": 1000}
    path.write_text(yaml.safe_dump(conf))
    first = run_cli("run", "demo", "hello", "--agents-dir", str(agents_dir), cwd=agents_dir.parent)
    assert first.returncode == 0, first.stderr
    damage("at", "x")
    again = run_cli("run", "demo", "-c", "again", "--agents-dir", str(agents_dir), cwd=agents_dir.parent)
    assert again.returncode == 0, again.stderr
    err = no_traceback(again)
    assert err.count("skipped call row 1:") == 1, err
