"""``agentlaunch acp``'s server: one agent definition as an Agent Client Protocol agent on stdio, for an editor.

The only modules that import the ``agent-client-protocol`` SDK are this one and :mod:`agentlaunch.cli.acp_prompt`:
the `acp` command imports them when it runs, never `run`, `status` or a launch (``tests/test_import_graph.py``).
Each ``session/prompt`` is one headless turn of the definition in a child process
(:mod:`agentlaunch.cli.acp_turn`); the sessions are agentlaunch's own, in its usage store
(:mod:`agentlaunch.cli.acp_sessions`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from pathlib import Path
from typing import Any, cast

from acp import PROTOCOL_VERSION, RequestError, run_agent
from acp.interfaces import Agent, Client
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
)

from agentlaunch import __version__
from agentlaunch.cli.acp_prompt import PromptRun, prompt_text
from agentlaunch.cli.acp_sessions import EditorSession, SessionBook
from agentlaunch.cli.acp_wire import stdio_transport

LIST_PAGE = 50  # sessions per session/list page


class AcpAgent:
    """The ACP agent: the editor's sessions of one agentlaunch agent, each prompt a headless turn."""

    def __init__(self, agent: str, agents_dir: Path | None, templates_dir: Path | None) -> None:
        self.agent, self.agents_dir, self.templates_dir = agent, agents_dir, templates_dir
        self.book = SessionBook(agent)
        self.conn: Client | None = None
        self.runs: dict[str, PromptRun] = {}  # ACP session id -> the prompt running in it
        self.window: int | None = None  # agent.yaml's context_window, first as for agentlaunch's meter
        self.provider = ""

    def load(self) -> None:
        from agentlaunch import paths
        from agentlaunch.definitions.spec import load_agent

        spec = load_agent(self.agents_dir or paths.agents_dir(None), self.agent, paths.state_dir())
        self.window, self.provider = spec.context_window, spec.provider

    def on_connect(self, conn: Client) -> None:
        self.conn = conn

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **kwargs: Any
    ) -> InitializeResponse:
        capabilities = AgentCapabilities(
            load_session=True,
            # text, and files as links or embedded text: all a headless turn takes (no images, no audio)
            prompt_capabilities=PromptCapabilities(image=False, audio=False, embedded_context=True),
            mcp_capabilities=McpCapabilities(http=True, sse=False),
            session_capabilities=SessionCapabilities(
                list=SessionListCapabilities(), resume=SessionResumeCapabilities(), close=SessionCloseCapabilities()
            ),
        )
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=capabilities,
            agent_info=Implementation(name="agentlaunch", title=f"agentlaunch: {self.agent}", version=__version__),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        """Nothing to do: each CLI uses its own login (initialize offers no method); a client that asks anyway is told yes."""
        return AuthenticateResponse()

    async def new_session(
        self, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        session = self.book.new(str(uuid.uuid4()), _folder(cwd), _servers(mcp_servers))
        return NewSessionResponse(session_id=session.acp_id)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, additional_directories: Any = None, **kwargs: Any
    ) -> LoadSessionResponse:
        self._resumed(session_id, cwd, mcp_servers)  # the conversation is not replayed (docs/acp.md)
        return LoadSessionResponse()

    async def resume_session(
        self, session_id: str, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **kwargs: Any
    ) -> ResumeSessionResponse:
        self._resumed(session_id, cwd, mcp_servers)
        return ResumeSessionResponse()

    def _resumed(self, session_id: str, cwd: str, mcp_servers: Any) -> EditorSession:
        try:
            return self.book.resume(session_id, _folder(cwd), _servers(mcp_servers))
        except LookupError as exc:
            raise RequestError.invalid_params({"sessionId": session_id, "message": str(exc)}) from None

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any) -> ListSessionsResponse:
        rows, next_cursor = await asyncio.to_thread(self.book.listed, cwd, cursor, LIST_PAGE)
        sessions = [SessionInfo(session_id=r.acp_id, cwd=r.cwd, title=r.title, updated_at=r.updated_at) for r in rows]
        return ListSessionsResponse(sessions=sessions, next_cursor=next_cursor)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        session = self.book.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"sessionId": session_id, "message": "no such session: session/new or load"})
        if session_id in self.runs:
            raise RequestError.invalid_request(
                {"sessionId": session_id, "message": "a prompt is running in this session: session/cancel it first"}
            )
        text = prompt_text(prompt)
        run = PromptRun(self, session, text)
        self.runs[session_id] = run
        try:
            return await run.run()
        finally:
            self.runs.pop(session_id, None)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        run = self.runs.get(session_id)
        if run is not None:
            run.cancel()

    async def close_session(self, session_id: str, **kwargs: Any) -> None:
        run = self.runs.get(session_id)
        if run is not None:
            run.cancel()
        self.book.forget(session_id)

    async def end_all(self) -> None:
        """The client went away: every running turn ends (its calls stored), no child left."""
        await asyncio.gather(*(run.end() for run in list(self.runs.values())), return_exceptions=True)


def _folder(cwd: str) -> str:
    path = Path(cwd)
    if not path.is_absolute():
        raise RequestError.invalid_params({"cwd": cwd, "message": "cwd must be an absolute path"})
    if not path.is_dir():
        raise RequestError.invalid_params({"cwd": cwd, "message": "cwd is no folder"})
    return str(path)


def _servers(mcp_servers: Any) -> list[dict[str, Any]]:
    """The editor's MCP servers as plain dicts (camelCase, as ACP writes them)."""
    return [s.model_dump(mode="json", by_alias=True, exclude_none=True) for s in mcp_servers or []]


def serve(agent: str, agents_dir: Path | None, templates_dir: Path | None) -> None:
    """Serve ``agent`` on stdin/stdout until the client closes stdin."""
    logging.getLogger("acp").setLevel(logging.CRITICAL)  # what goes wrong is answered to the client
    server = AcpAgent(agent, agents_dir, templates_dir)
    server.load()
    asyncio.run(_serve(server))


async def _serve(agent: AcpAgent) -> None:
    transport = await stdio_transport()
    try:
        await run_agent(cast(Agent, agent), transport, use_unstable_protocol=True)
    finally:
        with contextlib.suppress(Exception):
            await agent.end_all()
