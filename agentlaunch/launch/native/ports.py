"""The narrow ports the native room's helpers share (Protocols), never the whole ``Launch``.

A port read by one helper stays in that helper's module (``outcome.EndedLaunch``); one read by two sits here, where
both import it for their annotations without an import circle (``interface_start`` imports ``native_remote``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from agentlaunch.clock import Clock
    from agentlaunch.definitions.spec import AgentSpec
    from agentlaunch.launch.identity import ForkSource
    from agentlaunch.launch.options import LaunchOptions
    from agentlaunch.launch.reaper import Reaper
    from agentlaunch.launch.start import StartPlan
    from agentlaunch.providers.base import Adapter, ProviderState


class InterfaceStarting(Protocol):
    """What an interface's start reads of the launch: its agent, provider, options, session, plan and places."""

    @property
    def spec(self) -> AgentSpec: ...
    @property
    def adapter(self) -> Adapter: ...
    @property
    def options(self) -> LaunchOptions: ...
    @property
    def session_id(self) -> str: ...
    @property
    def resumed(self) -> bool: ...
    @property
    def fork(self) -> ForkSource | None: ...
    @property
    def plan(self) -> StartPlan | None: ...
    @property
    def command(self) -> str | None: ...
    @property
    def env(self) -> dict[str, str]: ...
    @property
    def working_dir(self) -> Path: ...
    @property
    def state_dir(self) -> Path: ...
    @property
    def clock(self) -> Clock: ...


class RemoteLaunch(InterfaceStarting, Protocol):
    """What Codex's app-server route (:class:`~agentlaunch.launch.native.native_remote.RemoteCodex`) reads beyond the
    interface's start: the thread the provider keeps, the instructions' arguments, and the reaper that watches the
    app-server it starts."""

    @property
    def provider_state(self) -> ProviderState: ...
    @property
    def placement_argv(self) -> list[str]: ...
    @property
    def reaper(self) -> Reaper: ...
