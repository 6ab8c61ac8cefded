"""The store waits without losing: a write the locked store refuses goes to the journal, and lands once.

Another process holding the store's write lock past the busy timeout used to
fail the launch with exit 5 and lose the billed call. Now the call is appended
(fsynced) to ``usage.sqlite3.pending.jsonl`` and replayed into the store at the
next write, at the close and at the next open. The kill -9 cases are the
journal's states on disk, written directly, then the store opened.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import threading
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlaunch import datarecord as records
from agentlaunch import paths
from agentlaunch.definitions.spec import load_agent, resolve_working_dir
from agentlaunch.launch.options import LaunchOptions
from agentlaunch.launch.reaper import Reaper
from agentlaunch.launch.session import Launch, spawn_child
from agentlaunch.launch.turn import ChildLike
from agentlaunch.providers import get_adapter
from agentlaunch.sinks import LaunchView, Notice, PricedCall
from agentlaunch.token_usage import Usage
from agentlaunch.usage import journal, journal_ops
from agentlaunch.usage.budget import BudgetGuard, Limits
from agentlaunch.usage.meter import Meter
from agentlaunch.usage.pricing import Pricer
from agentlaunch.usage.recorder import UsageRecorder
from agentlaunch.usage.records import CallRecord
from agentlaunch.usage.store import Store
from tests.support.cli_runs import run_cli, run_cli_inprocess

QUICK = 0.05  # the busy timeout in these tests: a locked store is given up on at once


class Collect:
    def __init__(self) -> None:
        self.events: list[object] = []

    def event(self, event: object, launch: LaunchView) -> None:
        self.events.append(event)

    def notices(self) -> list[str]:
        return [e.message for e in self.events if isinstance(e, Notice)]


class Clock:
    def monotonic(self) -> float:
        import time

        return time.monotonic()

    def now(self) -> datetime:
        return datetime.now(UTC).astimezone()


def fake_launch(agents_dir: Path, tmp_path: Path, store: Store, *sinks: object) -> tuple[Launch, Collect]:
    """A launch of the demo agent on the real offline fake CLI, writing to ``store``."""
    state = tmp_path / "state"
    spec = load_agent(agents_dir, "demo", state)
    collected = Collect()

    def factory(argv: Sequence[str], env: Mapping[str, str], cwd: Path, size: tuple[int, int]) -> ChildLike:
        return spawn_child(argv, env, cwd, size)

    launch = Launch(
        LaunchOptions(agent="demo", agents_dir=agents_dir),
        spec=spec,
        adapter=get_adapter(spec.provider),
        store=store,
        pricer=Pricer(agents_dir=spec.agents_dir),
        meter=Meter(configured_window=spec.context_window),
        sinks=[UsageRecorder(store), *sinks, collected],  # type: ignore[list-item]
        state_dir=state,
        working_dir=resolve_working_dir(spec, None, state),
        clock=Clock(),
        child_factory=factory,
        reaper=Reaper(subreaper=False),
    )
    return launch, collected


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "usage.sqlite3"
    Store.open(path).close()  # migrated: opening it again writes nothing while another process holds the lock
    return path


@pytest.fixture
def locked(store_path: Path) -> Iterator[sqlite3.Connection]:
    """Another connection holding the store's write lock (as another process would), until it is rolled back."""
    holder = sqlite3.connect(store_path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        yield holder
    finally:
        if holder.in_transaction:
            holder.execute("ROLLBACK")
        holder.close()


def count(store_path: Path, sql: str = "SELECT COUNT(*) FROM calls") -> int:
    conn = sqlite3.connect(store_path)
    try:
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()


def a_call(n: int = 1, session: str = "s1", at: datetime | None = None) -> CallRecord:
    return CallRecord(
        agent="demo",
        provider="fake",
        usage=Usage(input=n, output=2 * n, cache_write=3, cache_write_1h=1),
        session_id=session,
        turn=1,
        model_requested="fake-1",
        model_reported="fake-1",
        cost_usd=0.25,
        price_key="test",
        at=at or datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC),
        full_price_usd=0.5,
    )


