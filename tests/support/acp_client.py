"""An editor for ``agentlaunch acp`` tests: the ``agent-client-protocol`` SDK's client side, the agent its own process.

:class:`Editor` keeps every ``session/update`` it was sent and answers ``session/request_permission`` with the option
the test chose (or cancelled); :func:`editor` starts ``python -m agentlaunch acp AGENT`` and connects to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from acp import spawn_agent_process
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse


class Editor:
    """The client: what the agent sent, and how it answers permission questions."""

    def __init__(self, answer: str | None = "once") -> None:
        self.answer = answer  # the option id chosen; None: the question is cancelled
        self.updates: list[tuple[str, dict[str, Any]]] = []
        self.asked: list[dict[str, Any]] = []
        self.on_ask: asyncio.Event = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update.model_dump(mode="json", by_alias=True, exclude_none=True)))

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        self.asked.append(
            {
                "session": session_id,
                "tool_call": tool_call.model_dump(mode="json", by_alias=True, exclude_none=True),
                "options": [o.option_id for o in options],
            }
        )
        self.on_ask.set()
        if self.answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.answer))

    def kinds(self, session_id: str | None = None) -> list[str]:
        return [u["sessionUpdate"] for s, u in self.updates if session_id is None or s == session_id]

    def of(self, kind: str, session_id: str | None = None) -> list[dict[str, Any]]:
        return [u for s, u in self.updates if u["sessionUpdate"] == kind and (session_id is None or s == session_id)]

    def said(self, session_id: str | None = None) -> str:
        return "".join(u["content"]["text"] for u in self.of("agent_message_chunk", session_id))


@contextlib.asynccontextmanager
async def editor(
    agents_dir: Path, agent: str = "demo", client: Editor | None = None, env: dict[str, str] | None = None
) -> AsyncIterator[tuple[Any, Editor, Any]]:
    """``agentlaunch acp AGENT`` as a child process, with the SDK's client connected to it, initialized."""
    client = client or Editor()
    full_env = {**os.environ, **(env or {})}
    async with spawn_agent_process(
        client,
        sys.executable,
        "-m",
        "agentlaunch",
        "acp",
        agent,
        "--agents-dir",
        str(agents_dir),
        env=full_env,
        use_unstable_protocol=True,
    ) as (conn, proc):
        await asyncio.wait_for(conn.initialize(protocol_version=1), 30)
        yield conn, client, proc
