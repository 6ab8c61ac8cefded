"""An editor's MCP servers (ACP's ``session/new`` {mcpServers}, camelCase) as a provider CLI takes them: what every
CLI's form shares. Each adapter turns them into its CLI's flags (``Adapter.mcp_server_flags``: Claude Code in
``claude_mcp.py``, Codex in ``codex_mcp.py``; the others take none, docs/acp.md)."""

from __future__ import annotations

import json
import re
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