# --------------------------------------------------------------------------- a launch while the store is locked


def test_a_turn_while_another_process_holds_the_lock_succeeds_and_its_call_lands_once(
    agents_dir: Path, tmp_path: Path, store_path: Path, locked: sqlite3.Connection
) -> None:
    store = Store.open(store_path, timeout=QUICK)
    launch, collected = fake_launch(agents_dir, tmp_path, store)
    try:
        launch.start()
        outcome = launch.run_turn("hello")
        assert outcome.end is not None and not outcome.end.is_error, outcome
        assert 'You said: "hello"' in outcome.end.result
        priced = [e.record for e in collected.events if isinstance(e, PricedCall)]
        assert priced and count(store_path) == 0  # the lock is still held: nothing could be written yet
        assert journal.has_lines(store.journal)
        (said,) = [n for n in collected.notices() if "locked by another process" in n]
        assert str(store.journal) in said
        locked.execute("ROLLBACK")  # the other process lets go
    finally:
        launch.close(0)
    assert not store.journal.exists()  # the close's writes replayed it, then cleared it
    with Store.open(store_path) as again:
        row = again.get_session(launch.session_id)
        assert row is not None and row.turns == 1 and row.exit_status == 0 and row.ended is not None
        assert row.title == "hello"
        assert [records.replace(c, id=None) for c in again.calls_for_session(launch.session_id)] == priced


def test_a_lock_held_past_the_close_leaves_the_journal_for_the_next_open(
    agents_dir: Path, tmp_path: Path, store_path: Path, locked: sqlite3.Connection
) -> None:
    store = Store.open(store_path, timeout=QUICK)
    launch, collected = fake_launch(agents_dir, tmp_path, store)
    try:
        launch.start()
        launch.run_turn("hello")
    finally:
        launch.close(0)
    assert any("still locked" in n for n in collected.notices())
    assert count(store_path) == 0 and journal.has_lines(store.journal)
    locked.execute("ROLLBACK")
    with Store.open(store_path) as again:  # any command's open writes what waited
        calls = again.calls_for_session(launch.session_id)
        assert len(calls) == 1 and again.get_session(launch.session_id).exit_status == 0  # type: ignore[union-attr]
    assert not store.journal.exists()
    Store.open(store_path).close()
    assert count(store_path) == 1


def test_a_budget_counts_the_calls_waiting_in_the_journal(
    agents_dir: Path, tmp_path: Path, store_path: Path, locked: sqlite3.Connection
) -> None:
    store = Store.open(store_path, timeout=QUICK)
    guard = BudgetGuard(Limits(session_tokens=1), store, Clock(), priceable=True)
    launch, _ = fake_launch(agents_dir, tmp_path, store, guard)
    try:
        launch.start()
        launch.run_turn("hello")
        assert count(store_path) == 0  # the call is only in the journal, and still it was spent
        assert launch.stopped is not None and "session token budget" in launch.stopped.message
    finally:
        locked.execute("ROLLBACK")
        launch.close(0)


