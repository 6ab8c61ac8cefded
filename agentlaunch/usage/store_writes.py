"""The usage store's write path: calls stored at once, and every launch write through the journal when locked.

Several agentlaunch processes (one per running agent) write to the same file at
once, so the store keeps every write short: one statement in autocommit mode,
or a ``BEGIN IMMEDIATE`` transaction that takes the write lock up front (a
deferred transaction that later upgrades to a write can fail with "database is
locked" at once, without waiting for ``busy_timeout``). WAL mode lets reports
read while agents write.

A launch writes through :meth:`StoreWrites.write`: a write that finds the store
locked by another process past its busy timeout goes to the journal beside it
(:mod:`agentlaunch.usage.journal`), and the journal is replayed into the
store at the next write, at ``Store.close`` and at the next ``Store.open``,
by any process. :func:`apply_op` is the one statement of each op, the same
whether it is written now or replayed.
"""

from __future__ import annotations

import json
import sqlite3

from agentlaunch.errors import StateError
from agentlaunch.token_usage import Usage, usage_problem
from agentlaunch.usage import journal
from agentlaunch.usage.journal_ops import Op
from agentlaunch.usage.records import CallRecord, now, to_ts
from agentlaunch.usage.store_connection import REPLAY_WAIT_S, StoreConnection
from agentlaunch.usage.store_file import state_error
from agentlaunch.usage.store_rows import INSERT_CALL, call_values, shorten


class StoreWrites(StoreConnection):
    """The writes of a launch: calls, and any op now or through the journal."""

    def record_call(self, call: CallRecord) -> int:
        """Store one call, committed before returning (a crash loses at most the call in flight).

        Returns the new row id. A usage that no call can have (a field that is
        not an int from 0 below 2**53) is a ValueError and nothing is stored: the
        parsers refuse such figures, this is the last guard.
        """
        check_usage(call.usage)
        with self._guard():
            cur = self._conn.execute(INSERT_CALL, call_values(call))
            assert cur.lastrowid is not None
            return cur.lastrowid

    def _bulk_insert_calls(self, calls: list[CallRecord]) -> None:
        """Insert many calls in one transaction (benchmarks and imports, not live recording)."""
        with self._guard():
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(INSERT_CALL, (call_values(c) for c in calls))
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    # ------------------------------------------------------------------ through the journal

    def write(self, op: Op) -> bool:
        """Apply ``op`` (a launch's write: a session, a call, ...) now, or keep it in the journal; True when applied.

        The journal is replayed first, so the store gets the writes in the order
        they were made. When another process holds the store's lock past the busy
        timeout (after one such wait, :data:`REPLAY_WAIT_S`, so a long lock stalls a
        launch once, not at every call), the op is appended to the journal,
        fsynced, and False is returned: nothing is lost, and the next write, the
        close or the next open writes it. Raises StateError when the store fails
        otherwise, or when the journal cannot be written either.
        """
        if op.kind == "call":
            check_usage(op.call().usage)
        with self._lock:
            wait = REPLAY_WAIT_S if self._busy else self.timeout
            if journal.has_lines(self.journal) and not self.replay(wait):
                self._keep(op)
                return False
            try:
                with self._waiting(wait):
                    apply_op(self._conn, op)
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise state_error(self.path, exc) from None
                self._keep(op)
                return False
            except sqlite3.Error as exc:
                raise state_error(self.path, exc) from None
            self._busy = False
            return True

    def replay(self, wait: float | None = None) -> bool:
        """Write the journal's ops into the store and clear it; False when the store stayed locked for ``wait`` seconds.

        The ops' uids are committed with them (table ``journal_applied``), and the
        journal is cleared only after that commit: a replay that a kill -9 cut
        between the two finds the uids at the next replay and applies nothing
        twice. A journal line that is not an op (a half-written last line, a
        damaged one) is left out, named once by :meth:`skipped`.
        """
        with self._lock:
            try:
                found, upto = journal.read(self.journal)
            except OSError as exc:
                self._skipped.setdefault("journal", f"{self.journal}: the journal cannot be read ({exc}); left as is")
                return True  # the store itself is fine: writes go on
            for number in found.bad:
                key = f"journal:{upto.digest.hex() if upto else ''}:{number}"
                self._skipped.setdefault(key, f"{self.journal}: skipped line {number}: not a write agentlaunch kept")
            if upto is None:
                return True
            if found.ops:
                try:
                    self._apply_once(found.ops, self.timeout if wait is None else wait)
                except sqlite3.OperationalError as exc:
                    if not is_busy(exc):
                        raise state_error(self.path, exc) from None
                    self._busy = True
                    return False
                except sqlite3.Error as exc:
                    raise state_error(self.path, exc) from None
            self._busy = False
            try:
                journal.clear(self.journal, upto)
            except OSError as exc:  # the rows are committed; the next replay finds their uids and adds nothing
                self._skipped.setdefault("journal-clear", f"{self.journal}: cannot clear the journal ({exc})")
            return True

    def pending_calls(self) -> list[CallRecord]:
        """The calls in the journal that are not in the store yet (a budget counts them: they were billed)."""
        if not journal.has_lines(self.journal):
            return []
        with self._lock:
            try:
                found, _ = journal.read(self.journal)
            except OSError:
                return []
            calls = [op for op in found.ops if op.kind == "call"]
            if not calls:
                return []
            with self._guard():
                applied = {
                    r[0]
                    for r in self._conn.execute(
                        "SELECT uid FROM journal_applied WHERE uid IN (SELECT value FROM json_each(?))",
                        (json.dumps([op.uid for op in calls]),),
                    )
                }
        return [op.call() for op in calls if op.uid not in applied]

    def _apply_once(self, ops: list[Op], wait: float) -> None:
        """Apply each op whose uid is not in ``journal_applied`` yet, and note its uid, in one transaction."""
        with self._waiting(wait):
            self._conn.execute("BEGIN IMMEDIATE")
        try:
            stamp = to_ts(now())
            for op in ops:
                cur = self._conn.execute(
                    "INSERT INTO journal_applied (uid, at) VALUES (?, ?) ON CONFLICT (uid) DO NOTHING", (op.uid, stamp)
                )
                if cur.rowcount:
                    try:
                        apply_op(self._conn, op)
                    except (sqlite3.IntegrityError, sqlite3.DataError, ValueError) as exc:
                        # Never applicable (kept by another version?): named, and not retried for ever.
                        self._skipped.setdefault(f"op:{op.uid}", f"{self.journal}: skipped a {op.kind} write: {exc}")
            self._conn.execute("COMMIT")
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

    def _keep(self, op: Op) -> None:
        """Append ``op`` to the journal (the store is locked); StateError when that fails too."""
        self._busy = True
        try:
            journal.append(self.journal, op)
        except OSError as exc:
            raise StateError(
                f"{self.path}: the usage store stayed locked by another process, and the journal beside it "
                f"cannot be written either ({exc})",
                hint="free the disk or the lock: the call in flight was not stored",
            ) from None
        self.journaled += 1


