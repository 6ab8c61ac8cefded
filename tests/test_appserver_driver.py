"""The app-server driver's bookkeeping of requests (agentlaunch.launch.chat.appserver), on a stand-in launch and CLI."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from agentlaunch.events import SessionStarted, TurnEnd
from agentlaunch.launch.chat.appserver import AppServerDriver
from agentlaunch.providers import get_adapter

THREAD, TURN = "01a2349b-564e-7af0-927d-50209ba6c298", "01a2349b-5712-71a3-82c4-f3a7118a9ec6"


class Child:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send_json(self, obj: dict[str, Any]) -> None:
        self.sent.append(obj)


def launch(state: dict[str, object] | None = None) -> tuple[AppServerDriver, Any]:
    adapter = get_adapter("codex")
    assert not adapter.persistent
    driver = AppServerDriver(adapter)
    state = state or {}
    stand_in = SimpleNamespace(
        child=Child(),
        provider_state=state,
        working_dir=Path("/work"),
        spec=SimpleNamespace(model="gpt-5.5"),
        parser=driver.parser(state),
    )
    return driver, stand_in


def line(launch_: Any, driver: AppServerDriver, message: dict[str, Any]) -> list[Any]:
    return driver.split(launch_, launch_.parser.read_line(json.dumps(message)))


def methods(launch_: Any) -> list[str]:
    return [m.get("method", "answer") for m in launch_.child.sent]


def test_the_first_turn_opens_the_thread_then_starts_once_its_id_is_back() -> None:
    driver, la = launch()
    driver.send(la, "hello")
    assert methods(la) == ["initialize", "initialized", "thread/start"]
    assert la.child.sent[2]["params"] == {"cwd": "/work", "approvalPolicy": "never", "model": "gpt-5.5"}
    events = line(la, driver, {"id": la.child.sent[2]["id"], "result": {"thread": {"id": THREAD}, "model": "gpt-5.5"}})
    assert [type(e) for e in events] == [SessionStarted]
    assert methods(la)[-1] == "turn/start" and la.child.sent[-1]["params"]["threadId"] == THREAD
    driver.send(la, "again")  # the thread is open: straight to turn/start
    assert methods(la)[-1] == "turn/start" and la.child.sent[-1]["params"]["input"][0]["text"] == "again"


def test_a_stored_thread_is_resumed_and_a_refusal_ends_the_turn() -> None:
    driver, la = launch({"thread_id": THREAD})
    driver.send(la, "hello")
    resume = la.child.sent[-1]
    assert resume["method"] == "thread/resume" and resume["params"]["threadId"] == THREAD and resume["params"]["excludeTurns"]
    refused = line(la, driver, {"id": resume["id"], "error": {"code": -32600, "message": "no rollout found for thread id x"}})
    assert refused[-1] == TurnEnd(is_error=True, error="codex app-server: no rollout found for thread id x")
    driver.send(la, "retry")  # the next turn opens the thread again
    assert methods(la)[-1] == "thread/resume" and methods(la).count("initialize") == 1


def test_an_interrupt_before_the_turn_has_an_id() -> None:
    driver, la = launch()
    driver.send(la, "hello")
    driver.interrupt(la.child)  # the thread is not even open: the turn never starts
    ended = line(la, driver, {"id": la.child.sent[2]["id"], "result": {"thread": {"id": THREAD}}})
    assert ended[-1] == TurnEnd(is_error=True, error="interrupted before the turn started")
    assert "turn/start" not in methods(la)
    driver.send(la, "second")
    driver.interrupt(la.child)  # turn/start sent, its id not back yet
    assert methods(la)[-1] == "turn/start"
    line(la, driver, {"id": la.child.sent[-1]["id"], "result": {"turn": {"id": TURN}}})
    assert la.child.sent[-1]["method"] == "turn/interrupt" and la.child.sent[-1]["params"] == {"threadId": THREAD, "turnId": TURN}
