"""The port a native run reads the launch through (:class:`NativeLaunch`), never the whole ``Launch``.

Its own module, below :mod:`agentlaunch.launch.native.native` (which imports it for its annotations only): it joins
the ports of the helpers the run hands its launch to, and :mod:`agentlaunch.launch.native.ports` stays below them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from agentlaunch.launch.native.cli_report import ReportsLaunch
from agentlaunch.launch.native.ports import RemoteLaunch
from agentlaunch.launch.native.sends import SendingLaunch
from agentlaunch.launch.turn_cycle import TurnLaunch

if TYPE_CHECKING:
    from agentlaunch.launch.early import prespawn
    from agentlaunch.launch.liveness import Liveness
    from agentlaunch.launch.turn import ChildLike
    from agentlaunch.sinks import Sink
    from agentlaunch.usage.store import Store


class NativeLaunch(TurnLaunch, RemoteLaunch, SendingLaunch, ReportsLaunch, Protocol):
    """What a native run (:class:`~agentlaunch.launch.native.native.NativeRun`) reads and asks of the launch: what its
    helpers read (the interface's start, Codex's route, a turn's first message, the socket, the sends, the CLI's own
    reports), and the CLI
    started early handed over and adopted, the sinks its sources' views join, the liveness its sources feed, the
    store (whether the session is recorded), the orphans reaped."""

    @property
    def sinks(self) -> list[Sink]: ...
    @property
    def liveness(self) -> Liveness: ...
    @property
    def store(self) -> Store: ...

    def take_prespawned(self) -> prespawn.Prespawned | None: ...
    def adopt(self, child: ChildLike) -> None: ...
    def on_child_signal(self) -> None: ...
