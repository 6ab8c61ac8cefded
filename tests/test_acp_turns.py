"""``agentlaunch acp`` on the fake provider: tool calls and their permission asked in the editor, budgets, cancel at
each point of a turn, a second prompt while one runs, a missing CLI.

The editor is the ``agent-client-protocol`` SDK's client side; the server is its own process.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from acp import RequestError
from acp.schema import TextContentBlock

from agentlaunch import paths
from agentlaunch.usage.store import Store
from tests.support.acp_client import Editor, editor
from tests.support.cli_runs import run_cli_inprocess
from tests.support.waits import until

RATES = "fake-1: {input: 1000, output: 1000, cache_read: 1000, cache_write: 1000}\n"  # a fake call costs dollars
SLOW = "/tool /slow " + "word " * 60  # a tool call, then a second call streaming for some 7 s


def text(value: str) -> list[TextContentBlock]:
    return [TextContentBlock(type="text", text=value)]


def store_calls(agent: str = "demo") -> dict[str, int]:
    """Each of the agent's sessions in the store with its number of calls."""
    with Store.open(paths.store_path()) as store:
        rows = store.list_sessions(agent)
        costs = store.session_costs([r.session_id for r in rows])
    return {r.session_id: costs.get(r.session_id, (None, 0))[1] for r in rows}


def set_conf(agents_dir: Path, key: str, value: Any, agent: str = "demo") -> None:
    path = agents_dir / agent / "agent.yaml"
    conf = yaml.safe_load(path.read_text())
    conf[key] = value
    path.write_text(yaml.safe_dump(conf))


def processes_in(folder: Path, naming: str | None = None) -> list[int]:
    """Processes whose working directory is ``folder`` (the fake CLI runs there), or whose command line names
    ``naming`` (a turn's ``agentlaunch run`` names its agents folder)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                here = Path(entry / "cwd").resolve() == folder.resolve()
                named = naming is not None and naming.encode() in (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if here or named:
                found.append(int(entry.name))
    return found


@pytest.mark.parametrize("answer", ["once", "always", "deny", None])
def test_a_tool_call_streams_and_its_permission_is_asked_in_the_editor(
    agents_dir: Path, workdir: Path, answer: str | None
) -> None:
    async def go() -> tuple[str, Editor]:
        client = Editor(answer=answer)
        async with editor(agents_dir, client=client) as (conn, client, _proc):
            new = await conn.new_session(cwd=str(workdir), mcp_servers=[])
            done = await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=text("please /tool")), 60)
            return done.stop_reason, client

    stop, client = asyncio.run(go())
    assert stop == "end_turn"
    [asked] = client.asked
    assert asked["options"] == ["once", "always", "deny"]
    assert asked["tool_call"]["title"].startswith("Write")
    [started] = client.of("tool_call")
    assert started["toolCallId"] == asked["tool_call"]["toolCallId"]  # the question names the tool call shown
    assert started["kind"] == "edit" and started["status"] == "in_progress"
    [ended] = client.of("tool_call_update")
    allowed = answer in ("once", "always")
    assert ended["status"] == ("completed" if allowed else "failed")
    assert ("The tool was allowed." if allowed else "The tool was denied.") in client.said()


def test_always_is_remembered_for_the_session(agents_dir: Path, workdir: Path) -> None:
    async def go() -> Editor:
        async with editor(agents_dir, client=Editor(answer="always")) as (conn, client, _proc):
            new = await conn.new_session(cwd=str(workdir), mcp_servers=[])
            for _ in range(2):
                await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=text("again /tool")), 60)
            return client

    client = asyncio.run(go())
    assert len(client.asked) == 1  # the second turn's question was answered from the first answer
    assert client.said().count("The tool was allowed.") == 2


def test_a_spent_budget_refuses_the_prompt_with_its_reason(agents_dir: Path, workdir: Path) -> None:
    (agents_dir / "pricing.yaml").write_text(RATES)
    set_conf(agents_dir, "budget", {"session_usd": 1})

    async def go() -> tuple[list[str], list[str], Editor]:
        async with editor(agents_dir) as (conn, client, _proc):
            new = await conn.new_session(cwd=str(workdir), mcp_servers=[])
            stops, said = [], []
            for prompt in ("hello", "more"):
                before = len(client.said())
                done = await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=text(prompt)), 60)
                stops.append(done.stop_reason)
                said.append(client.said()[before:])
            return stops, said, client

    stops, said, _client = asyncio.run(go())
    assert stops == ["refusal", "refusal"]
    assert "the session budget of agent 'demo' ($1.00) is spent" in said[0]  # the call that crossed it
    assert "not starting" in said[1]  # refused before any call
    assert list(store_calls().values()) == [1]  # the second prompt made no call


def test_cancel_interrupts_the_turn_and_the_calls_so_far_are_stored(agents_dir: Path, workdir: Path) -> None:
    async def go() -> tuple[list[str], Editor]:
        async with editor(agents_dir) as (conn, client, _proc):
            new = await conn.new_session(cwd=str(workdir), mcp_servers=[])
            sid = new.session_id
            await conn.cancel(session_id=sid)  # before any turn: nothing to cancel
            running = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=text(SLOW)))
            await until(lambda: client.of("tool_call_update") and "word" in client.said())
            status = json.loads(run_cli_inprocess("status", "--json").stdout)
            assert [(a["agent"], a["state"]) for a in status] == [("demo", "thinking")]  # a running agent, as any launch
            with pytest.raises(RequestError) as second:  # a second prompt while one runs
                await conn.prompt(session_id=sid, prompt=text("me too"))
            assert "session/cancel" in str(second.value.data)
            started = time.monotonic()
            await conn.cancel(session_id=sid)
            cut = await asyncio.wait_for(running, 30)
            assert time.monotonic() - started < 10
            await conn.cancel(session_id=sid)  # after the turn: nothing to cancel
            after = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=text("go on")), 60)
            return [cut.stop_reason, after.stop_reason], client

    stops, client = asyncio.run(go())
    assert stops == ["cancelled", "end_turn"]
    [(sid, calls)] = store_calls().items()
    assert calls >= 3  # the tool's call, the cut one, the next turn's
    assert len(client.of("usage_update")) == calls  # the cut call's usage_update too
    assert not processes_in(workdir, f"--working-dir\0{workdir}")  # neither the CLI nor the turn's run


def test_a_missing_cli_is_an_error_naming_it(agents_dir: Path, workdir: Path) -> None:
    set_conf(agents_dir, "command", str(workdir / "no-such-cli"))

    async def go() -> RequestError:
        async with editor(agents_dir) as (conn, _client, _proc):
            new = await conn.new_session(cwd=str(workdir), mcp_servers=[])
            with pytest.raises(RequestError) as failed:
                await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=text("hello")), 60)
            return failed.value

    error = asyncio.run(go())
    assert error.data == {"exitCode": 127}
    assert "no-such-cli" in str(error)


def test_run_refuses_an_ask_fd_that_is_not_open(agents_dir: Path) -> None:
    done = run_cli_inprocess("run", "demo", "hello", "--ask-fd", "987", "--agents-dir", str(agents_dir))
    assert done.returncode == 2 and b"--ask-fd 987" in done.stderr
