"""The offline ``fake`` provider: Claude Code's protocol, served by agentlaunch itself."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentlaunch.providers.base import TurnPlan
from agentlaunch.providers.claude import ClaudeAdapter, base_argv
from agentlaunch.providers.descriptors import FAKE

if TYPE_CHECKING:
    from agentlaunch.definitions.spec import AgentSpec
    from agentlaunch.providers.native.source import NativeContext, NativeExtras

FAKE_MODULE = "agentlaunch.providers.fake_cli"


class FakeAdapter(ClaudeAdapter):
    descriptor = FAKE
    has_interface = False  # only a stream-json protocol: the fake provider gets the line chat
    early_interface = False
    early_turn = False

    def mcp_server_flags(self, servers: list[dict[str, Any]]) -> list[str]:
        return []  # the fake CLI runs no MCP server

    def plan(self, spec: AgentSpec, command: str, session_id: str, resume: bool, interactive: bool) -> TurnPlan:
        head = [command] if spec.command else [command, "-m", FAKE_MODULE]
        argv = head + base_argv("", session_id, resume)[1:]
        if spec.model:
            argv += ["--model", spec.model]
        if spec.permission_mode:
            argv += ["--permission-mode", spec.permission_mode]
        argv += ["--permission-prompt-tool", "stdio"]  # as Claude Code's plan: a headless turn's questions are denied
        argv += list(spec.provider_flags)
        env = {"AGENTLAUNCH_FAKE_CONTEXT_WINDOW": str(spec.context_window)} if spec.context_window else {}
        return TurnPlan(argv=argv, env=env)

    def native_extras(self, ctx: NativeContext) -> NativeExtras:
        """No interface, so nothing to follow beside it."""
        from agentlaunch.providers.native.source import NativeExtras

        return NativeExtras()

    def interface_notices(self, placement_argv: list[str]) -> list[str]:
        return []
