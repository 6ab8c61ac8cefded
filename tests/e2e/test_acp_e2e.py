"""`agentlaunch acp` driven by an editor (the ``agent-client-protocol`` SDK's client side), on the real Claude Code,
Codex CLI and Gemini CLI against the fake APIs: a new session, a prompt with a tool call (and, for Claude Code, its
permission asked in the editor), usage_update matching the store, a cancelled turn, and the session resumed by a second
server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp.schema import TextContentBlock

from agentlaunch import paths
from agentlaunch.fakeapi import gemini as gfake
from agentlaunch.fakeapi import responses as cfake
from agentlaunch.fakeapi.anthropic import FakeAnthropic, text_reply, tool_reply
from agentlaunch.usage.store import Store
from testbed.agent_files import write_agent
from testbed.clis import ensure_cli
from tests.e2e.test_answer_e2e import claude_team_env
from tests.support.acp_client import Editor, editor
from tests.support.gemini_process import one_gemini_process
from tests.support.waits import until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


def text(value: str) -> list[TextContentBlock]:
    return [TextContentBlock(type="text", text=value)]


def stored(agent: str) -> tuple[str, float | None, int]:
    with Store.open(paths.store_path()) as store:
        rows = store.list_sessions(agent)
        assert len(rows) == 1, [(r.session_id, r.turns, r.title) for r in rows]
        [row] = rows
        cost, calls = store.session_costs([row.session_id]).get(row.session_id, (None, 0))
    return row.session_id, cost, calls


async def editor_session(
    agents_dir: Path,
    agent: str,
    workdir: Path,
    env: dict[str, str],
    first: str,
    slow: Callable[[], Any],
    api_calls: Callable[[], int],
) -> dict[str, Any]:
    """Server one: new, a prompt with a tool call, a cancelled prompt. Server two: load the session, one more prompt."""
    got: dict[str, Any] = {}
    async with editor(agents_dir, agent, Editor(answer="once"), env) as (conn, client, _proc):
        sid = (await conn.new_session(cwd=str(workdir), mcp_servers=[])).session_id
        done = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=text(first)), 180)
        got["first"] = (done.stop_reason, list(client.updates), list(client.asked), stored(agent))
        before = api_calls()
        slow()
        running = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=text("Take your time.")))
        await until(lambda: api_calls() > before, timeout=60)  # the turn's call is under way
        await asyncio.sleep(1.0)
        await conn.cancel(session_id=sid)
        got["cancelled"] = ((await asyncio.wait_for(running, 60)).stop_reason, stored(agent))
    async with editor(agents_dir, agent, Editor(answer="once"), env) as (conn, client, _proc):
        await conn.load_session(session_id=sid, cwd=str(workdir), mcp_servers=[])
        done = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=text("Are you back?")), 180)
        got["resumed"] = (done.stop_reason, client.said(sid), stored(agent))
    return got


def check_first(got: tuple[str, list[tuple[str, dict[str, Any]]], list[dict[str, Any]], tuple[str, float | None, int]]) -> None:
    stop, updates, _asked, (_sid, cost, calls) = got
    assert stop == "end_turn"
    kinds = [u["sessionUpdate"] for _, u in updates]
    assert "tool_call" in kinds and "tool_call_update" in kinds
    [ended] = [u for _, u in updates if u["sessionUpdate"] == "tool_call_update"]
    assert ended["status"] == "completed", ended
    usage = [u for _, u in updates if u["sessionUpdate"] == "usage_update"]
    assert calls == 2 and len(usage) >= calls, usage  # one after each call (Claude Code may correct one: two)
    assert cost is not None and usage[-1]["cost"] == {"amount": cost, "currency": "USD"}
    assert all(0 < u["used"] <= u["size"] for u in usage)


def test_claude_code_in_an_editor_tool_permission_usage_cancel_resume(
    anthropic: FakeAnthropic, isolated_home: Path, agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    env = claude_team_env(anthropic, isolated_home, agents_dir, workdir)
    write_agent(
        agents_dir,
        "asker",
        {"provider": "claude", "model": "claude-sonnet-4-5", "command": str(claude_bin), "working_dir": str(workdir)},
    )
    anthropic.push(
        tool_reply("Bash", {"command": "touch allowed.txt", "description": "make a file"}, text="Making."),
        text_reply("Made it."),
    )

    def slow() -> None:
        anthropic.push(text_reply("slowly " * 60, delay=0.3), text_reply("Back."))

    got = asyncio.run(
        editor_session(agents_dir, "asker", workdir, env, "Make the file.", slow, lambda: len(anthropic.message_requests()))
    )
    check_first(got["first"])
    asked = got["first"][2]
    assert len(asked) == 1 and asked[0]["tool_call"]["title"].startswith("Bash"), asked
    assert (workdir / "allowed.txt").exists()  # allowed in the editor: no key typed anywhere
    stop, (sid, _cost, calls) = got["cancelled"]
    assert stop == "cancelled" and calls == 3  # the cut call is stored
    stop, said, (again, _cost, calls) = got["resumed"]
    assert stop == "end_turn" and "Back." in said and again == sid and calls == 4
    last = anthropic.message_requests()[-1].body
    assert "Made it." in json.dumps(last["messages"])  # the conversation resumed


def test_codex_in_an_editor_tool_usage_cancel_resume(isolated_home: Path, agents_dir: Path, workdir: Path) -> None:
    binary = ensure_cli("codex")
    (workdir / "hello.txt").write_text("hello\n")
    write_agent(
        agents_dir,
        "coder",
        {"provider": "codex", "model": "gpt-5.5", "command": str(binary), "working_dir": str(workdir), "startup": "Hi."},
    )
    with cfake.ResponsesFake() as api:
        env = cfake.prepare_codex_home(isolated_home, api.server.url + "/v1", request_max_retries=0, stream_max_retries=0)
        env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
        api.script.push(
            cfake.ShellCallReply("cat hello.txt", cfake.ResponsesUsage(1000, 0, 20, 5)),
            cfake.TextReply("done", cfake.ResponsesUsage(1200, 1000, 4, 0)),
        )

        def slow() -> None:
            api.script.push(cfake.TextReply("late", cfake.ResponsesUsage(1300, 1000, 4, 0), stall=30))
            api.script.push(cfake.TextReply("Back.", cfake.ResponsesUsage(1400, 1000, 4, 0)))

        got = asyncio.run(
            editor_session(agents_dir, "coder", workdir, env, "Read hello.txt.", slow, lambda: len(api.model_requests))
        )
        last = api.model_requests[-1]
    check_first(got["first"])
    assert got["first"][2] == []  # codex exec asks nothing: its sandbox decides
    stop, (sid, _cost, _calls) = got["cancelled"]
    assert stop == "cancelled"
    stop, said, (again, _cost, _calls) = got["resumed"]
    assert stop == "end_turn" and "Back." in said and again == sid
    assert any("Read hello.txt." in t for t in cfake.user_texts(last.body))  # the conversation resumed


def test_gemini_in_an_editor_tool_usage_cancel_resume(
    request: pytest.FixtureRequest, isolated_home: Path, agents_dir: Path, workdir: Path
) -> None:
    binary = ensure_cli("gemini")
    (workdir / "hello.txt").write_text("hello\n")
    agent = {"provider": "gemini", "model": "gemini-2.5-pro", "command": str(binary), "working_dir": str(workdir)}
    write_agent(agents_dir, "helper", agent)
    with gfake.GeminiFake() as api:
        env = gfake.prepare_gemini_home(isolated_home, api.base_url, max_attempts=1, no_relaunch=one_gemini_process(request))
        env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
        api.script.push(
            gfake.FunctionCallReply("read_file", {"file_path": "hello.txt"}, gfake.GeminiUsage(1000, 20, 0, 5)),
            gfake.TextReply("done", gfake.GeminiUsage(1200, 4, 1000, 0)),
        )

        def slow() -> None:
            api.script.push(gfake.TextReply("late", gfake.GeminiUsage(1300, 4, 1000, 0), stall=30))
            api.script.push(gfake.TextReply("Back.", gfake.GeminiUsage(1400, 4, 1000, 0)))

        calls = lambda: len(api.model_requests)  # noqa: E731
        got = asyncio.run(editor_session(agents_dir, "helper", workdir, env, "Read hello.txt.", slow, calls))
        last = api.model_requests[-1]
    check_first(got["first"])
    assert got["first"][2] == []  # a headless gemini asks nothing
    stop, (sid, _cost, _calls) = got["cancelled"]
    assert stop == "cancelled"
    stop, said, (again, _cost, _calls) = got["resumed"]
    assert stop == "end_turn" and "Back." in said and again == sid
    assert any("Read hello.txt." in t for t in gfake.user_texts(last.body))  # the conversation resumed


def test_claude_codes_thinking_reaches_the_editor_as_thought_chunks(
    anthropic: FakeAnthropic, isolated_home: Path, agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    env = claude_team_env(anthropic, isolated_home, agents_dir, workdir)
    agent = {"provider": "claude", "model": "claude-sonnet-4-5", "command": str(claude_bin), "working_dir": str(workdir)}
    write_agent(agents_dir, "thinker", agent)
    anthropic.push(text_reply("The answer is 4.", thinking="Two plus two, carefully: four."))

    async def go() -> tuple[str, Editor]:
        async with editor(agents_dir, "thinker", env=env) as (conn, client, _proc):
            sid = (await conn.new_session(cwd=str(workdir), mcp_servers=[])).session_id
            done = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=text("What is 2+2?")), 180)
            return done.stop_reason, client

    stop, client = asyncio.run(go())
    assert stop == "end_turn"
    thought = "".join(u["content"]["text"] for u in client.of("agent_thought_chunk"))
    assert thought == "Two plus two, carefully: four."
    assert "The answer is 4." in client.said() and "carefully" not in client.said()


def test_codexs_reasoning_summary_reaches_the_editor_as_thought_chunks(
    isolated_home: Path, agents_dir: Path, workdir: Path
) -> None:
    binary = ensure_cli("codex")
    write_agent(
        agents_dir, "coder", {"provider": "codex", "model": "gpt-5.5", "command": str(binary), "working_dir": str(workdir)}
    )
    with cfake.ResponsesFake() as api:
        env = cfake.prepare_codex_home(isolated_home, api.server.url + "/v1", request_max_retries=0, stream_max_retries=0)
        env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
        api.script.push(cfake.TextReply("Four.", cfake.ResponsesUsage(1000, 0, 4, 2), thinking="Adding two and two."))

        async def go() -> tuple[str, Editor]:
            async with editor(agents_dir, "coder", env=env) as (conn, client, _proc):
                sid = (await conn.new_session(cwd=str(workdir), mcp_servers=[])).session_id
                done = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=text("What is 2+2?")), 180)
                return done.stop_reason, client

        stop, client = asyncio.run(go())
    assert stop == "end_turn"
    assert "".join(u["content"]["text"] for u in client.of("agent_thought_chunk")) == "Adding two and two."
    assert "Four." in client.said() and "Adding" not in client.said()
