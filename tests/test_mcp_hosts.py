"""`agentlaunch mcp` serving another host's agents, driven by the official MCP SDK's client over stdio: a real
OpenSSH server (tests/support/ssh_server.py) is host ``box``, the fake provider's demo agent runs there; ``down``
is a host where nothing listens.

list_agents lists this machine's agents (host null) and each host's; start, send with wait, stop, restart and
agent_status act on box through the ``--host`` commands; an unknown host and a host down are tool errors saying why.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from agentlaunch.usage.store import Store
from tests.support.required import need
from tests.support.ssh_server import SshServer, demo_alone, free_port
from tests.test_hosts_config import write_config
from tests.test_mcp import PRICES, data, drive, text

need("sshd", "tmux")

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def box(sshd: SshServer, isolated_home: Path) -> Iterator[SshServer]:
    """Host ``box`` (the demo agent alone in ``~/agents``, priced) and ``down`` (a port nothing listens on)."""
    agents = demo_alone(sshd)
    (agents / "pricing.yaml").write_text(PRICES)
    for old in (sshd.remote / "state").glob("usage.sqlite3*"):
        old.unlink()
    write_config(
        {
            "hosts": {
                "box": sshd.host(agents_dir="~/agents", socket=sshd.remote_socket),
                "down": {"ssh": f"ssh://127.0.0.1:{free_port()}"},
            }
        }
    )
    yield sshd
    sshd.kill_remote_tmux()


def by_host(listed: dict[str, Any]) -> dict[tuple[str | None, str], dict[str, Any]]:
    return {(a["host"], a["agent"]): a for a in listed["agents"]}


async def box_state(s: ClientSession, agent: str, want: str) -> dict[str, Any]:
    """agent_status {agent, host: box} until its running session is in state ``want`` (60 s at most)."""
    for _ in range(120):
        status = data(await s.call_tool("agent_status", {"agent": agent, "host": "box"}))
        if any(x["state"] == want for x in status["sessions"]):
            return status
        await asyncio.sleep(0.5)
    raise AssertionError(f"{agent} on box never {want}: {status}")


def test_a_supervisor_drives_an_agent_on_another_host(box: SshServer, socket: str, agents_dir: Path, workdir: Path) -> None:
    async def script(s: ClientSession) -> None:
        first = by_host(data(await s.call_tool("list_agents", {})))
        assert first[(None, "demo")]["state"] == "not-running"  # this machine's, host null
        assert first[("box", "demo")]["state"] == "not-running" and ("box", "reviewer") not in first
        down = first[("down", "down")]
        assert down["state"] == "host-unreachable" and "host unreachable: down: connection refused" in down["why"], down

        assert data(await s.call_tool("start_agent", {"agent": "demo"}))["started"]  # here
        up = data(await s.call_tool("start_agent", {"agent": "demo", "host": "box"}))
        assert up["host"] == "box" and up["started"] and not up["already_running"], up
        await box_state(s, "demo", "waiting")
        listed = by_host(data(await s.call_tool("list_agents", {})))
        assert listed[(None, "demo")]["running"] and listed[("box", "demo")]["running"]
        assert listed[("box", "demo")]["provider"] == "fake" and listed[("box", "demo")]["pane"], listed[("box", "demo")]

        # A prompt a shell would misread reaches the agent there as written; the usage is the host's store's.
        prompt = 'it\'s "$HOME" `id` $(id) ; \\ * ~\nsecond line'
        turn = data(await s.call_tool("send_prompt", {"agent": "demo", "prompt": prompt, "host": "box"}))
        assert prompt in turn["answer"] and turn["host"] == "box" and turn["state"] == "waiting", turn
        with Store.open(box.remote / "state" / "usage.sqlite3") as store:
            (call,) = store.calls_for_session(turn["session_id"])
        assert turn["usage"]["input"] == call.usage.input and turn["usage"]["output"] == call.usage.output
        assert turn["usage"]["cost_usd"] == call.cost_usd and call.cost_usd is not None and call.cost_usd > 0
        listed = by_host(data(await s.call_tool("list_agents", {})))
        assert listed[("box", "demo")]["cost_today_usd"] == call.cost_usd  # the host's store, since midnight there
        assert listed[(None, "demo")]["cost_today_usd"] is None and listed[("down", "down")]["cost_today_usd"] is None
        again = data(await s.call_tool("start_agent", {"agent": "demo", "host": "box", "prompt": "more"}))
        assert again["already_running"] and again["prompt_sent"] and again["session_id"] == turn["session_id"], again
        await box_state(s, "demo", "waiting")

        stopped = data(await s.call_tool("stop_agent", {"agent": "demo", "host": "box"}))
        assert stopped["stopped"] and stopped["session_id"] == turn["session_id"], stopped
        await box_state(s, "demo", "stopped")
        refused = await s.call_tool("send_prompt", {"agent": "demo", "prompt": "there?", "host": "box"})
        assert refused.is_error and "on box:" in text(refused) and "stopped" in text(refused), text(refused)
        assert data(await s.call_tool("restart_agent", {"agent": "demo", "host": "box"}))["restarted"]
        await box_state(s, "demo", "waiting")
        back = data(await s.call_tool("send_prompt", {"agent": "demo", "prompt": "back", "host": "box", "timeout_s": 60}))
        assert back["session_id"] == turn["session_id"] and "turn 3" in back["answer"], back
        here = data(await s.call_tool("agent_status", {"agent": "demo"}))
        assert [x["state"] for x in here["sessions"]] == ["waiting"]  # the one here untouched

    drive(script, "--socket", socket, "--agents-dir", str(agents_dir), cwd=workdir)


def test_an_unknown_host_a_host_down_and_an_unknown_agent_there_are_tool_errors(
    box: SshServer, agents_dir: Path, workdir: Path
) -> None:
    async def script(s: ClientSession) -> None:
        for name, args, said in (
            (
                "send_prompt",
                {"agent": "demo", "prompt": "x", "host": "nowhere"},
                "no host 'nowhere' in config.yaml (hosts: box, down)",
            ),
            ("start_agent", {"agent": "demo", "host": "nowhere"}, "no host 'nowhere' in config.yaml (hosts: box, down)"),
            ("stop_agent", {"agent": "demo", "host": "nowhere"}, "no host 'nowhere'"),
            ("send_prompt", {"agent": "demo", "prompt": "x", "host": "down"}, "host unreachable: down: connection refused"),
            ("start_agent", {"agent": "demo", "host": "down"}, "host unreachable: down: connection refused"),
            ("stop_agent", {"agent": "demo", "host": "down"}, "nothing ran there (stop not done)"),
            ("restart_agent", {"agent": "demo", "host": "down"}, "host unreachable: down: connection refused"),
            ("agent_status", {"agent": "demo", "host": "down"}, "host unreachable: down: connection refused"),
            ("agent_status", {"agent": "nobody", "host": "box"}, "agent 'nobody' not found on box (agents there: demo)"),
            (
                "send_prompt",
                {"agent": "nobody", "prompt": "x", "host": "box"},
                "agent 'nobody' not found (agents here: demo)\nwhat would unblock it: list_agents",
            ),
            ("stop_agent", {"agent": "demo", "host": "box"}, "on box: demo is not running"),
            ("send_prompt", {"agent": "demo", "prompt": "x", "host": 7}, "host\n  Input should be a valid string"),
        ):
            result = await s.call_tool(name, args)
            assert name != "send_prompt" or args["host"] != "box" or "Error executing tool send_prompt: on box: " in text(result)
            assert result.is_error and said in text(result), (name, args, text(result))
        assert by_host(data(await s.call_tool("list_agents", {})))[("box", "demo")]["state"] == "not-running"

    drive(script, "--agents-dir", str(agents_dir), cwd=workdir)


def test_a_question_on_a_host_is_answered_there_and_its_usage_reported(
    box: SshServer, tmp_path: Path, agents_dir: Path, workdir: Path
) -> None:
    """A question of an agent on the host (its record there names a control socket this test serves, as a launch
    would): agent_status shows it, answer_question answers it there by its id (a reply a shell would misread reaches
    the CLI as written), usage_report {host} is the host's store's report."""
    import json
    import os
    import shutil
    from datetime import UTC, datetime

    from agentlaunch.launch.questions import OpenQuestions
    from agentlaunch.live.status import process_start
    from agentlaunch.providers.native.source import QuestionAsked
    from tests.support.control_socket import serve
    from tests.support.store_rows import call
    from tests.test_answer import Told

    shutil.copytree(box.remote / "home" / "agents" / "demo", box.remote / "home" / "agents" / "needy")
    with Store.open(box.remote / "state" / "usage.sqlite3") as store:
        store.record_call(call(agent="needy", at=datetime.now(UTC), cost=0.25))
    questions, permission, replied = OpenQuestions("needy"), Told(), Told()
    server = serve(tmp_path / "control.sock")
    server.on_question = questions.handle
    status = box.remote / "state" / "status"
    status.mkdir(parents=True, exist_ok=True)
    record = {"version": 1, "agent": "needy", "pid": os.getpid(), "pid_start": process_start(os.getpid())}
    (status / "needy.json").write_text(json.dumps(record | {"state": "asking", "control": str(server.path)}))
    weird = 'it\'s "$HOME" `id` $(id) ; \\ *\nsecond line'

    async def script(s: ClientSession) -> None:
        asks = questions.asked(
            QuestionAsked("Bash", {"command": "rm -rf 'old build'"}, ("once", "always", "deny"), permission)
        ).asks
        shown = data(await s.call_tool("agent_status", {"agent": "needy", "host": "box"}))
        assert shown["question"]["asks"] == asks, shown
        refused = await s.call_tool("answer_question", {"agent": "needy", "answer": "a reply", "host": "box"})
        assert refused.is_error and "needy asks a permission (Bash): answer one of" in text(refused), text(refused)
        done = data(await s.call_tool("answer_question", {"agent": "needy", "answer": "deny", "host": "box"}))
        assert done["host"] == "box" and done["decision"] == "deny" and done["question"]["asks"] == asks, done
        assert permission.answers == [("deny", "")]

        questions.asked(QuestionAsked("AskUserQuestion", {"question": "which?"}, ("reply",), replied))
        done = data(await s.call_tool("answer_question", {"agent": "needy", "answer": weird, "host": "box"}))
        assert done["decision"] == "reply" and replied.answers == [("reply", weird)], (done, replied.answers)
        nothing = await s.call_tool("answer_question", {"agent": "demo", "answer": "allow", "host": "box"})
        assert nothing.is_error and "on box:" in text(nothing), text(nothing)
        for host, said in (("nowhere", "no host 'nowhere' in config.yaml"), ("", "no host '' in config.yaml")):
            for name, args in (("answer_question", {"agent": "needy", "answer": "deny"}), ("usage_report", {"by": "agent"})):
                result = await s.call_tool(name, args | {"host": host})
                assert result.is_error and said in text(result), (name, host, text(result))
        down = await s.call_tool("usage_report", {"by": "agent", "host": "down"})
        assert down.is_error and "host unreachable: down: connection refused" in text(down), text(down)

        report = data(await s.call_tool("usage_report", {"by": "agent", "since": "today", "host": "box"}))
        assert report["host"] == "box" and report["by"] == "agent" and report["since"] is not None
        assert [(r["agent"], r["cost_usd"], r["calls"]) for r in report["rows"]] == [("needy", 0.25, 1)], report
        here = data(await s.call_tool("usage_report", {"by": "agent"}))
        assert "host" not in here and all(r["agent"] != "needy" for r in here["rows"])  # this machine's own store

    try:
        drive(script, "--agents-dir", str(agents_dir), cwd=workdir)
    finally:
        server.close()
        (status / "needy.json").unlink(missing_ok=True)
        shutil.rmtree(box.remote / "home" / "agents" / "needy", ignore_errors=True)
