"""The editor's MCP servers as Claude Code's one ``--mcp-config=JSON`` (its ``mcpServers`` object: stdio servers by
command, args and env, HTTP and SSE ones by URL and headers)."""

from __future__ import annotations

import json
from typing import Any

from agentlaunch.providers.mcp_servers import pairs, server_name


def mcp_config_flags(servers: list[dict[str, Any]]) -> list[str]:
    """``--mcp-config=JSON`` naming every one of ``servers`` (none: no flag)."""
    if not servers:
        return []
    return [f"--mcp-config={json.dumps({'mcpServers': claude_servers(servers)}, ensure_ascii=False)}"]


def claude_servers(servers: list[dict[str, Any]]) -> dict[str, Any]:
    taken: set[str] = set()
    out: dict[str, Any] = {}
    for server in servers:
        name = server_name(server.get("name"), taken)
        if "command" in server:
            out[name] = {"command": server["command"], "args": list(server.get("args") or []), "env": pairs(server.get("env"))}
        elif "url" in server:
            kind = "sse" if server.get("type") == "sse" else "http"
            out[name] = {"type": kind, "url": server["url"], "headers": pairs(server.get("headers"))}
    return out
