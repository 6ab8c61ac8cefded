"""The line chat's door for ``agentlaunch send``: its socket, named in the status record, and the answer it collects.

The socket is served on the launch's loop (:class:`~agentlaunch.launch.control.ControlServer`). A
request that arrives while the chat waits at its prompt ends that wait (:attr:`ChatDoor.on_arrival`)
and runs as the next turn; one that arrives while the chat is in a turn is refused at once by the
door's gate.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agentlaunch.launch.control import SOCKET_NAME, ControlServer, SendRequest
from agentlaunch.launch.control_door import close_control, launch_busy, open_control
from agentlaunch.launch.native.interface_start import make_runtime_dir
from agentlaunch.launch.turn_answer import TurnAnswer

if TYPE_CHECKING:
    from agentlaunch.launch.control_door import ControlledLaunch
    from agentlaunch.sinks import Sink


class ChatDoor:
    """The line chat's socket for agentlaunch send (named in the status record), and its answer collector.

    It reads and asks the launch through :class:`~agentlaunch.launch.control_door.ControlledLaunch`, and adds its
    answer collector to ``sinks`` (the launch's) while the socket is open."""

    def __init__(self, launch: ControlledLaunch, sinks: list[Sink]) -> None:
        self.launch, self.sinks = launch, sinks
        self.answer = TurnAnswer()
        self.server: ControlServer | None = None
        self.runtime: Path | None = None
        self.on_arrival: Callable[[], None] | None = None
        """Set while the chat's prompt waits: a request queued ends the wait."""

    @property
    def open(self) -> bool:
        return self.server is not None

    def __enter__(self) -> ChatDoor:
        launch = self.launch
        self.runtime = make_runtime_dir()
        self.server = open_control(launch, self.runtime / SOCKET_NAME, "chat", on_request=self._arrived, gate=self._gate)
        if self.server is not None:
            self.sinks.append(self.answer)
        return self

    def _gate(self) -> str | None:
        launch = self.launch
        if self.server is not None and self.server.pending():
            return f"a prompt sent to {launch.spec.name} earlier has not started yet"
        return launch_busy(launch)

    def _arrived(self) -> None:
        if self.on_arrival is not None:
            self.on_arrival()

    def pending(self) -> bool:
        return self.server is not None and self.server.pending()

    def take(self) -> list[SendRequest]:
        return self.server.take() if self.server is not None else []

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            close_control(self.launch, self.server)
            self.server = None
        if self.answer in self.sinks:
            self.sinks.remove(self.answer)
        if self.runtime is not None:
            shutil.rmtree(self.runtime, ignore_errors=True)
