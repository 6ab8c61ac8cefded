"""``agentlaunch mcp``'s server: the team's tools (:mod:`agentlaunch.cli.mcp_tools`) on the official MCP SDK, on stdio.

The only module that imports the ``mcp`` package (about a second of CPU to import): the `mcp` command imports it
when it runs, never `run`, `status` or a launch (``tests/test_import_graph.py``). A tool's
:class:`~agentlaunch.errors.AgentlaunchError` becomes a tool error (``isError``) with its message and its hint;
arguments of the wrong type are refused by the SDK against each tool's schema, as a tool error too.
"""

from __future__ import annotations

import logging
import sys
from typing import Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import Field, ValidationError

from agentlaunch import __version__
from agentlaunch.cli.mcp_tools import Team
from agentlaunch.errors import AgentlaunchError

INSTRUCTIONS = (
    "agentlaunch's team of coding agents (Claude Code, Codex CLI, Gemini CLI, each from one definition) in tmux. "
    "list_agents first; start_agent starts one; send_prompt hands it a prompt and (wait) returns the answer, the "
    "turn's tokens and exact cost in USD, and its state after; an agent that asks a person (state asking) takes "
    "answer_question; usage_report says what the team cost. A refusal says why and what would unblock it."
)

AgentName = Annotated[str, Field(description="The agent's name (its folder in the agents directory).")]
HostName = Annotated[
    str | None,
    Field(description="A host of config.yaml's hosts: (list_agents gives each agent's host); none: this machine."),
]


def build(team: Team) -> MCPServer:
    """The server with the team's eight tools."""
    server: MCPServer = MCPServer(name="agentlaunch", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    _add_fleet_tools(server, team)
    _add_turn_tools(server, team)
    return server


def _run(call: Any, *args: Any) -> dict[str, Any]:
    """``call(*args)``, a refusal of agentlaunch's a tool error saying why and what would unblock it."""
    try:
        result: dict[str, Any] = call(*args)
    except AgentlaunchError as exc:
        hint = exc.hint or "list_agents lists every agent with its state"
        raise ToolError(f"{exc.message}\nwhat would unblock it: {hint}") from None
    return result


def _add_fleet_tools(server: MCPServer, team: Team) -> None:
    """The tools that list, start, stop and restart agents and read one."""

    @server.tool()
    def list_agents() -> dict[str, Any]:
        """Every agent: defined, running or stopped, with its state, provider and model, context in use, cost today
        (USD), and needs_you with why (a question, a stall, a budget pause); this machine's (host null), then each
        host's of config.yaml with its host (a host not reached: one row, state host-unreachable, why)."""
        return _run(team.list_agents)

    @server.tool()
    def start_agent(
        agent: AgentName,
        prompt: Annotated[str | None, Field(description="A first prompt, handed to it once it is up.")] = None,
        worktree: Annotated[bool, Field(description="Run it in its own git worktree (branch agentlaunch/AGENT).")] = False,
        host: HostName = None,
    ) -> dict[str, Any]:
        """Start the agent in its tmux pane (`agentlaunch tmux up AGENT`): left alone when it already runs, started
        again in its session when it was stopped. Waits until it is up."""
        return _run(team.start_agent, agent, prompt, worktree, host)

    @server.tool()
    def agent_status(agent: AgentName, host: HostName = None) -> dict[str, Any]:
        """One agent in full (`agentlaunch fleet --json`'s fields for each of its sessions), its cost today and the
        question it asks now, if any."""
        return _run(team.agent_status, agent, host)

    @server.tool()
    def stop_agent(agent: AgentName, host: HostName = None) -> dict[str, Any]:
        """End the agent's CLI cleanly (`agentlaunch stop`): its conversation stays resumable (restart_agent)."""
        return _run(team.stop_agent, agent, host)

    @server.tool()
    def restart_agent(agent: AgentName, host: HostName = None) -> dict[str, Any]:
        """Bring the agent back in its pane, in the session it ran (`agentlaunch restart`), stopping it first if it runs."""
        return _run(team.restart_agent, agent, host)


def _add_turn_tools(server: MCPServer, team: Team) -> None:
    """The tools that hand a prompt, answer a question and report the usage."""

    @server.tool()
    def send_prompt(
        agent: AgentName,
        prompt: Annotated[str, Field(description="The text, as the model will read it (a leading / or ! is refused).")],
        session: Annotated[str | None, Field(description="Its session (id or unique start) when it runs several.")] = None,
        wait: Annotated[bool, Field(description="Wait for the turn's end and return its answer.")] = True,
        timeout_s: Annotated[float | None, Field(description="With wait: give up after this many seconds.")] = None,
        host: HostName = None,
    ) -> dict[str, Any]:
        """Hand a prompt to a running agent (`agentlaunch send`): taken or refused, never both. With wait, the answer,
        the turn's usage (input, output, cache read, cache write, cost in USD) and the agent's state after."""
        return _run(team.send_prompt, agent, prompt, session, wait, timeout_s, host)

    @server.tool()
    def answer_question(
        agent: AgentName,
        answer: Annotated[
            str, Field(description="allow, always or deny for a permission; for a question, the reply (a choice's label).")
        ],
        host: HostName = None,
    ) -> dict[str, Any]:
        """Answer what the agent's CLI asks now (`agentlaunch answer`), without a key typed in its pane."""
        return _run(team.answer_question, agent, answer, host)

    @server.tool()
    def usage_report(
        by: Annotated[Literal["agent", "day", "model", "session"], Field(description="How to group the calls.")],
        since: Annotated[str | None, Field(description="Only calls since: 7d, 12h, today, or a date (2026-11-01).")] = None,
        host: HostName = None,
    ) -> dict[str, Any]:
        """What the calls cost, grouped (`agentlaunch usage --by BY --json`): tokens by kind, cost in USD, cache hits;
        with host, that host's own usage store's."""
        return _run(team.usage_report, by, since, host)


def serve(team: Team) -> None:
    """Serve the team on stdin/stdout until the client closes stdin."""
    logging.getLogger("mcp").setLevel(logging.WARNING)
    anyio.run(_serve_stdio, build(team))


async def _serve_stdio(server: MCPServer) -> None:
    """``MCPServer.run_stdio_async`` with one change: a line on stdin that is no JSON-RPC message is answered with
    JSON-RPC's parse error (-32700, id null) and said on stderr, where the SDK drops it without a word."""
    lowlevel = server._lowlevel_server  # the SDK's own run_stdio_async reaches it the same way
    async with stdio_server() as (read_stream, write_stream):
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def sift() -> None:
            async with send:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        said = _unreadable(item)
                        sys.stderr.write(f"agentlaunch mcp: a line on stdin is no JSON-RPC message, ignored: {said}\n")
                        sys.stderr.flush()
                        error = ErrorData(code=PARSE_ERROR, message=f"Parse error: {said}")
                        await write_stream.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=None, error=error)))
                        continue
                    await send.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(sift)
            await lowlevel.run(receive, write_stream, lowlevel.create_initialization_options())


def _unreadable(exc: Exception) -> str:
    """What was wrong with a line on stdin, in a few words (never the line itself: it may be long)."""
    kinds = {e.get("type") for e in exc.errors()} if isinstance(exc, ValidationError) else set()
    if "json_invalid" in kinds:
        return "not JSON"
    return "JSON, but no JSON-RPC 2.0 request, notification or response"
