"""The usage store's sessions: one row per agent session, written at its start, turns, end and place.

Each write is one statement (the same SQL a journal replay runs, :func:`~agentlaunch.usage.store_writes.apply_op`);
each read skips a row that does not read as a session and names it once (:meth:`Store.skipped`).
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from agentlaunch.errors import StateError
from agentlaunch.usage import journal_ops
from agentlaunch.usage.records import SessionRow, now
from agentlaunch.usage.store_connection import StoreConnection
from agentlaunch.usage.store_rows import SESSION_COLUMNS, session_problem, session_row
from agentlaunch.usage.store_writes import apply_op


class StoreSessions(StoreConnection):
    """Sessions: start, touch, end, place, title; found by id, prefix, agent or folder."""

    def start_session(
        self,
        session_id: str,
        *,
        agent: str,
        provider: str,
        working_dir: str | Path,
        model: str | None = None,
        at: datetime | None = None,
    ) -> SessionRow:
        """Record a new session, or mark a resumed one as in use again (ended cleared).

        A row already there that does not read as a session (another program's) is a StateError naming it.
        """
        op = journal_ops.session_op(
            session_id, agent=agent, provider=provider, working_dir=str(working_dir), model=model, at=at or now()
        )
        with self._guard():
            apply_op(self._conn, op)
        row = self.get_session(session_id)
        if row is None:
            raise StateError(
                "; ".join(self.skipped()) or f"{self.path}: session {session_id!r} cannot be read back",
                hint="remove or repair that row of the sessions table",
            )
        return row

    def touch_session(self, session_id: str, turns_delta: int = 1, *, at: datetime | None = None) -> bool:
        """Count ``turns_delta`` more turns and update last_used; False if there is no such session."""
        with self._guard():
            return apply_op(self._conn, journal_ops.touch_op(session_id, turns_delta, at or now()))

    def end_session(self, session_id: str, exit_status: int | None, *, at: datetime | None = None) -> bool:
        """Mark the session ended with the child's exit status; False if there is no such session."""
        with self._guard():
            return apply_op(self._conn, journal_ops.end_op(session_id, exit_status, at or now()))

    def set_provider_state(self, session_id: str, state: dict[str, Any] | None) -> bool:
        """Replace the session's free-form provider data (JSON); False if there is no such session."""
        with self._guard():
            return apply_op(self._conn, journal_ops.state_op(session_id, state))

    def set_place(self, session_id: str, tmux_session: str, tmux_window: str | None, tmux_layout: str | None) -> bool:
        """Remember the tmux session, window and layout the session runs in; False if there is no such session."""
        with self._guard():
            return apply_op(self._conn, journal_ops.place_op(session_id, tmux_session, tmux_window, tmux_layout))

    def set_title(self, session_id: str, prompt: str) -> bool:
        """Give the session its title from ``prompt`` (its first: a title once set is kept); False if none was set."""
        with self._guard():
            return apply_op(self._conn, journal_ops.title_op(session_id, prompt))

    def latest_of_agent(self, agent: str, *, with_turns: bool = True) -> SessionRow | None:
        """The agent's most recently used session anywhere (only one that had a turn, with ``with_turns``)."""
        sql = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE agent = ?" + (" AND turns > 0" if with_turns else "")
        with self._guard():
            rows = self._sessions(self._conn.execute(sql + " ORDER BY last_used DESC", (agent,)), 1)
        return rows[0] if rows else None

    def sessions_by_prefix(self, prefix: str, limit: int = 10) -> list[SessionRow]:
        """Sessions whose id starts with ``prefix`` (an exact id first), most recent first, at most ``limit``."""
        with self._guard():
            rows = self._conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions WHERE substr(session_id, 1, length(?)) = ? "
                "ORDER BY session_id = ? DESC, last_used DESC",
                (prefix, prefix, prefix),
            )
            return self._sessions(rows, limit)

    def get_session(self, session_id: str) -> SessionRow | None:
        """The session with this id, or None."""
        with self._guard():
            rows = self._sessions(
                self._conn.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE session_id = ?", (session_id,)), 1
            )
        return rows[0] if rows else None

    def latest_session(self, agent: str, working_dir: str | Path, provider: str | None = None) -> SessionRow | None:
        """The most recently used session of ``agent`` in ``working_dir`` (and ``provider``), or None."""
        sql = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE agent = ? AND working_dir = ?"
        params: list[Any] = [agent, str(working_dir)]
        if provider is not None:
            sql += " AND provider = ?"
            params.append(provider)
        sql += " ORDER BY last_used DESC"
        with self._guard():
            rows = self._sessions(self._conn.execute(sql, params), 1)
        return rows[0] if rows else None

    def list_sessions(self, agent: str | None = None, *, limit: int | None = None) -> list[SessionRow]:
        """Sessions, most recently used first, optionally of one agent."""
        sql = f"SELECT {SESSION_COLUMNS} FROM sessions"
        params: list[Any] = []
        if agent is not None:
            sql += " WHERE agent = ?"
            params.append(agent)
        sql += " ORDER BY last_used DESC"
        with self._guard():
            return self._sessions(self._conn.execute(sql, params), limit)

    def _sessions(self, cursor: sqlite3.Cursor, limit: int | None) -> list[SessionRow]:
        """The first ``limit`` session rows of ``cursor`` that read as sessions; the others are skipped and named.

        No ``LIMIT`` in the SQL: a skipped row must not take the place of a good
        one, and the cursor reads no further than the rows kept.
        """
        kept: list[SessionRow] = []
        for row in cursor:
            problem = session_problem(row)
            if problem is not None:
                key = f"session:{row[-1]}"
                self._skipped.setdefault(key, f"{self.path}: skipped session row {row[-1]}: {problem}")
                continue
            kept.append(session_row(row))
            if limit is not None and len(kept) >= limit:
                break
        cursor.close()
        return kept
