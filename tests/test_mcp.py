"""`agentlaunch mcp` driven by the official MCP SDK's client (ClientSession over stdio) as a separate process: a
supervisor's sequence on fake-provider agents in a private tmux server, and every kind of bad input.

The real Claude Code as the supervisor, and answer_question on a real Claude agent: tests/e2e/test_mcp_e2e.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult

from agentlaunch import paths
from agentlaunch.launch.control import ControlServer
from agentlaunch.usage.store import Store
from tests.support.control_socket import server, state_dir, take_one, write_record

__all__ = ["server"]  # the fixture, used by name

PRICES = "fake-1: {input: 3, output: 15, cache_read: 0.3, cache_write: 3.75}\n"


@asynccontextmanager
async def mcp_client(*args: str, cwd: Path) -> AsyncIterator[ClientSession]:
    """`agentlaunch mcp ARGS` as a subprocess (this test's HOME and state), and the SDK's session with it."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "agentlaunch", "mcp", *args], env=dict(os.environ), cwd=str(cwd)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def text(result: CallToolResult) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def data(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text(result)
    found: dict[str, Any] | None = result.structured_content
    assert found is not None
    return found


def drive(script: Callable[[ClientSession], Awaitable[None]], *args: str, cwd: Path) -> None:
    async def main() -> None:
        async with mcp_client(*args, cwd=cwd) as session:
            await script(session)

    asyncio.run(main())


def test_a_supervisor_lists_starts_sends_to_two_and_reads_the_usage_stop_and_restart(
    socket: str, agents_dir: Path, workdir: Path
) -> None:
    for name in ("helper", "spender"):
        shutil.copytree(agents_dir / "demo", agents_dir / name)
    with (agents_dir / "spender" / "agent.yaml").open("a") as f:
        f.write("budget: {session_tokens: 1}\n")  # spent by its first call: the launch stops it (exit 6)
    (agents_dir / "pricing.yaml").write_text(PRICES)

    async def script(s: ClientSession) -> None:
        tools = {t.name for t in (await s.list_tools()).tools}
        assert tools == {
            "list_agents",
            "start_agent",
            "send_prompt",
            "agent_status",
            "stop_agent",
            "restart_agent",
            "answer_question",
            "usage_report",
        }
        listed = data(await s.call_tool("list_agents", {}))["agents"]
        assert {a["agent"]: a["state"] for a in listed}["demo"] == "not-running"
        for name in ("demo", "helper"):
            started = data(await s.call_tool("start_agent", {"agent": name}))
            assert started["started"] is True and started["state"] == "waiting", started
        sent = await asyncio.gather(
            *(s.call_tool("send_prompt", {"agent": n, "prompt": f"hello {n}"}) for n in ("demo", "helper"))
        )
        turns = {n: data(r) for n, r in zip(("demo", "helper"), sent, strict=True)}
        with Store.open(paths.store_path()) as store:
            for name, turn in turns.items():
                assert f'You said: "hello {name}"' in turn["answer"] and turn["state"] == "waiting", turn
                (call,) = store.calls_for_session(turn["session_id"])
                u = call.usage
                assert turn["usage"]["input"] == u.input and turn["usage"]["output"] == u.output
                assert turn["usage"]["cache_read"] == u.cache_read and turn["usage"]["cache_write"] == u.cache_write
                assert turn["usage"]["cost_usd"] == call.cost_usd and call.cost_usd is not None and call.cost_usd > 0
        rows = {r["agent"]: r for r in data(await s.call_tool("usage_report", {"by": "agent"}))["rows"]}
        for name, turn in turns.items():
            assert rows[name]["calls"] == 1 and rows[name]["cost_usd"] == turn["usage"]["cost_usd"]
        listed = {a["agent"]: a for a in data(await s.call_tool("list_agents", {}))["agents"]}
        assert listed["demo"]["running"] and listed["demo"]["cost_today_usd"] == turns["demo"]["usage"]["cost_usd"]
        status = data(await s.call_tool("agent_status", {"agent": "helper"}))
        assert [x["state"] for x in status["sessions"]] == ["waiting"] and status["question"] is None

        # A spent budget: the turn's tool error says so and how to go on.
        assert data(await s.call_tool("start_agent", {"agent": "spender"}))["started"]
        spent = await s.call_tool("send_prompt", {"agent": "spender", "prompt": "spend"})
        assert spent.is_error and "budget: stopped the agent" in text(spent), text(spent)
        assert "raise its budget" in text(spent) and "restart_agent" in text(spent)

        # stop, a prompt to the stopped agent, restart in the same session.
        stopped = data(await s.call_tool("stop_agent", {"agent": "demo"}))
        assert stopped["stopped"] and stopped["session_id"] == turns["demo"]["session_id"]
        refused = await s.call_tool("send_prompt", {"agent": "demo", "prompt": "are you there?"})
        assert refused.is_error and "stopped" in text(refused) and "restart" in text(refused), text(refused)
        assert data(await s.call_tool("restart_agent", {"agent": "demo"}))["state"] == "waiting"
        again = data(await s.call_tool("send_prompt", {"agent": "demo", "prompt": "back", "timeout_s": 60}))
        assert again["session_id"] == turns["demo"]["session_id"] and "turn 2" in again["answer"], again
        more = data(await s.call_tool("start_agent", {"agent": "demo", "prompt": "and once more"}))
        assert more["already_running"] and more["prompt_sent"] and more["session_id"] == again["session_id"], more

    drive(script, "--socket", socket, "--agents-dir", str(agents_dir), cwd=workdir)


def test_bad_calls_are_tool_errors_that_say_why_and_the_server_goes_on(
    server: ControlServer, agents_dir: Path, workdir: Path
) -> None:
    """One server for every refusal; a refused text and an asking agent come from a stand-in session (its socket
    served here, playing the launch's part, as tests/test_send_command.py does)."""
    write_record(state_dir(), "scribe", control=str(server.path))
    (agents_dir / "scribe").mkdir()
    (agents_dir / "scribe" / "agent.yaml").write_text((agents_dir / "demo" / "agent.yaml").read_text())

    async def script(s: ClientSession) -> None:
        unknown = await s.call_tool("delete_everything", {})
        assert unknown.is_error and "Unknown tool: delete_everything" in text(unknown)
        for name, args, said in (
            ("send_prompt", {"agent": 5, "prompt": "x"}, "agent\n  Input should be a valid string"),
            ("send_prompt", {"agent": "demo"}, "prompt\n  Field required"),
            ("send_prompt", {"agent": "demo", "prompt": "x", "timeout_s": "soon"}, "timeout_s"),
            ("usage_report", {"by": "week"}, "Input should be 'agent', 'day', 'model' or 'session'"),
            ("usage_report", {"by": "day", "since": "last year"}, "--since"),
            ("send_prompt", {"agent": "demo", "prompt": "x", "timeout_s": -1}, "timeout_s must be a positive number"),
            ("send_prompt", {"agent": "demo", "prompt": "  "}, "prompt"),
            ("send_prompt", {"agent": "nobody", "prompt": "x"}, "agent 'nobody' not found (agents here: demo"),
            ("agent_status", {"agent": "nobody"}, "agent 'nobody' not found"),
            ("start_agent", {"agent": "../etc"}, "not allowed"),
            ("start_agent", {"agent": "demo", "prompt": "ring\x07"}, "prompt: "),
            ("send_prompt", {"agent": "demo", "prompt": "hi"}, "demo is not running"),
            ("answer_question", {"agent": "demo", "answer": "allow"}, "demo is not running"),
        ):
            result = await s.call_tool(name, args)
            assert result.is_error and said in text(result), (name, args, text(result))
        assert data(await s.call_tool("usage_report", {"by": "day", "since": "7d"}))["rows"] == []

        slash, _ = await asyncio.gather(
            s.call_tool("send_prompt", {"agent": "scribe", "prompt": "/compact"}),
            asyncio.to_thread(lambda: take_one(server).refuse("claude runs it as a slash command", "waiting", bad_input=True)),
        )
        assert slash.is_error and "claude runs it as a slash command" in text(slash), text(slash)
        asking, _ = await asyncio.gather(
            s.call_tool("send_prompt", {"agent": "scribe", "prompt": "next"}),
            asyncio.to_thread(lambda: take_one(server).refuse("scribe is asking: a permission waits", "asking")),
        )
        assert asking.is_error and "scribe is asking" in text(asking) and "answer_question" in text(asking)
        assert server.take() == []  # refused, never typed later

    drive(script, "--agents-dir", str(agents_dir), cwd=workdir)


def test_a_line_that_is_no_json_rpc_gets_a_parse_error_and_the_server_goes_on(workdir: Path) -> None:
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    lines = [
        "this is not json",
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        '{"jsonrpc": "2.0", "id": 2, "method": "tools/list"',  # cut short
        "[1, 2]",
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "no/such"}),
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentlaunch", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=workdir,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(f"{line}\n" for line in lines).encode())
    proc.stdin.flush()
    replies: list[dict[str, Any]] = []
    while len(replies) < 6:  # three parse errors, initialize, no/such, tools/list
        replies.append(json.loads(proc.stdout.readline()))
    proc.stdin.close()  # the client goes: the server ends cleanly
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert proc.wait(timeout=60) == 0
    parse = [r for r in replies if r.get("id") is None]
    assert [r["error"]["code"] for r in parse] == [-32700] * 3
    assert "not JSON" in parse[0]["error"]["message"] and "no JSON-RPC 2.0" in parse[2]["error"]["message"]
    by_id = {r["id"]: r for r in replies if r.get("id") is not None}
    assert by_id[1]["result"]["serverInfo"]["name"] == "agentlaunch"
    assert by_id[3]["error"]["code"] == -32601
    assert len(by_id[4]["result"]["tools"]) == 8
    assert err.count("a line on stdin is no JSON-RPC message, ignored") == 3 and "Traceback" not in err, err
