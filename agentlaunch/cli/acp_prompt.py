"""One ``session/prompt`` of ``agentlaunch acp``: the headless turn's events as the editor's session updates.

``text_delta`` and ``text`` become ``agent_message_chunk``, ``thinking_delta`` ``agent_thought_chunk``; ``tool_use`` /
``tool_result`` a ``tool_call`` and its ``tool_call_update``; every ``usage`` (one model call) and ``output_final`` a
``usage_update`` {used: the context in use after the call, size: the model's window, cost: the session's cost as the
usage store has it, in USD}; a ``permission_request`` a ``session/request_permission`` whose answer goes back to the
turn. The stop reason: end_turn, cancelled (session/cancel), refusal (a budget stopped or refused the turn: the reason
said as a message).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import TYPE_CHECKING, Any, Protocol

from acp import RequestError
from acp.helpers import start_tool_call, text_block, update_agent_message_text, update_agent_thought_text, update_tool_call
from acp.schema import (
    AllowedOutcome,
    Cost,
    EmbeddedResourceContentBlock,
    PermissionOption,
    PromptResponse,
    ResourceContentBlock,
    TextContentBlock,
    ToolCallUpdate,
    ToolKind,
    UsageUpdate,
)

from agentlaunch.cli.acp_mcp import provider_flags
from agentlaunch.cli.acp_sessions import EditorSession, session_cost, store_id_for
from agentlaunch.cli.acp_turn import TurnProcess, failure_text, run_argv
from agentlaunch.providers.untrusted import summarize
from agentlaunch.usage.meter import table_window

if TYPE_CHECKING:
    from pathlib import Path

    from acp.interfaces import Client

    from agentlaunch.cli.acp_mcp import provider_flags
from agentlaunch.cli.acp_sessions import SessionBook


class Server(Protocol):
    """What a prompt reads of the server (:class:`agentlaunch.cli.acp_server.Server`)."""

    agent: str
    agents_dir: Path | None
    templates_dir: Path | None
    book: SessionBook
    conn: Client | None
    window: int | None
    provider: str


MAX_PROMPT = 1 << 20  # characters of one prompt, at most
BUDGET_EXIT = 6  # run's exit code when a budget stopped the turn or refused to start it
PERMISSION_OPTIONS = [
    PermissionOption(option_id="once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="always", name="Allow always (this session)", kind="allow_always"),
    PermissionOption(option_id="deny", name="Deny", kind="reject_once"),
]
TOOL_KINDS: dict[str, ToolKind] = {
    "Read": "read",
    "Write": "edit",
    "Edit": "edit",
    "MultiEdit": "edit",
    "NotebookEdit": "edit",
    "Bash": "execute",
    "Grep": "search",
    "Glob": "search",
    "WebFetch": "fetch",
    "WebSearch": "fetch",
    "shell": "execute",
    "exec_command": "execute",
    "apply_patch": "edit",
}


def prompt_text(blocks: list[Any]) -> str:
    """The prompt's text: text blocks as they are, a linked file by its URI, an embedded text file with its URI
    first; an image or audio (not offered in initialize) is refused."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(block.uri)
        elif isinstance(block, EmbeddedResourceContentBlock) and isinstance(getattr(block.resource, "text", None), str):
            parts.append(f"{block.resource.uri}:\n```\n{block.resource.text}\n```")
        else:
            kind = getattr(block, "type", type(block).__name__)
            raise RequestError.invalid_params({"message": f"a {kind} block: this agent takes text and text files only"})
    text = "\n".join(parts)
    if not text.strip():
        raise RequestError.invalid_params({"message": "an empty prompt"})
    if len(text) > MAX_PROMPT:
        raise RequestError.invalid_params({"message": f"a prompt over {MAX_PROMPT} characters"})
    return text


