"""The editor's MCP servers as Codex's ``-c mcp_servers.NAME.KEY=VALUE`` overrides (stdio: command, args, env; HTTP:
url, http_headers; Codex has no SSE transport: such a server is left out, said on stderr)."""

from __future__ import annotations

import sys
from typing import Any

from agentlaunch.providers.mcp_servers import pairs, server_name, toml


def codex_flags(servers: list[dict[str, Any]]) -> list[str]:
    """``-c mcp_servers.NAME.KEY=VALUE`` overrides, the values in TOML (an SSE server left out, said on stderr)."""
    taken: set[str] = set()
    flags: list[str] = []
    for server in servers:
        name = server_name(server.get("name"), taken)
        key = f"mcp_servers.{name}"
        if "command" in server:
            values: dict[str, Any] = {"command": server["command"], "args": list(server.get("args") or [])}
            if env := pairs(server.get("env")):
                values["env"] = env
        elif "url" in server and server.get("type") != "sse":
            values = {"url": server["url"]}
            if headers := pairs(server.get("headers")):
                values["http_headers"] = headers
        else:
            sys.stderr.write(f"agentlaunch acp: MCP server {name}: Codex has no SSE transport; not passed\n")
            continue
        flags += [part for k, v in values.items() for part in ("-c", f"{key}.{k}={toml(v)}")]
    return flags
