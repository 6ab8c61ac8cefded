"""A native source's answer text (``Text``) is not handed to the launch's sinks: in native mode the CLI's own
screen shows it, and ``Launch.handle`` would take it for a turn going on (state ``thinking``)."""

from __future__ import annotations

from typing import Any

from agentlaunch.events import CallUsage, Text
from agentlaunch.launch.native.native import NativeRun
from agentlaunch.launch.session_state import SessionState
from agentlaunch.sinks import StateChanged
from agentlaunch.token_usage import Usage


class Launch:
    """What NativeRun.on_items touches of a launch, recording what it is handed."""

    stopped = None

    def __init__(self) -> None:
        self.handled: list[Any] = []
        self.states: list[str] = []
        self.session_state = SessionState("s1", False, 0, {}, None)  # the turns NativeRun counts

    def handle(self, event: Any) -> None:
        self.handled.append(event)

    def set_state(self, state: str, *, reason: str | None = None, always: bool = False, source: str = "") -> None:
        self.states.append(state)

    class liveness:  # noqa: N801 - the launch's attribute of that name: what the sources report is progress
        @staticmethod
        def progress() -> None:
            pass

    def emit(self, event: Any) -> None:
        pass


def test_text_items_never_reach_launch_handle_and_change_no_state() -> None:
    launch = Launch()
    run = NativeRun(launch)  # type: ignore[arg-type]
    call = CallUsage(Usage(input=1, output=2), "m", "c1")
    run.on_items([StateChanged("thinking"), Text("the answer"), call, StateChanged("waiting"), Text("read late")])
    assert launch.handled == [call]
    assert launch.states == ["thinking", "waiting"] and launch.session_state.turns == 1
