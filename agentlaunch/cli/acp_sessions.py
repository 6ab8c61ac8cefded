"""The editor's sessions of ``agentlaunch acp``: which agentlaunch session each one is, read from the usage store.

An editor's ``session/new`` gets an id at once; the session in agentlaunch's store (the CLI's own id) exists from the
first prompt's turn. The pair is kept in the state directory (``acp/ID``, one small JSON file a session) so that a
later ``session/load`` or ``session/resume`` of the editor's id, from another ``agentlaunch acp`` process, finds it;
a store id (what ``session/list`` lists, what ``agentlaunch sessions`` shows) is taken as it is. A session of another
agent is refused. This module imports no ACP SDK.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentlaunch import paths
from agentlaunch.errors import AgentlaunchError
from agentlaunch.fsutil import write_atomic
from agentlaunch.usage.store import Store

SAFE_ID = re.compile(r"[A-Za-z0-9._-]{1,200}")


@dataclass
class EditorSession:
    """One session the editor opened: its id, folder, MCP servers, and agentlaunch's session once there is one."""

    acp_id: str
    cwd: str
    servers: list[dict[str, Any]] = field(default_factory=list)
    store_id: str | None = None  # None until the first turn confirmed the CLI's session
    always: set[str] = field(default_factory=set)  # tools the editor allowed always in this session
    window: int | None = None  # the model's context window, once known


@dataclass(frozen=True)
class Listed:
    acp_id: str
    cwd: str
    title: str | None
    updated_at: str


class SessionBook:
    """The sessions this server knows, by the editor's id, and the agent's sessions in the store."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.sessions: dict[str, EditorSession] = {}

    def new(self, acp_id: str, cwd: str, servers: list[dict[str, Any]]) -> EditorSession:
        session = EditorSession(acp_id, cwd, servers)
        self.sessions[acp_id] = session
        return session

    def get(self, acp_id: str) -> EditorSession | None:
        return self.sessions.get(acp_id)

    def forget(self, acp_id: str) -> None:
        self.sessions.pop(acp_id, None)

    def resume(self, acp_id: str, cwd: str, servers: list[dict[str, Any]]) -> EditorSession:
        """The session ``acp_id`` names (the editor's id, or a store id), in ``cwd``; LookupError saying why not."""
        known = self.sessions.get(acp_id)
        if known is not None:
            known.cwd, known.servers = cwd, servers
            return known
        if not SAFE_ID.fullmatch(acp_id):
            raise LookupError(f"no session {acp_id!r}")
        store_id = _mapped(acp_id) or acp_id
        row = _row(store_id)
        if row is None:
            raise LookupError(f"no session {acp_id} of {self.agent}: session/list lists its sessions")
        if row.agent != self.agent:
            raise LookupError(f"session {acp_id} is {row.agent}'s, not {self.agent}'s: `agentlaunch acp {row.agent}` serves it")
        session = EditorSession(acp_id, cwd, servers, store_id=store_id)
        self.sessions[acp_id] = session
        return session

    def record(self, session: EditorSession, store_id: str) -> None:
        """The first turn named agentlaunch's session: kept, with the editor's id, for a later load."""
        session.store_id = store_id
        if store_id != session.acp_id and SAFE_ID.fullmatch(session.acp_id):
            folder = paths.state_dir() / "acp"
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            write_atomic(folder / session.acp_id, (json.dumps({"agent": self.agent, "session_id": store_id}) + "\n").encode())

    def listed(self, cwd: str | None, cursor: str | None, page: int) -> tuple[list[Listed], str | None]:
        """The agent's sessions with a turn, newest first (in ``cwd`` only, when given), a page from ``cursor``."""
        start = int(cursor) if cursor and cursor.isdigit() else 0
        try:
            with Store.open(paths.store_path()) as store:
                rows = [r for r in store.list_sessions(self.agent) if r.turns > 0]
        except AgentlaunchError:
            return [], None
        if cwd is not None:
            rows = [r for r in rows if Path(r.working_dir) == Path(cwd)]
        shown = rows[start : start + page]
        more = str(start + page) if start + page < len(rows) else None
        return [Listed(r.session_id, r.working_dir, r.title, r.last_used.isoformat()) for r in shown], more


def store_id_for(agent: str, reported: str) -> str | None:
    """agentlaunch's id of the session the CLI reported as ``reported``: the same id (Claude Code), or the session
    whose kept provider state names that thread (Codex: the store keeps agentlaunch's own id); None while the store
    does not have it yet."""
    try:
        with Store.open(paths.store_path()) as store:
            if (row := store.get_session(reported)) is not None:
                return row.session_id if row.agent == agent else None
            for row in store.list_sessions(agent, limit=200):
                if isinstance(row.provider_state, dict) and row.provider_state.get("thread_id") == reported:
                    return row.session_id
    except AgentlaunchError:
        return None
    return None


def session_cost(store_id: str) -> float | None:
    """The session's cost as the usage store has it (its priced calls), None when no call was priced."""
    try:
        with Store.open(paths.store_path()) as store:
            cost, _calls = store.session_costs([store_id]).get(store_id, (None, 0))
    except AgentlaunchError:
        return None
    return cost


def _row(store_id: str) -> Any:
    try:
        with Store.open(paths.store_path()) as store:
            return store.get_session(store_id)
    except AgentlaunchError:
        return None


def _mapped(acp_id: str) -> str | None:
    """The store id a session/new id became, from its file in the state directory."""
    try:
        data = json.loads((paths.state_dir() / "acp" / acp_id).read_text())
    except (OSError, ValueError):
        return None
    sid = data.get("session_id") if isinstance(data, dict) else None
    return sid if isinstance(sid, str) else None
