"""How the offline fake CLI asks its host about a tool call, as Claude Code does in stream-json mode.

Two askings, both control requests on stdout answered by control responses on stdin: the permission prompt
(``--permission-prompt-tool stdio``: ``can_use_tool``, answered by a ``behavior``) and the PreToolUse hook callbacks
an ``initialize`` request registered (``hook_callback``, answered by ``continue``). The answers are read from the
CLI's inbox, the messages its stdin thread put there.
"""

from __future__ import annotations

import queue
import uuid
from collections.abc import Callable
from typing import Any


class ToolAsks:
    """The fake CLI's questions about a tool call; ``emit`` writes one stdout line, ``inbox`` holds what stdin said."""

    def __init__(self, emit: Callable[[dict[str, Any]], None], inbox: queue.Queue[dict[str, Any] | None]) -> None:
        self.emit = emit
        self.inbox = inbox
        self.gates: list[str] = []  # PreToolUse hook callbacks registered by an initialize request (as Claude Code)

    def register(self, request: dict[str, Any]) -> None:
        """Keep the PreToolUse hook callbacks of an ``initialize`` request."""
        hooks = (request.get("hooks") or {}).get("PreToolUse") or []
        self.gates = [str(i) for h in hooks if isinstance(h, dict) for i in h.get("hookCallbackIds") or []]

    def permission(self, tool: dict[str, Any], prompt_tool: str | None, permission_mode: str | None) -> bool:
        """Whether ``tool`` may run: asked on stdio with ``--permission-prompt-tool stdio``, else by the mode."""
        if prompt_tool != "stdio":
            return permission_mode in ("bypassPermissions", "acceptEdits")
        request_id = f"req_{uuid.uuid4().hex[:8]}"
        self.emit(
            {
                "type": "control_request",
                "request_id": request_id,
                "request": {
                    "subtype": "can_use_tool",
                    "tool_name": tool["name"],
                    "input": tool["input"],
                    "tool_use_id": tool["id"],
                },
            }
        )
        while True:
            msg = self.inbox.get()
            if msg is None:
                return False
            if msg.get("type") == "control_response":
                response = msg.get("response") or {}
                if response.get("request_id") == request_id:
                    return (response.get("response") or {}).get("behavior") == "allow"

    def ask_hooks(self, tool: dict[str, Any]) -> list[str]:
        """Claude Code's PreToolUse hook callbacks for ``tool``, sent; their request ids (see :meth:`allowed_by`).

        As Claude Code 2.1.332: the hook is asked at the tool block's end, before the call's ``message_delta``,
        and the stream goes on while the tool waits for the answer.
        """
        asked = []
        for callback in self.gates:
            request_id = f"hook_{uuid.uuid4().hex[:8]}"
            self.emit(
                {
                    "type": "control_request",
                    "request_id": request_id,
                    "request": {
                        "subtype": "hook_callback",
                        "callback_id": callback,
                        "tool_use_id": tool["id"],
                        "input": {"hook_event_name": "PreToolUse", "tool_name": tool["name"], "tool_input": tool["input"]},
                    },
                }
            )
            asked.append(request_id)
        return asked

    def allowed_by(self, asked: list[str]) -> bool:
        """Wait for the answers to the hooks ``asked``; False when one says ``continue: false`` (the turn ends)."""
        allowed = True
        waiting = set(asked)
        while waiting:
            msg = self.inbox.get()
            if msg is None:
                return False
            response = msg.get("response") or {} if msg.get("type") == "control_response" else {}
            if response.get("request_id") in waiting:
                waiting.discard(response["request_id"])
                allowed = allowed and (response.get("response") or {}).get("continue") is not False
        return allowed
