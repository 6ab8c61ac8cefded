"""Session ids as people type them: a unique prefix names a session (``-r 53af7239``, ``usage --session 53af``)."""

from __future__ import annotations

from agentlaunch.errors import UsageError
from agentlaunch.usage.store import Store

SHOWN = 10  # matches listed when a prefix is ambiguous


def unique_prefix(store: Store, session_id: str, least: int = 8) -> str:
    """The shortest start of ``session_id`` (at least ``least`` characters) that names no other session: what a hint
    prints for ``--session``. Codex's thread ids are UUIDv7, whose first 8 characters are the time in 65-second steps:
    a fork made within a minute of its source shared them (``--session 01a24cb9`` then named two sessions)."""
    for size in range(least, len(session_id)):
        prefix = session_id[:size]
        if all(m.session_id == session_id for m in store.sessions_by_prefix(prefix, limit=2)):
            return prefix
    return session_id


def resolve_session(store: Store, value: str, option: str) -> str:
    """The full id of the one session ``value`` is (an exact id) or starts; ambiguous is a UsageError listing the matches.

    A value that matches no session is returned as given: the caller decides (``--resume`` hands an id
    agentlaunch never saw to the CLI, which may know it).
    """
    if not value or store.get_session(value) is not None:
        return value
    matches = store.sessions_by_prefix(value, limit=SHOWN + 1)
    if len(matches) == 1:
        return matches[0].session_id
    if not matches:
        return value
    lines = [
        f"  {m.session_id}  {m.agent}  {m.last_used.astimezone():%Y-%m-%d %H:%M}" + (f"  {m.title}" if m.title else "")
        for m in matches[:SHOWN]
    ]
    more = "\n  …and more" if len(matches) > SHOWN else ""
    raise UsageError(f"{option}: {value!r} is the start of several sessions; give more of the id:\n" + "\n".join(lines) + more)
