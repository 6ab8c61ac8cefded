"""The editor's MCP servers (``session/new`` {mcpServers}) as the provider CLI's own flags, for each turn.

Claude Code: one ``--mcp-config=JSON`` (its ``mcpServers`` object; stdio servers by command, args and env, HTTP and SSE
ones by URL and headers). Codex: ``-c mcp_servers.NAME.KEY=VALUE`` overrides, the values in TOML (stdio: command,
args, env; HTTP: url, http_headers; Codex has no SSE transport: such a server is left out, said on stderr). Gemini
CLI takes MCP servers only from its settings.json, which agentlaunch's Gemini home does not take from an editor:
none is passed (docs/acp.md). The fake provider gets none. This module imports no ACP SDK.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

NAME = re.compile(r"[^A-Za-z0-9_-]")


def server_name(raw: Any, taken: set[str]) -> str:
    """A name every CLI takes as a key (letters, digits, _ and -), unique among ``taken``."""
    base = NAME.sub("_", str(raw or "server"))[:60] or "server"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def pairs(items: Any) -> dict[str, str]:
    """ACP's [{name, value}] list (env, headers) as a dict."""
    out: dict[str, str] = {}
    for item in items or []:
        if isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(item.get("value"), str):
            out[item["name"]] = item["value"]
    return out


def provider_flags(provider: str, servers: list[dict[str, Any]]) -> list[str]:
    """The flags that give ``provider``'s CLI the editor's ``servers`` (ACP's shape, camelCase)."""
    if not servers:
        return []
    if provider == "claude":
        return [f"--mcp-config={json.dumps({'mcpServers': claude_servers(servers)}, ensure_ascii=False)}"]
    if provider == "codex":
        return codex_flags(servers)
    return []


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


def codex_flags(servers: list[dict[str, Any]]) -> list[str]:
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


def toml(value: Any) -> str:
    """``value`` (a string, a list of strings, a table of strings) as a TOML value: JSON strings are TOML basic
    strings once their escapes are TOML's (JSON's \\uXXXX and the short ones are)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=True)
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k), ensure_ascii=True)} = {toml(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)
