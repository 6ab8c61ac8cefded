"""``agentlaunch acp``: an editor (the ``agent-client-protocol`` SDK's client side) drives the offline fake provider.

The server is its own process (``python -m agentlaunch acp demo``); each prompt is a headless turn in a child of it.
What the editor sees is checked against the usage store, which every call lands in as for any launch.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import TextContentBlock

from agentlaunch import paths
from agentlaunch.usage.store import Store
from tests.support.acp_client import editor


def text(value: str) -> list[TextContentBlock]:
    return [TextContentBlock(type="text", text=value)]


def stored(session_id: str) -> tuple[float | None, int]:
    with Store.open(paths.store_path()) as store:
        return store.session_costs([session_id]).get(session_id, (None, 0))


def store_sessions(agent: str = "demo") -> list[Any]:
    with Store.open(paths.store_path()) as store:
        return store.list_sessions(agent)


async def _new_prompt_resume(agents_dir: Path, workdir: Path) -> dict[str, Any]:
    async with editor(agents_dir) as (conn, client, _proc):
        new = await conn.new_session(cwd=str(workdir), mcp_servers=[])
        first = await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=text("hello there")), 60)
        said_first = client.said(new.session_id)
        second = await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=text("and again")), 60)
        return {
            "sid": new.session_id,
            "stops": (first.stop_reason, second.stop_reason),
            "first": said_first,
            "all": client.said(new.session_id),
            "usage": client.of("usage_update", new.session_id),
        }


@pytest.fixture
def priced(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake model priced (USD per million tokens), in this process and the server's."""
    monkeypatch.setenv("AGENTLAUNCH_PRICE_INPUT", "3")
    monkeypatch.setenv("AGENTLAUNCH_PRICE_OUTPUT", "15")


def test_a_prompt_is_a_headless_turn_its_usage_the_stores_and_the_next_prompt_resumes(
    agents_dir: Path, workdir: Path, priced: None
) -> None:
    got = asyncio.run(_new_prompt_resume(agents_dir, workdir))
    assert got["stops"] == ("end_turn", "end_turn")
    assert "Fake provider here, turn 1." in got["first"]
    assert "Startup message received" in got["first"]  # the startup message: on the new session's first turn only
    later = got["all"][len(got["first"]) :]
    assert "turn 2" in later and "Startup message received" not in later  # the same session, resumed
    rows = store_sessions()
    assert len(rows) == 1 and rows[0].turns == 2 and Path(rows[0].working_dir) == workdir
    cost, calls = stored(rows[0].session_id)
    usage = got["usage"]
    assert len(usage) == calls >= 2  # one usage_update after each model call
    assert usage[-1]["cost"] == {"amount": cost, "currency": "USD"}  # the session's cost, exactly as stored
    assert all(u["size"] == 60000 for u in usage)  # the demo's context_window
    assert all(0 < u["used"] <= u["size"] for u in usage)
    assert [u["cost"]["amount"] for u in usage] == sorted(u["cost"]["amount"] for u in usage)  # cumulative


async def _later_process(agents_dir: Path, workdir: Path, acp_id: str) -> dict[str, Any]:
    """A second server (the editor restarted): list, load the editor's own id, prompt; resume the store's id."""
    async with editor(agents_dir) as (conn, client, _proc):
        listed = await conn.list_sessions(cwd=str(workdir))
        elsewhere = await conn.list_sessions(cwd=str(workdir.parent))
        await conn.load_session(session_id=acp_id, cwd=str(workdir), mcp_servers=[])
        loaded = await asyncio.wait_for(conn.prompt(session_id=acp_id, prompt=text("after load")), 60)
        store_id = listed.sessions[0].session_id
        await conn.resume_session(session_id=store_id, cwd=str(workdir), mcp_servers=[])
        resumed = await asyncio.wait_for(conn.prompt(session_id=store_id, prompt=text("after resume")), 60)
        with pytest.raises(RequestError) as unknown:
            await conn.load_session(session_id="0000-no-such", cwd=str(workdir), mcp_servers=[])
        return {
            "listed": [(s.session_id, s.cwd, s.title) for s in listed.sessions],
            "elsewhere": elsewhere.sessions,
            "stops": (loaded.stop_reason, resumed.stop_reason),
            "said": (client.said(acp_id), client.said(store_id)),
            "unknown": unknown.value,
        }


def test_session_list_load_and_resume_reach_the_agents_sessions_in_the_store(agents_dir: Path, workdir: Path) -> None:
    first = asyncio.run(_new_prompt_resume(agents_dir, workdir))
    [row] = store_sessions()
    got = asyncio.run(_later_process(agents_dir, workdir, first["sid"]))
    assert got["listed"] == [(row.session_id, str(workdir), "hello there")]
    assert got["elsewhere"] == []
    assert got["stops"] == ("end_turn", "end_turn")
    assert "turn 3" in got["said"][0] and "turn 4" in got["said"][1]  # the same conversation, both ways in
    assert "Startup message received" not in "".join(got["said"])
    [after] = store_sessions()
    assert after.session_id == row.session_id and after.turns == 4
    assert "no session 0000-no-such of demo" in str(got["unknown"].data)


def test_the_models_thinking_is_an_agent_thought_chunk_never_part_of_the_answer(agents_dir: Path, workdir: Path) -> None:
    async def go() -> tuple[str, list[dict[str, Any]], str]:
        async with editor(agents_dir) as (conn, client, _proc):
            new = await conn.new_session(cwd=str(workdir), mcp_servers=[])
            done = await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=text("/think then answer")), 60)
            return done.stop_reason, client.of("agent_thought_chunk"), client.said()

    stop, thoughts, said = asyncio.run(go())
    assert stop == "end_turn"
    assert [t["content"]["text"] for t in thoughts] == ["Let me think about this."]
    assert "Let me think" not in said and "Fake provider here" in said
