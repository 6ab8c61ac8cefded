"""The SQLite usage store under concurrency: twenty writers at once, a writer killed mid-call."""

from __future__ import annotations

import multiprocessing
import os
import signal
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentlaunch.usage.store import Store
from tests.support.store_rows import call

WRITERS = 20


def _context() -> Any:
    """fork where it exists (fast, no re-import); the workers are module-level, so spawn works too."""
    return multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")


CALLS_PER_WRITER = 150


def _writer(path: str, number: int, barrier: Any, errors: Any) -> None:
    try:
        barrier.wait()
        # Every writer opens the fresh file itself: WAL switch and migration race too.
        with Store.open(Path(path)) as s:
            sid = f"w{number}"
            s.start_session(sid, agent=f"agent{number % 4}", provider="fake", working_dir="/w")
            for i in range(CALLS_PER_WRITER):
                s.record_call(call(f"agent{number % 4}", datetime.now(UTC), session_id=sid, turn=i))
                if i % 10 == 0:
                    s.touch_session(sid)
            s.end_session(sid, 0)
    except BaseException as exc:  # report everything, including "database is locked"
        errors.put(f"writer {number}: {type(exc).__name__}: {exc}")
        raise


def test_twenty_concurrent_writers_lose_no_row(tmp_path: Path) -> None:
    path = tmp_path / "state" / "usage.sqlite3"
    ctx = _context()
    barrier = ctx.Barrier(WRITERS)
    errors = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(str(path), n, barrier, errors)) for n in range(WRITERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    problems = []
    while not errors.empty():
        problems.append(errors.get())
    assert problems == []
    assert [p.exitcode for p in procs] == [0] * WRITERS
    with Store.open(path) as s:
        assert sum(r.calls for r in s.usage_report("session")) == WRITERS * CALLS_PER_WRITER
        sessions = s.list_sessions()
        assert len(sessions) == WRITERS
        assert all(x.turns == CALLS_PER_WRITER // 10 and x.exit_status == 0 for x in sessions)
        per_session = {r.key: r.calls for r in s.usage_report("session")}
        assert per_session == {f"w{n}": CALLS_PER_WRITER for n in range(WRITERS)}


def _recorder(path: str, conn: Any) -> None:
    with Store.open(Path(path)) as s:
        for i in range(100_000):
            s.record_call(call(at=datetime.now(UTC), turn=i))
            conn.send(i + 1)


def test_sigkill_loses_at_most_the_call_in_flight(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    ctx = _context()
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_recorder, args=(str(path), child))
    proc.start()
    acknowledged = 0
    while acknowledged < 200:
        acknowledged = parent.recv()
    assert proc.pid is not None
    os.kill(proc.pid, signal.SIGKILL)
    proc.join()
    while parent.poll():
        acknowledged = parent.recv()
    with Store.open(path) as s:
        stored = sum(r.calls for r in s.usage_report("agent"))
        assert s._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert acknowledged <= stored <= acknowledged + 1
