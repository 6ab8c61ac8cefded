"""A malformed sessions row is skipped with one warning naming it, as a malformed call row is.

A ``sessions.started`` of 'x' (another program's row, or a damaged file) used
to crash `sessions`, `usage --session` and every launch that looked for a
session to resume with a traceback.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentlaunch import paths
from agentlaunch.token_usage import Usage
from agentlaunch.usage.records import CallRecord
from agentlaunch.usage.store import Store
from tests.support.cli_runs import run_cli_inprocess


@pytest.fixture
def two_sessions() -> None:
    """Sessions s1 (row 1, the one damaged) and s2 (row 2, whole), each with a call."""
    with Store.open(paths.store_path()) as store:
        for sid in ("s1", "s2"):
            store.start_session(sid, agent="demo", provider="fake", working_dir="/w", model="fake-1")
            store.touch_session(sid)
            store.record_call(CallRecord(agent="demo", provider="fake", usage=Usage(input=10, output=1), session_id=sid))


def damage(column: str, value: object, session: str = "s1") -> None:
    conn = sqlite3.connect(paths.store_path())
    with conn:
        conn.execute(f"UPDATE sessions SET {column} = ? WHERE session_id = ?", (value, session))
    conn.close()


def no_traceback(done: subprocess.CompletedProcess[bytes]) -> str:
    err = done.stderr.decode()
    assert "Traceback" not in err and "Error" not in err, err
    return err


@pytest.mark.usefixtures("two_sessions")
@pytest.mark.parametrize(
    ("column", "value", "said"),
    [
        ("started", "x", "sessions.started is 'x', not a time"),
        ("last_used", 1e300, "sessions.last_used is 1e+300"),
        ("ended", "soon", "sessions.ended is 'soon'"),
        ("turns", "many", "sessions.turns is 'many', not a count"),
        ("provider_state", "{not json", "sessions.provider_state is '{not json', not a JSON object"),
        ("provider_state", "[1]", "not a JSON object"),
        ("agent", b"\x1b[2J", "sessions.agent is b'\\x1b[2J', not text"),
        ("exit_status", "bad", "sessions.exit_status is 'bad'"),
    ],
)
def test_sessions_skips_a_malformed_row_with_one_warning_naming_it(column: str, value: object, said: str) -> None:
    damage(column, value)
    done = run_cli_inprocess("sessions", "--json")
    assert done.returncode == 0
    err = no_traceback(done)
    assert err.count("warning:") == 1 and "skipped session row 1:" in err and said in err, err
    assert [s["session_id"] for s in json.loads(done.stdout)] == ["s2"]
    table = run_cli_inprocess("sessions")
    assert table.returncode == 0 and no_traceback(table).count("skipped session row 1:") == 1


@pytest.mark.usefixtures("two_sessions")
def test_usage_of_a_session_given_by_a_prefix_skips_the_malformed_one() -> None:
    damage("started", "x")
    done = run_cli_inprocess("usage", "--session", "s", "--calls", "--json")  # only s2 reads as a session: the prefix is unique
    assert done.returncode == 0, done.stderr
    assert "skipped session row 1:" in no_traceback(done)
    assert [c["input"] for c in json.loads(done.stdout)] == [10]


@pytest.mark.usefixtures("two_sessions")
def test_a_limit_counts_only_the_rows_that_read_as_sessions() -> None:
    damage("last_used", "x")  # text sorts above every number: this row comes first by last_used
    with Store.open(paths.store_path()) as store:
        assert [r.session_id for r in store.list_sessions(limit=1)] == ["s2"]
        assert store.latest_session("demo", "/w") is not None and store.latest_of_agent("demo") is not None
        assert store.get_session("s1") is None
        assert store.skipped() == [f"{store.path}: skipped session row 1: sessions.last_used is 'x', not a time (unix seconds)"]
        assert store.skipped() == []  # named once


def test_a_launch_beside_a_malformed_session_row_runs(agents_dir: Path) -> None:
    first = run_cli_inprocess("run", "demo", "hello", "--agents-dir", str(agents_dir), cwd=agents_dir.parent)
    assert first.returncode == 0, first.stderr
    conn = sqlite3.connect(paths.store_path())
    with conn:
        conn.execute("UPDATE sessions SET started = 'x'")
    conn.close()
    fresh = run_cli_inprocess("run", "demo", "again", "--agents-dir", str(agents_dir), cwd=agents_dir.parent)
    assert fresh.returncode == 0, fresh.stderr
    no_traceback(fresh)
    # The unreadable row is passed over: the session the run above made is the one continued.
    resumed = run_cli_inprocess("run", "demo", "-c", "more", "--agents-dir", str(agents_dir), cwd=agents_dir.parent)
    assert resumed.returncode == 0, resumed.stderr
    no_traceback(resumed)


def test_start_session_over_a_malformed_row_names_it_instead_of_failing_an_assert() -> None:
    with Store.open(paths.store_path()) as store:
        store.start_session("s1", agent="demo", provider="fake", working_dir="/w", at=datetime.now(UTC))
    damage("turns", "x")
    with Store.open(paths.store_path()) as store:
        with pytest.raises(Exception, match="skipped session row 1: sessions.turns is 'x'") as info:
            store.start_session("s1", agent="demo", provider="fake", working_dir="/w")
        assert type(info.value).__name__ == "StateError"