class PromptRun:
    """The turn of one prompt, from its start to its stop reason."""

    def __init__(self, server: Server, session: EditorSession, text: str) -> None:
        self.server, self.session, self.text = server, session, text
        self.turn: TurnProcess | None = None
        self.cancelled = False
        self.tools: dict[str, str] = {}  # tool id -> its name, while it runs
        self.asking: set[asyncio.Task[None]] = set()
        self.used: int | None = None  # the context in use after the last call
        self.reported: str | None = None  # the session id the CLI reported (Codex: its thread's)
        self.resolved = False

    async def run(self) -> PromptResponse:
        server, session = self.server, self.session

        def argv_of(ask_fd: int) -> list[str]:
            return run_argv(
                server.agent,
                cwd=session.cwd,
                resume=session.store_id,
                ask_fd=ask_fd,
                agents_dir=server.agents_dir,
                templates_dir=server.templates_dir,
                extra=[f"--provider-flag={flag}" for flag in provider_flags(server.provider, session.servers)],
            )

        try:
            # With the editor's MCP servers, no CLI started early from an earlier launch's plan (it would lack them).
            env = {**os.environ, "AGENTLAUNCH_NO_PRESPAWN": "1"} if session.servers else None
            self.turn = await TurnProcess.start(argv_of, self.text, env)
        except OSError as exc:
            raise RequestError.internal_error({"message": f"agentlaunch could not start the turn: {exc}"}) from None
        if self.cancelled:  # session/cancel came while the child started
            self.turn.interrupt()
        try:
            async for event in self.turn.events():
                await self._event(event)
            code, stderr = await self.turn.wait()
            await self._known()
        except asyncio.CancelledError:  # the client went away mid-turn: the turn ends, its calls stored
            await asyncio.shield(self.end())
            raise
        finally:
            for task in self.asking:
                task.cancel()
        return await self._stopped(code, stderr)

    async def _stopped(self, code: int, stderr: str) -> PromptResponse:
        if self.cancelled:
            return PromptResponse(stop_reason="cancelled")
        if code == 0:
            return PromptResponse(stop_reason="end_turn")
        if code == BUDGET_EXIT:
            await self._say(failure_text(stderr))
            return PromptResponse(stop_reason="refusal")
        raise RequestError(-32603, failure_text(stderr), {"exitCode": code})

    def cancel(self) -> None:
        self.cancelled = True
        if self.turn is not None:
            self.turn.interrupt()

    async def end(self) -> None:
        if self.turn is not None:
            await self.turn.end()

    # -- the events ---------------------------------------------------------------------------------------------

    async def _event(self, event: dict[str, Any]) -> None:
        kind = event["event"]
        if kind == "session" and isinstance(event.get("session_id"), str) and event["session_id"]:
            self.reported = event["session_id"]
            await self._known()
        elif kind in ("text_delta", "text") and isinstance(event.get("text"), str) and event["text"]:
            await self._say(event["text"])
        elif kind == "thinking_delta" and isinstance(event.get("text"), str) and event["text"]:
            await self._update(update_agent_thought_text(event["text"]))
        elif kind == "tool_use":
            await self._tool_started(event)
        elif kind == "tool_result":
            await self._tool_ended(event)
        elif kind == "context_window" and isinstance(event.get("tokens"), int):
            self.session.window = event["tokens"]
        elif kind == "usage" and isinstance(event.get("usage"), dict):
            await self._usage(event)
        elif kind == "output_final" and self.session.store_id is not None:
            await self._usage(None)
        elif kind == "permission_request":
            task = asyncio.ensure_future(self._permission(event))
            self.asking.add(task)
            task.add_done_callback(self.asking.discard)

    async def _known(self) -> None:
        """Find agentlaunch's session of the id the CLI reported, in the store (once), and keep it with the editor's."""
        if self.resolved or self.reported is None:
            return
        found = await asyncio.to_thread(store_id_for, self.server.agent, self.reported)
        if found is not None:
            self.resolved = True
            if found != self.session.store_id:
                self.server.book.record(self.session, found)

    async def _update(self, update: Any) -> None:
        conn = self.server.conn
        if conn is not None:
            with contextlib.suppress(ConnectionError):
                await conn.session_update(session_id=self.session.acp_id, update=update)

    async def _say(self, text: str) -> None:
        await self._update(update_agent_message_text(text))

    async def _tool_started(self, event: dict[str, Any]) -> None:
        tool_id, name = str(event.get("tool_id") or ""), str(event.get("name") or "tool")
        self.tools[tool_id] = name
        summary = str(event.get("summary") or "")
        title = f"{name} {summary}".strip()
        await self._update(start_tool_call(tool_id, title, kind=TOOL_KINDS.get(name, "other"), status="in_progress"))

    async def _tool_ended(self, event: dict[str, Any]) -> None:
        tool_id = str(event.get("tool_id") or "")
        self.tools.pop(tool_id, None)
        summary = str(event.get("summary") or "")
        content = [{"type": "content", "content": text_block(summary)}] if summary else None
        status = "failed" if event.get("is_error") else "completed"
        await self._update(update_tool_call(tool_id, status=status, content=content))  # type: ignore[arg-type]

    async def _usage(self, event: dict[str, Any] | None) -> None:
        """A usage_update after a model call: the context in use, the window, the session's stored cost."""
        if event is not None:
            usage = event["usage"]
            self.used = sum(v for k in ("input", "cache_write", "cache_read") if isinstance(v := usage.get(k), int))
            if self.session.window is None:
                self.session.window = table_window(event.get("model") if isinstance(event.get("model"), str) else None)
        used = self.used
        if used is None:
            return
        await self._known()
        cost = await asyncio.to_thread(session_cost, self.session.store_id) if self.session.store_id else None
        priced = Cost(amount=cost, currency="USD") if cost is not None else None
        size = max(self.server.window or self.session.window or 0, used)  # agent.yaml's, the CLI's, the table's
        await self._update(UsageUpdate(session_update="usage_update", used=used, size=size, cost=priced))

    async def _permission(self, event: dict[str, Any]) -> None:
        """Ask the editor whether the tool may run; its answer (or deny) goes back to the turn."""
        turn, name = self.turn, str(event.get("tool_name") or "tool")
        assert turn is not None
        if name in self.session.always:
            turn.answer("always")
            return
        tool_id = next((i for i, n in reversed(self.tools.items()) if n == name), str(event.get("request_id") or name))
        raw = event.get("tool_input") if isinstance(event.get("tool_input"), dict) else {}
        asked = ToolCallUpdate(
            tool_call_id=tool_id, title=f"{name} {summarize(raw)}".strip(), kind=TOOL_KINDS.get(name, "other"), raw_input=raw
        )
        decision = "deny"
        conn = self.server.conn
        if conn is not None and not self.cancelled:
            try:
                reply = await conn.request_permission(session_id=self.session.acp_id, tool_call=asked, options=PERMISSION_OPTIONS)
            except (RequestError, ConnectionError):
                reply = None
            if reply is not None and isinstance(reply.outcome, AllowedOutcome) and not self.cancelled:
                decision = reply.outcome.option_id if reply.outcome.option_id in ("once", "always") else "deny"
        if decision == "always":
            self.session.always.add(name)
        turn.answer(decision)