def check_usage(usage: Usage) -> None:
    """A usage that no call can have (a field that is not an int from 0 below 2**53) is never stored."""
    problem = usage_problem(usage)
    if problem is not None:
        raise ValueError(f"refusing to store an impossible usage: {problem}")


def apply_op(conn: sqlite3.Connection, op: Op) -> bool:
    """Run ``op``'s one statement on ``conn``: the same SQL whether it is written now or replayed from the journal.

    True when it changed a row (False: an update of a session the store does not have).
    """
    a = op.args
    if op.kind == "call":
        cur = conn.execute(INSERT_CALL, call_values(op.call()))
    elif op.kind == "session":
        cur = conn.execute(
            """INSERT INTO sessions (session_id, agent, provider, model, working_dir, started, last_used, turns)
               VALUES (?, ?, ?, ?, ?, ?, ?, 0)
               ON CONFLICT (session_id) DO UPDATE SET
                   last_used = excluded.last_used,
                   model = COALESCE(excluded.model, sessions.model),
                   ended = NULL, exit_status = NULL""",
            (a["session_id"], a["agent"], a["provider"], a["model"], a["working_dir"], a["at"], a["at"]),
        )
    elif op.kind == "touch":
        cur = conn.execute(
            "UPDATE sessions SET last_used = ?, turns = turns + ? WHERE session_id = ?", (a["at"], a["turns"], a["session_id"])
        )
    elif op.kind == "end":
        cur = conn.execute(
            "UPDATE sessions SET ended = ?, last_used = MAX(last_used, ?), exit_status = ? WHERE session_id = ?",
            (a["at"], a["at"], a["exit_status"], a["session_id"]),
        )
    elif op.kind == "state":
        payload = None if a["state"] is None else json.dumps(a["state"], sort_keys=True)
        cur = conn.execute("UPDATE sessions SET provider_state = ? WHERE session_id = ?", (payload, a["session_id"]))
    elif op.kind == "place":
        cur = conn.execute(
            "UPDATE sessions SET tmux_session = ?, tmux_window = ?, tmux_layout = ? WHERE session_id = ?",
            (a["tmux_session"], a["tmux_window"], a["tmux_layout"], a["session_id"]),
        )
    elif op.kind == "title":
        cur = conn.execute(
            "UPDATE sessions SET title = ? WHERE session_id = ? AND title IS NULL", (shorten(a["prompt"]), a["session_id"])
        )
    elif op.kind == "event":
        cur = conn.execute(
            "INSERT INTO session_events (session_id, at, kind, detail) VALUES (?, ?, ?, ?)",
            (a["session_id"], a["at"], a["kind"], a["detail"]),
        )
    else:  # pragma: no cover - read_op admits only the kinds above
        raise ValueError(f"unknown journal op {op.kind!r}")
    return cur.rowcount > 0


def is_busy(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused because another connection holds the lock (SQLITE_BUSY or SQLITE_LOCKED)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    text = str(exc).lower()
    return "locked" in text or "busy" in text
