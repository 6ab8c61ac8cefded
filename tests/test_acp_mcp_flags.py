"""The editor's MCP servers as each provider CLI's flags (``agentlaunch.cli.acp_mcp``); the real CLIs take them in
tests/e2e/test_acp_mcp_e2e.py."""

from __future__ import annotations

import json
import tomllib

from agentlaunch.cli.acp_mcp import provider_flags

STDIO = {"name": "my tools", "command": "/bin/tool", "args": ["--x", 'q"uote'], "env": [{"name": "K", "value": "v\\1"}]}
HTTP = {"type": "http", "name": "web", "url": "https://example.test/mcp", "headers": [{"name": "Authorization", "value": "t"}]}
SSE = {"type": "sse", "name": "old", "url": "https://example.test/sse", "headers": []}


def test_claude_gets_one_mcp_config_of_every_server() -> None:
    [flag] = provider_flags("claude", [STDIO, HTTP, SSE, dict(STDIO)])
    name, _, value = flag.partition("=")
    assert name == "--mcp-config"
    assert json.loads(value) == {
        "mcpServers": {
            "my_tools": {"command": "/bin/tool", "args": ["--x", 'q"uote'], "env": {"K": "v\\1"}},
            "web": {"type": "http", "url": "https://example.test/mcp", "headers": {"Authorization": "t"}},
            "old": {"type": "sse", "url": "https://example.test/sse", "headers": {}},
            "my_tools_2": {"command": "/bin/tool", "args": ["--x", 'q"uote'], "env": {"K": "v\\1"}},
        }
    }


def test_codex_gets_toml_overrides_that_parse_back_to_the_servers() -> None:
    flags = provider_flags("codex", [STDIO, HTTP, SSE])
    assert flags[0::2] == ["-c"] * (len(flags) // 2)
    parsed: dict[str, object] = {}
    for override in flags[1::2]:
        key, _, value = override.partition("=")
        parsed[key] = tomllib.loads(f"v = {value}")["v"]
    assert parsed == {
        "mcp_servers.my_tools.command": "/bin/tool",
        "mcp_servers.my_tools.args": ["--x", 'q"uote'],
        "mcp_servers.my_tools.env": {"K": "v\\1"},
        "mcp_servers.web.url": "https://example.test/mcp",
        "mcp_servers.web.http_headers": {"Authorization": "t"},
    }  # no SSE transport in Codex: left out


def test_gemini_the_fake_and_no_servers_get_no_flags() -> None:
    assert provider_flags("gemini", [STDIO]) == []
    assert provider_flags("fake", [STDIO]) == []
    assert provider_flags("claude", []) == []
