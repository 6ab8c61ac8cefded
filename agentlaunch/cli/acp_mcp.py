"""The editor's MCP servers (``session/new`` {mcpServers}) as the provider CLI's own flags, for each turn.

Each adapter knows its CLI's form (``mcp_server_flags``: Claude Code's ``--mcp-config``, Codex's ``-c mcp_servers…``
overrides); Gemini CLI takes MCP servers only from its settings.json, which agentlaunch's Gemini home does not take
from an editor: none is passed (docs/acp.md), nor to the fake provider. This module imports no ACP SDK.
"""

from __future__ import annotations

from typing import Any

from agentlaunch.providers import get_adapter


def provider_flags(provider: str, servers: list[dict[str, Any]]) -> list[str]:
    """The flags that give ``provider``'s CLI the editor's ``servers`` (ACP's shape, camelCase)."""
    return get_adapter(provider).mcp_server_flags(servers) if servers else []
