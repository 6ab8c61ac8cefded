"""Which driver a launch's CLI gets: one per adapter shape, and Codex's app-server for its line chat."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentlaunch.launch.drivers import Driver, PersistentDriver, PerTurnDriver

if TYPE_CHECKING:
    from agentlaunch.definitions.spec import AgentSpec
    from agentlaunch.providers.base import Adapter


def driver_for(adapter: Adapter, spec: AgentSpec | None = None, *, native: bool = False, chat: bool = False) -> Driver:
    """The driver of ``adapter``'s shape. The line chat (``chat``) of a CLI with an app-server (Codex) whose agent's
    flags the app-server takes (``spec`` given) goes through it (:mod:`agentlaunch.launch.chat.appserver`): a later turn
    takes a seventh of a ``codex exec`` process's time. A one-turn headless run stays per turn, its first turn
    started early (:mod:`agentlaunch.launch.early.early_turn`)."""
    if adapter.persistent:
        return PersistentDriver(adapter)
    if spec is not None and chat and not native and adapter.app_server:
        from agentlaunch.providers.codex_appserver import app_server_argv

        if app_server_argv(spec.command or adapter.default_command, spec.provider_flags) is not None:
            from agentlaunch.launch.chat.appserver import AppServerDriver

            return AppServerDriver(adapter)
    return PerTurnDriver(adapter)