def test_the_command_exits_0_with_a_notice_and_usage_counts_the_call_once(agents_dir: Path, workdir: Path) -> None:
    cli_store = paths.store_path()  # the test's own state directory (conftest)
    Store.open(cli_store).close()
    holder = sqlite3.connect(cli_store, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    env = {"AGENTLAUNCH_STORE_BUSY_TIMEOUT": str(QUICK)}
    try:
        done = run_cli("run", "demo", "hello", "--agents-dir", str(agents_dir), cwd=workdir, env=env)
        assert done.returncode == 0, done.stderr.decode()
        assert b'You said: "hello"' in done.stdout
        err = done.stderr.decode()
        assert "locked by another process" in err and "Traceback" not in err
        waiting = run_cli_inprocess("usage", "--by", "agent", "--json", env=env)  # still locked: the report says what it misses
        assert waiting.returncode == 0 and json.loads(waiting.stdout) == []
        assert "the store is locked by another process" in waiting.stderr.decode()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    for _ in range(2):  # the first replays the journal, the second must not count it again
        report = run_cli_inprocess("usage", "--by", "agent", "--json", env=env)
        assert report.returncode == 0, report.stderr.decode()
        assert [r["calls"] for r in json.loads(report.stdout)] == [1]
    sessions = json.loads(run_cli_inprocess("sessions", "--json", env=env).stdout)
    assert [(s["turns"], s["calls"]) for s in sessions] == [(1, 1)]
    assert not journal.journal_path(cli_store).exists()


# --------------------------------------------------------------------------- kill -9 between any two steps


def test_killed_after_the_journal_line_before_any_commit(store_path: Path) -> None:
    path = journal.journal_path(store_path)
    journal.append(path, journal_ops.call_op(a_call(1)))
    journal.append(path, journal_ops.call_op(a_call(2)))
    with Store.open(store_path) as store:
        assert sorted(c.usage.input for c in store.calls_for_session("s1")) == [1, 2]
        assert store.calls_for_session("s1")[0] == records.replace(a_call(1), id=1)  # every field comes back
    assert not path.exists()


def test_killed_after_the_commit_before_the_journal_was_cleared_counts_nothing_twice(store_path: Path) -> None:
    path = journal.journal_path(store_path)
    ops = [journal_ops.call_op(a_call(1)), journal_ops.touch_op("s1", 1, datetime.now(UTC))]
    with Store.open(store_path) as store:
        store.start_session("s1", agent="demo", provider="fake", working_dir="/w")
    for op in ops:
        journal.append(path, op)
    left = path.read_bytes()
    Store.open(store_path).close()  # replayed and committed ...
    assert not path.exists()
    path.write_bytes(left)  # ... and the kill came before the journal was cleared
    journal.append(path, journal_ops.call_op(a_call(7)))  # a later launch kept one more meanwhile
    with Store.open(store_path) as store:
        assert sorted(c.usage.input for c in store.calls_for_session("s1")) == [1, 7]
        assert store.get_session("s1").turns == 1  # type: ignore[union-attr]
    assert not path.exists()


def test_a_half_written_last_line_is_ignored_and_the_next_append_starts_a_new_line(store_path: Path) -> None:
    path = journal.journal_path(store_path)
    journal.append(path, journal_ops.call_op(a_call(1)))
    whole = journal_ops.call_op(a_call(2)).line()
    with path.open("ab") as fh:
        fh.write(whole[: len(whole) // 2])  # killed in the middle of its write
    journal.append(path, journal_ops.call_op(a_call(3)))
    with Store.open(store_path) as store:
        assert sorted(c.usage.input for c in store.calls_for_session("s1")) == [1, 3]
        assert store.skipped() == []  # a line a writer died writing is no one's warning
    only_half = whole[:40]
    path.write_bytes(only_half)
    with Store.open(store_path) as store:  # a journal holding nothing but half a line: no crash, nothing stored
        assert len(store.calls_for_session("s1")) == 2
    assert not path.exists()


def test_a_damaged_line_is_skipped_with_a_warning_and_the_others_land(store_path: Path) -> None:
    path = journal.journal_path(store_path)
    journal.append(path, journal_ops.call_op(a_call(1)))
    with path.open("ab") as fh:
        fh.write(b'{"v":1,"uid":"x","op":"call","at":"soon"}\n\xff\xfe\n')
    journal.append(path, journal_ops.call_op(a_call(2)))
    with Store.open(store_path) as store:
        assert sorted(c.usage.input for c in store.calls_for_session("s1")) == [1, 2]
        warnings = store.skipped()
    assert [w.split(": ", 1)[1] for w in warnings] == [
        "skipped line 2: not a write agentlaunch kept",
        "skipped line 3: not a write agentlaunch kept",
    ]


def test_killed_while_a_clear_rewrote_the_journal(store_path: Path) -> None:
    """A replay that read the first lines while more were appended rewrites only the rest; a temporary
    file a kill left behind is not the journal."""
    path = journal.journal_path(store_path)
    journal.append(path, journal_ops.call_op(a_call(1)))
    found, upto = journal.read(path)
    journal.append(path, journal_ops.call_op(a_call(2)))  # appended after the read
    (path.parent / f".{path.name}.abc.tmp").write_bytes(b"half of a rewrite")
    with Store.open(store_path) as store:  # this replays both; the stale read then clears nothing of the new file
        assert len(store.calls_for_session("s1")) == 2
    assert upto is not None and len(found.ops) == 1
    journal.append(path, journal_ops.call_op(a_call(3)))
    journal.clear(path, upto)  # another file now: left alone
    with Store.open(store_path) as store:
        assert sorted(c.usage.input for c in store.calls_for_session("s1")) == [1, 2, 3]


def test_the_journal_is_private_whatever_the_umask(store_path: Path) -> None:
    old = os.umask(0)
    try:
        path = journal.journal_path(store_path)
        journal.append(path, journal_ops.call_op(a_call(1)))
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_appends_and_replays_from_many_threads_lose_nothing_and_count_nothing_twice(store_path: Path) -> None:
    """Each thread opens its own file description, so their flocks exclude each other as processes' do."""
    path = journal.journal_path(store_path)
    writers, each = 4, 40
    done = threading.Event()
    errors: list[BaseException] = []

    def write(w: int) -> None:
        try:
            for i in range(each):
                journal.append(path, journal_ops.call_op(a_call(1 + w * each + i)))
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            errors.append(exc)

    def replay() -> None:
        try:
            with Store.open(store_path) as store:
                while not done.is_set():
                    store.replay()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    replayers = [threading.Thread(target=replay) for _ in range(2)]
    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in replayers + threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    for t in replayers:
        t.join()
    assert errors == []
    Store.open(store_path).close()
    assert count(store_path) == writers * each
    assert count(store_path, "SELECT COUNT(DISTINCT input) FROM calls") == writers * each


# --------------------------------------------------------------------------- the reader, given anything

OPS = (
    st.builds(
        a_call,
        st.integers(0, 10**9),
        st.text(max_size=20),
        st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(9000, 1, 1), timezones=st.just(UTC)),
    ).map(journal_ops.call_op)
    | st.builds(
        journal_ops.state_op, st.text(max_size=10), st.none() | st.dictionaries(st.text(max_size=5), st.integers(), max_size=3)
    )
    | st.builds(journal_ops.title_op, st.text(max_size=10), st.text(max_size=30))
)


@given(st.binary(max_size=4096))
def test_the_reader_never_raises_on_any_bytes(data: bytes) -> None:
    found = journal_ops.parse(data)
    assert 0 <= found.end <= len(data)
    assert found.end == 0 or data[found.end - 1 : found.end] == b"\n"
    assert len({op.uid for op in found.ops}) == len(found.ops)


@given(st.lists(st.tuples(OPS, st.binary(max_size=200)), max_size=8), st.binary(max_size=100))
def test_the_reader_finds_every_whole_line_among_any_other_lines(items: list[tuple[journal_ops.Op, bytes]], tail: bytes) -> None:
    data = b""
    for op, junk in items:
        data += op.line() + junk.replace(b"\n", b"") + b"\n"
    found = journal_ops.parse(data + tail.replace(b"\n", b""))
    assert [op.uid for op in found.ops] == [op.uid for op, _ in items]
    assert [op.args for op in found.ops] == [json.loads(json.dumps(op.args)) for op, _ in items]


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=2048))
def test_opening_a_store_beside_any_journal_never_fails(tmp_path: Path, data: bytes) -> None:
    folder = tmp_path / os.urandom(6).hex()
    folder.mkdir()
    path = folder / "usage.sqlite3"
    journal.journal_path(path).write_bytes(data + b"\n" + journal_ops.call_op(a_call(5)).line())
    with Store.open(path) as store:
        assert [c.usage.input for c in store.calls_for_session("s1")] == [5]
        store.skipped()
