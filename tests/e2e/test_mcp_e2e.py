"""`agentlaunch mcp` with the real Claude Code as the supervisor, and a real Claude Code agent asking a permission.

The agent runs in a private tmux server against one fake Anthropic API; the supervisor is `claude -p` with
`--mcp-config` naming `agentlaunch mcp`, against another (two queues: the agent's next call and the supervisor's
would race for one). The supervisor's model calls `mcp__agentlaunch__list_agents`, then
`mcp__agentlaunch__answer_question`: its fake API's request log holds what our server returned, and the agent's
tool ran with nothing pressed in its pane. One agent launch, one supervisor run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.fakeapi.anthropic import FakeAnthropic, text_reply, tool_reply
from testbed.agent_files import write_agent
from tests.e2e.test_answer_e2e import claude_team_env, cli, state_of
from tests.support.required import need
from tests.support.waits import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

need("tmux")

TOOLS = ("mcp__agentlaunch__list_agents", "mcp__agentlaunch__answer_question")


def tool_results(api: FakeAnthropic) -> list[Any]:
    """Each tool result the supervisor's model was sent, parsed (the last request carries the whole conversation)."""
    found = []
    for message in api.message_requests()[-1].body.get("messages", []):
        for part in message.get("content") if isinstance(message.get("content"), list) else []:
            if isinstance(part, dict) and part.get("type") == "tool_result":
                content = part.get("content")
                said = content if isinstance(content, str) else "".join(c.get("text", "") for c in content or [])
                found.append(json.loads(said))
    return found


def test_claude_code_as_supervisor_lists_the_team_and_answers_an_agents_permission_over_mcp(
    socket: str, anthropic: FakeAnthropic, isolated_home: Path, agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    env = claude_team_env(anthropic, isolated_home, agents_dir, workdir)
    agent: dict[str, object] = {"provider": "claude", "model": "claude-sonnet-4-5", "command": str(claude_bin)}
    agent["working_dir"] = str(workdir)
    write_agent(agents_dir, "asker", agent)
    anthropic.push(
        text_reply("Ready."),
        tool_reply("Bash", {"command": "touch allowed.txt", "description": "make a file"}, text="Making."),
        text_reply("Made it."),
    )
    assert cli(env, workdir, "tmux", "up", "asker", "--socket", socket, "--no-attach", "--wait", "60").returncode == 0
    wait_for(lambda: state_of(env, workdir, "asker") == "waiting", timeout=60, what="the startup turn over")
    assert cli(env, workdir, "send", "asker", "Make the file").returncode == 0
    wait_for(lambda: state_of(env, workdir, "asker") == "asking", timeout=60, what="the permission dialog")

    supervisor = FakeAnthropic()
    supervisor.push(
        tool_reply(TOOLS[0], {}, text="Who is on the team?"),
        tool_reply(TOOLS[1], {"agent": "asker", "answer": "allow"}, text="Letting it."),
        text_reply("Done."),
    )
    server = [sys.executable, "-m", "agentlaunch", "mcp", "--socket", socket, "--agents-dir", str(agents_dir)]
    config = workdir.parent / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"agentlaunch": {"command": server[0], "args": server[1:]}}}))
    with supervisor.serve() as served:
        boss_env = {**os.environ, **env, "ANTHROPIC_BASE_URL": served.url}
        argv = [str(claude_bin), "-p", "Run the team.", "--mcp-config", str(config), "--strict-mcp-config"]
        ran = subprocess.run(
            [*argv, "--allowedTools", ",".join(TOOLS), "--output-format", "json"],
            env=boss_env,
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert ran.returncode == 0 and json.loads(ran.stdout)["result"] == "Done.", (ran.stdout, ran.stderr)
    listed, answered = tool_results(supervisor)
    asker = next(a for a in listed["agents"] if a["agent"] == "asker")
    assert asker["state"] == "asking" and asker["needs_you"] is True and asker["provider"] == "claude", asker
    assert answered["decision"] == "once" and answered["question"]["tool"] == "Bash", answered
    assert "touch allowed.txt" in answered["question"]["asks"]
    wait_for(lambda: (workdir / "allowed.txt").exists(), timeout=60, what="the allowed tool ran")  # no key pressed
    wait_for(lambda: state_of(env, workdir, "asker") == "waiting", timeout=60, what="the agent's turn over")
