"""A turn the CLI refused because another process holds the session's thread: exit 7, naming who holds it.

Codex 0.171.0 lets one process at a time write a thread: while a line chat's ``codex app-server`` (or
any other Codex process) has it open, ``codex exec … resume THREAD`` exits 1 with "thread/resume failed:
thread … already has an active writer", and another app-server's ``thread/resume`` is refused with the
same words (the descriptor's ``thread_held``). Such a turn never began: it is not counted, and the launch
ends with :class:`SessionHeld` (exit 7, "cannot take it now", as ``agentlaunch send`` uses) naming the
running agentlaunch session of that thread, from the live status records, and ``agentlaunch send`` as the
way in. It reads the launch through :class:`HeldLaunch`, never the whole ``Launch``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Protocol

from agentlaunch.errors import PromptNotTaken
from agentlaunch.fleet.model import running

if TYPE_CHECKING:
    from pathlib import Path

    from agentlaunch.definitions.spec import AgentSpec
    from agentlaunch.events import TurnEnd
    from agentlaunch.providers.base import Adapter


class HeldLaunch(Protocol):
    """What the check reads of the launch (read-only): its provider, agent, session and state folder."""

    @property
    def adapter(self) -> Adapter: ...
    @property
    def spec(self) -> AgentSpec: ...
    @property
    def session_id(self) -> str: ...
    @property
    def state_dir(self) -> Path: ...


class SessionHeld(PromptNotTaken):
    """Another process writes the session's thread: this launch cannot take a turn in it now (exit 7)."""


def held_elsewhere(launch: HeldLaunch, end: TurnEnd | None, last_words: tuple[str, ...]) -> SessionHeld | None:
    """The error to end the launch with when the CLI refused the turn for a thread another process holds, else None."""
    words = launch.adapter.descriptor.thread_held
    said = [*last_words, *([end.error] if end is not None and end.is_error and end.error else [])]
    if words is None or not any(words in line for line in said):
        return None
    name, session, cli = launch.spec.name, launch.session_id, launch.spec.provider
    live = running(launch.state_dir)
    holders = [r for r in live if r.data.get("session_id") == session and r.data.get("pid") != os.getpid()]
    if not holders:
        return SessionHeld(
            f"another {cli} process holds {name}'s session {session} ({cli} lets one process at a time write a "
            "session): nothing was sent",
            hint="end that process, or wait until it is done, then run this again",
        )
    holder = holders[0]
    several = sum(1 for r in live if r.agent == holder.agent) > 1  # send then needs --session
    return SessionHeld(
        f"{holder.agent}'s session {session} is open in another agentlaunch (pid {holder.data.get('pid')}, "
        f"{holder.state}), which holds it ({cli} lets one process at a time write a session): nothing was sent",
        hint=f"hand the prompt to that session: agentlaunch send {holder.agent} PROMPT --wait"
        + (f" --session {session}" if several else ""),
    )
