"""The editor's MCP servers (``session/new`` {mcpServers}) reach the real Claude Code and Codex CLI of each turn:
the probe server's tool is in the tools of the model request the fake API captured."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from acp.schema import EnvVariable, McpServerStdio, TextContentBlock

from agentlaunch.fakeapi import responses as cfake
from agentlaunch.fakeapi.anthropic import FakeAnthropic, text_reply
from testbed.agent_files import write_agent
from testbed.clis import ensure_cli
from tests.e2e.test_answer_e2e import claude_team_env
from tests.support import mcp_probe
from tests.support.acp_client import editor

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

PROBE = McpServerStdio(
    name="editor probe",  # a space: every CLI gets a name it takes as a key
    command=sys.executable,
    args=[mcp_probe.__file__],
    env=[EnvVariable(name="PROBE_MARK", value='a "quoted" value')],
)


async def one_prompt(agents_dir: Path, agent: str, workdir: Path, env: dict[str, str]) -> str:
    async with editor(agents_dir, agent, env=env) as (conn, _client, _proc):
        sid = (await conn.new_session(cwd=str(workdir), mcp_servers=[PROBE])).session_id
        done = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[TextContentBlock(type="text", text="hi")]), 180)
        return done.stop_reason


def tool_names(body: dict[str, Any]) -> list[str]:
    return [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)]


def test_claude_code_gets_the_editors_mcp_server(
    anthropic: FakeAnthropic, isolated_home: Path, agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    env = claude_team_env(anthropic, isolated_home, agents_dir, workdir)
    write_agent(
        agents_dir,
        "asker",
        {"provider": "claude", "model": "claude-sonnet-4-5", "command": str(claude_bin), "working_dir": str(workdir)},
    )
    anthropic.push(text_reply("Hello."))
    assert asyncio.run(one_prompt(agents_dir, "asker", workdir, env)) == "end_turn"
    request = anthropic.message_requests()[-1]
    # Claude Code 2.1.332 defers MCP tools: it names them (once the server answered tools/list) in a reminder
    assert "mcp__editor_probe__probe_ping" in request.raw.decode(), tool_names(request.body)


def test_codex_gets_the_editors_mcp_server(isolated_home: Path, agents_dir: Path, workdir: Path) -> None:
    binary = ensure_cli("codex")
    write_agent(
        agents_dir, "coder", {"provider": "codex", "model": "gpt-5.5", "command": str(binary), "working_dir": str(workdir)}
    )
    with cfake.ResponsesFake() as api:
        env = cfake.prepare_codex_home(isolated_home, api.server.url + "/v1", request_max_retries=0, stream_max_retries=0)
        env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
        api.script.push(cfake.TextReply("Hello.", cfake.ResponsesUsage(1000, 0, 4, 0)))
        assert asyncio.run(one_prompt(agents_dir, "coder", workdir, env)) == "end_turn"
        request = api.model_requests[-1]
    # Codex 0.171.0 defers MCP tools behind tool_search: it names the server's namespace in a developer message
    # ("Deferred tool namespaces: - mcp__NAME"), listed once the server started (measured: also without agentlaunch)
    assert "mcp__editor_probe" in request.raw.decode(), tool_names(request.body)
