"""The SQLite usage store: schema, refusals that leave files alone, sessions, calls (its reports:
test_store_reports.py; concurrent writers: test_store_concurrency.py)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from agentlaunch.errors import ExitCode, StateError
from agentlaunch.token_usage import Usage
from agentlaunch.usage import store_file
from agentlaunch.usage.store import Store
from agentlaunch.usage.store_file import SCHEMA_VERSION
from tests.support.store_rows import T0, call, db, store

__all__ = ["db", "store"]  # the fixtures, used by name

# --------------------------------------------------------------------------- opening


def test_open_creates_parent_dirs_wal_and_current_schema(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "usage.sqlite3"
    with Store.open(path) as s:
        assert s.schema_version == SCHEMA_VERSION
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"sessions", "calls"} <= tables


def test_reopening_keeps_rows_and_runs_no_migration_twice(db: Path) -> None:
    with Store.open(db) as s:
        s.record_call(call())
    with Store.open(db) as s:
        assert len(s.calls_for_session("s1")) == 1
        assert s.schema_version == SCHEMA_VERSION


def test_busy_timeout_is_set(db: Path) -> None:
    with Store.open(db, timeout=7.5) as s:
        assert s._conn.execute("PRAGMA busy_timeout").fetchone()[0] == 7500


def test_pending_migrations_run_in_order_and_record_the_version(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Store.open(db) as s:
        s.record_call(call())
    ran: list[int] = []

    base = len(store_file.MIGRATIONS)

    def add_note(conn: sqlite3.Connection) -> None:
        ran.append(base + 1)
        conn.execute("ALTER TABLE calls ADD COLUMN note TEXT")

    def add_index(conn: sqlite3.Connection) -> None:
        ran.append(base + 2)
        conn.execute("CREATE INDEX calls_note ON calls (note)")

    monkeypatch.setattr(store_file, "MIGRATIONS", [*store_file.MIGRATIONS, add_note, add_index])
    monkeypatch.setattr(store_file, "SCHEMA_VERSION", base + 2)
    with Store.open(db) as s:
        assert s.schema_version == base + 2
        assert len(s.calls_for_session("s1")) == 1
    assert ran == [base + 1, base + 2]
    with Store.open(db):
        pass
    assert ran == [base + 1, base + 2]


def test_a_failing_migration_leaves_the_old_version(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Store.open(db):
        pass

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE calls ADD COLUMN half TEXT")
        conn.execute("THIS IS NOT SQL")

    base = len(store_file.MIGRATIONS)
    monkeypatch.setattr(store_file, "MIGRATIONS", [*store_file.MIGRATIONS, broken])
    monkeypatch.setattr(store_file, "SCHEMA_VERSION", base + 1)
    with pytest.raises(StateError):
        Store.open(db)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == base
    assert "half" not in {r[1] for r in conn.execute("PRAGMA table_info(calls)")}


def test_newer_schema_is_refused_and_file_untouched(db: Path) -> None:
    with Store.open(db) as s:
        s.record_call(call())
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    conn.close()
    before = db.read_bytes()
    with pytest.raises(StateError) as info:
        Store.open(db)
    assert str(db) in info.value.message
    assert "newer" in info.value.message
    assert info.value.exit_code == ExitCode.STATE
    assert db.read_bytes() == before


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"this is my shopping list, not a database\n" * 50, id="text"),
        pytest.param(os.urandom(8192), id="random"),
        pytest.param(b"SQLite format 3\x00" + b"\xff" * 4080, id="sqlite-header-then-garbage"),
        pytest.param(b"SQLite", id="truncated-header"),
    ],
)
def test_corrupted_or_foreign_file_is_refused_and_left_byte_for_byte(db: Path, content: bytes) -> None:
    db.parent.mkdir(parents=True)
    db.write_bytes(content)
    with pytest.raises(StateError) as info:
        Store.open(db)
    assert str(db) in info.value.message
    assert db.read_bytes() == content


def test_a_healthy_store_with_a_damaged_page_is_refused_untouched(db: Path) -> None:
    with Store.open(db) as s:
        s.record_call(call())
    data = bytearray(db.read_bytes())
    # Page 1 holds the schema after the 100-byte header: wreck it.
    data[100:4096] = b"\xa5" * (4096 - 100)
    db.write_bytes(bytes(data))
    with pytest.raises(StateError) as info:
        Store.open(db)
    assert str(db) in info.value.message
    assert db.read_bytes() == bytes(data)


def test_another_applications_database_is_refused_untouched(db: Path) -> None:
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE recipes (name TEXT)")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    with pytest.raises(StateError, match="not an agentlaunch usage store"):
        Store.open(db)
    assert db.read_bytes() == before


def test_an_empty_file_becomes_a_new_store(db: Path) -> None:
    db.parent.mkdir(parents=True)
    db.touch()
    with Store.open(db) as s:
        assert s.schema_version == SCHEMA_VERSION


@contextmanager
def read_only_dir(path: Path) -> Iterator[None]:
    """Make ``path`` truly unwritable: mode 0555, or for root (who ignores modes) the immutable flag."""
    if os.geteuid() != 0:
        path.chmod(0o555)
        undo = ["chmod", "755", str(path)]
    else:
        made = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
        if made.returncode != 0:
            pytest.skip(f"root cannot make {path} read-only here (chattr +i: {made.stderr.decode().strip()})")
        undo = ["chattr", "-i", str(path)]
    try:
        try:
            (path / "probe").touch()
        except OSError:
            pass
        else:
            (path / "probe").unlink()
            pytest.skip(f"{path} stayed writable")
        yield
    finally:
        subprocess.run(undo, check=True)


def test_read_only_state_directory_for_a_new_store(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    with read_only_dir(state), pytest.raises(StateError) as info:
        Store.open(state / "usage.sqlite3")
    assert "not writable" in info.value.message
    assert str(state) in info.value.message
    assert not (state / "usage.sqlite3").exists()


def test_read_only_state_directory_with_an_existing_store(db: Path) -> None:
    with Store.open(db) as s:
        s.record_call(call())
    before = db.read_bytes()
    with read_only_dir(db.parent), pytest.raises(StateError, match="not writable"):
        Store.open(db)
    assert db.read_bytes() == before


def test_state_dir_that_cannot_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StateError, match="cannot create the state directory"):
        Store.open(blocker / "state" / "usage.sqlite3")


def test_store_path_that_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "usage.sqlite3").mkdir()
    with pytest.raises(StateError, match="is a directory"):
        Store.open(tmp_path / "usage.sqlite3")


# --------------------------------------------------------------------------- sessions


def test_session_lifecycle(store: Store) -> None:
    row = store.start_session("s1", agent="reviewer", provider="claude", working_dir="/w", model="m", at=T0)
    assert (row.turns, row.ended, row.exit_status, row.provider_state) == (0, None, None, None)
    assert row.started == row.last_used == T0
    assert store.touch_session("s1", at=T0 + timedelta(minutes=1))
    assert store.touch_session("s1", turns_delta=2, at=T0 + timedelta(minutes=2))
    assert store.set_provider_state("s1", {"last_total": {"input": 18000, "cached": 16000}})
    assert store.end_session("s1", 0, at=T0 + timedelta(minutes=3))
    got = store.get_session("s1")
    assert got is not None
    assert got.turns == 3
    assert got.last_used == T0 + timedelta(minutes=3)
    assert got.ended == T0 + timedelta(minutes=3)
    assert got.exit_status == 0
    assert got.provider_state == {"last_total": {"input": 18000, "cached": 16000}}
    # Resuming clears the end but keeps the history.
    again = store.start_session("s1", agent="reviewer", provider="claude", working_dir="/w", at=T0 + timedelta(hours=1))
    assert (again.ended, again.exit_status, again.turns, again.model, again.started) == (None, None, 3, "m", T0)


def test_updates_to_unknown_sessions_say_so(store: Store) -> None:
    assert store.get_session("nope") is None
    assert not store.touch_session("nope")
    assert not store.end_session("nope", 1)
    assert not store.set_provider_state("nope", {})


def test_latest_session_by_agent_directory_and_provider(store: Store) -> None:
    store.start_session("old", agent="rev", provider="claude", working_dir="/w", at=T0)
    store.start_session("new", agent="rev", provider="codex", working_dir="/w", at=T0 + timedelta(hours=1))
    store.start_session("elsewhere", agent="rev", provider="claude", working_dir="/x", at=T0 + timedelta(hours=2))
    store.start_session("other", agent="coder", provider="claude", working_dir="/w", at=T0 + timedelta(hours=3))
    assert store.latest_session("rev", "/w").session_id == "new"  # type: ignore[union-attr]
    assert store.latest_session("rev", Path("/w"), provider="claude").session_id == "old"  # type: ignore[union-attr]
    assert store.latest_session("rev", "/nowhere") is None
    store.touch_session("old", at=T0 + timedelta(hours=5))
    assert store.latest_session("rev", "/w").session_id == "old"  # type: ignore[union-attr]


def test_list_sessions_most_recent_first(store: Store) -> None:
    for i, agent in enumerate(["a", "b", "a"]):
        store.start_session(f"s{i}", agent=agent, provider="fake", working_dir="/w", at=T0 + timedelta(hours=i))
    assert [s.session_id for s in store.list_sessions()] == ["s2", "s1", "s0"]
    assert [s.session_id for s in store.list_sessions("a")] == ["s2", "s0"]
    assert [s.session_id for s in store.list_sessions(limit=1)] == ["s2"]


# --------------------------------------------------------------------------- calls


def test_record_call_round_trips_and_keeps_unpriced_as_none(store: Store) -> None:
    first = store.record_call(call(at=T0, cost=0.0123, turn=1))
    second = store.record_call(call(at=T0 + timedelta(seconds=1), cost=None, turn=2, model_reported=None))
    assert second > first
    calls = store.calls_for_session("s1")
    assert [c.id for c in calls] == [first, second]
    assert calls[0].usage == Usage(10, 20, 70, 5, 1)
    assert (calls[0].cost_usd, calls[0].price_key, calls[0].at) == (0.0123, "test", T0)
    assert (calls[1].cost_usd, calls[1].price_key) == (None, None)
    assert calls[1].model == "claude-opus-5-5"  # falls back to the requested model


def test_record_call_is_committed_at_once(db: Path, store: Store) -> None:
    store.record_call(call())
    other = sqlite3.connect(db)
    assert other.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 1


def test_naive_datetimes_are_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="naive"):
        store.record_call(call(at=datetime(2026, 1, 1)))


# --------------------------------------------------------------------------- reports


# --------------------------------------------------------------------------- concurrency and crashes


def _open_and_close_elsewhere(path: Path) -> None:
    code = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('SELECT 1 FROM calls').fetchall(); c.close()"
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)


def test_a_second_connection_in_one_process_leaves_the_first_ones_locks(db: Path) -> None:
    # A launch keeps its store open while its exporter opens the export queue. The checks before a connection
    # once opened and closed the file, which dropped every POSIX lock of the process: another process closing
    # its connection then took itself for the last one and deleted the -wal file still in use here, and the
    # next call recorded here was lost (CI saw it as "disk I/O error" with 20 agents exporting at once).
    with Store.open(db) as first:
        first.record_call(call(turn=1))
        with Store.open(db):
            _open_and_close_elsewhere(db)
        _open_and_close_elsewhere(db)
        assert db.with_name(db.name + "-wal").exists()
        first.record_call(call(turn=2))
    count = "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT COUNT(*) FROM calls').fetchone()[0])"
    done = subprocess.run([sys.executable, "-c", count, str(db)], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["2"]


def test_a_store_replaced_after_its_connections_closed_is_checked_again(db: Path) -> None:
    with Store.open(db) as s:
        s.record_call(call())
    with Store.open(db), Store.open(db):
        pass
    for suffix in ("-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)
    db.write_bytes(b"not a database at all" * 100)
    with pytest.raises(StateError, match="not an SQLite database"):
        Store.open(db)
    db.unlink()
    with Store.open(db):
        assert db.stat().st_mode & 0o777 == 0o600


def test_a_store_of_the_first_schema_keeps_every_row_and_gains_one_hour_writes(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:  # a store as the first released schema left it
        m.setattr(store_file, "MIGRATIONS", store_file.MIGRATIONS[:1])
        m.setattr(store_file, "SCHEMA_VERSION", 1)
        with Store.open(db):
            pass
    conn = sqlite3.connect(db)
    with conn:
        for i in range(3):
            conn.execute(
                "INSERT INTO calls (at, agent, provider, session_id, turn, input, cache_write, cache_read, output, cost_usd)"
                " VALUES (?, 'a', 'claude', 's1', ?, 10, 100, 1000, 5, 0.5)",
                (1_700_000_000 + i, i),
            )
    conn.close()
    with Store.open(db) as s:
        old = s.calls_for_session("s1")
        assert [(c.turn, c.usage.cache_write, c.usage.cache_write_1h, c.cost_usd) for c in old] == [
            (0, 100, 0, 0.5),
            (1, 100, 0, 0.5),
            (2, 100, 0, 0.5),
        ]
        s.record_call(call(usage=Usage(input=1, cache_write=300, cache_write_1h=200, output=1)))
        (row,) = s.usage_report("session")
        assert (row.calls, row.cache_write, row.cache_write_1h) == (4, 600, 200)
