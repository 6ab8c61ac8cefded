"""`agentlaunch mcp`: the team as MCP tools, for a supervisor agent (Claude Code, Codex, Gemini) or any MCP client."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from agentlaunch.cli.common import AgentsDirOpt, TemplatesOpt, app, err
from agentlaunch.cli.tmux import SocketOpt
from agentlaunch.live.tmux import DEFAULT_SESSION

McpSessionOpt = Annotated[
    str,
    typer.Option(
        "--session",
        "-s",
        envvar="AGENTLAUNCH_TMUX_SESSION",
        help="The tmux session start_agent starts agents in (letters, digits, _ and -).",
    ),
]


@app.command("mcp")
def mcp_command(
    socket: SocketOpt = None,
    session: McpSessionOpt = DEFAULT_SESSION,
    agents_dir: AgentsDirOpt = None,
    templates_dir: TemplatesOpt = None,
) -> None:
    """Serve the team as MCP tools on stdin/stdout, for a supervisor agent or any MCP client (docs/mcp.md).

    The tools: list_agents; start_agent {agent, prompt?, worktree?}; send_prompt {agent, prompt,
    session?, wait=true, timeout_s?} (the answer, the turn's tokens and cost in USD, the state
    after); agent_status {agent}; stop_agent {agent}; restart_agent {agent}; answer_question
    {agent, answer}; usage_report {by: agent|day|model|session, since?}. Each does what the
    command of the same job does (tmux up, send --wait, stop, restart, answer, usage) on the
    tmux server of --socket, with its rules: a refusal (an unknown agent, a prompt starting
    with / or !, an agent asking a person, paused or stopped by its budget) is a tool error
    saying why and what would unblock it.

    The client starts it; a person does not run it at a terminal. Add it to Claude Code:

        claude mcp add agentlaunch -- agentlaunch mcp

    Codex: [mcp_servers.agentlaunch] command = "agentlaunch", args = ["mcp"] in
    ~/.codex/config.toml; Gemini CLI: "mcpServers": {"agentlaunch": {"command": "agentlaunch",
    "args": ["mcp"]}} in settings.json. It ends when the client closes its stdin (exit 0).

    Example: claude mcp add agentlaunch -- agentlaunch mcp --socket team --agents-dir ~/agents
    """
    from agentlaunch.cli.mcp_server import serve  # the MCP SDK: imported by this command only
    from agentlaunch.cli.mcp_tools import Team
    from agentlaunch.definitions.spec import check_name
    from agentlaunch.errors import UsageError

    if (problem := check_name(session, "tmux session")) is not None:
        raise UsageError(f"--session: {problem}")
    if sys.stdin.isatty():  # a person, not a client: say what this is and how it ends
        err.print(
            "agentlaunch mcp: an MCP server on stdin/stdout, for a client to start (docs/mcp.md: "
            "claude mcp add agentlaunch -- agentlaunch mcp); Ctrl-D ends it",
            highlight=False,
            soft_wrap=True,
        )
    serve(Team(socket=socket, tmux_session=session, agents_dir=agents_dir, templates_dir=templates_dir))
