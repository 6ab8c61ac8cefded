"""A stdio MCP server with one tool, ``probe_ping``: what a user adds with ``claude mcp add --scope user``.

Newline-delimited JSON-RPC 2.0 on stdin/stdout (the MCP stdio transport):
``initialize`` answers with the client's protocol version, ``tools/list`` with
the one tool, ``tools/call`` with the text ``PONG``; notifications get no
answer. A test sees the server reach Claude Code when the tool
``mcp__<server name>__probe_ping`` is in the tools of a captured request.
Standard library only; run as ``python mcp_probe.py``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

TOOL = "probe_ping"


def answer(request: dict[str, Any]) -> dict[str, Any] | None:
    """The response to one JSON-RPC message, or None for a notification (no id)."""
    if "id" not in request:
        return None
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "mcp-probe", "version": "1.0.0"},
        }
    elif method == "tools/list":
        result = {"tools": [{"name": TOOL, "description": "Answers PONG.", "inputSchema": {"type": "object", "properties": {}}}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "PONG"}]}
    else:
        return {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def main() -> int:
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
