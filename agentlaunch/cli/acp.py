"""`agentlaunch acp AGENT`: one agent definition as an Agent Client Protocol agent, for an editor (Zed, JetBrains, neovim)."""

from __future__ import annotations

import sys

from agentlaunch.cli.common import AgentArg, AgentsDirOpt, TemplatesOpt, app, err


@app.command("acp")
def acp_command(agent: AgentArg, agents_dir: AgentsDirOpt = None, templates_dir: TemplatesOpt = None) -> None:
    """Serve AGENT to an editor over the Agent Client Protocol on stdin/stdout (docs/acp.md).

    Each prompt is one headless turn of AGENT's definition in the editor's folder (the
    instructions delivered as always, the startup message on a new session only, later
    prompts resuming it): the answer and tool calls stream to the editor, and after every
    model call a usage_update with the context in use and the session's exact cost in USD.
    Claude Code's permission questions are asked in the editor. A spent budget refuses the
    prompt (stop reason refusal, the reason said). session/cancel interrupts the turn;
    session/list, session/load and session/resume reach AGENT's sessions in the usage store.
    Every call is stored, and the session is in `status` and the deck while a turn runs.

    The editor starts it; a person does not run it at a terminal. Zed's settings.json:

        "agent_servers": {"reviewer": {"command": "agentlaunch", "args": ["acp", "reviewer"]}}

    It ends when the editor closes its stdin (exit 0); a turn still running then is ended first.

    Example: agentlaunch acp reviewer --agents-dir ~/agents
    """
    from agentlaunch import paths
    from agentlaunch.definitions.spec import check_name, load_agent
    from agentlaunch.errors import UsageError

    if (problem := check_name(agent, "agent")) is not None:
        raise UsageError(f"acp: {problem}")
    folder = paths.agents_dir(agents_dir).resolve()  # every turn reads the same folder, wherever it runs
    load_agent(folder, agent, paths.state_dir())  # no such agent, or a broken definition: exit 3 before serving
    if sys.stdin.isatty():  # a person, not an editor: say what this is and how it ends
        err.print(
            "agentlaunch acp: an Agent Client Protocol agent on stdin/stdout, for an editor to start (docs/acp.md); "
            "Ctrl-D ends it",
            highlight=False,
            soft_wrap=True,
        )
    from agentlaunch.cli.acp_server import serve  # the ACP SDK: imported by this command only

    serve(agent, folder, templates_dir.resolve() if templates_dir else None)
