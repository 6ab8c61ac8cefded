"""Claude Code: one persistent ``claude -p`` process per session, stream-json in and out."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from agentlaunch.events import (
    CallUsage,
    Compaction,
    ContextWindow,
    Event,
    OutputFinal,
    PermissionRequest,
    SessionStarted,
    Text,
    TextDelta,
    ToolResult,
    ToolUse,
    TurnEnd,
    Unknown,
    Usage,
    Warning,
)
from agentlaunch.providers.base import Described, JsonLineParser, ProviderState, TurnPlan
from agentlaunch.providers.descriptors import CLAUDE, CLAUDE_EXCLUDE_DYNAMIC_FLAG, ProviderDescriptor

if TYPE_CHECKING:
    from agentlaunch.definitions.spec import AgentSpec

# Event types Claude Code prints that carry nothing agentlaunch shows or counts.
IGNORED = {"rate_limit_event", "control_response", "control_cancel_request"}
SYSTEM_PROMPT_FLAGS = ("--system-prompt", "--system-prompt-file")
EXCLUDE_DYNAMIC_FLAG = CLAUDE_EXCLUDE_DYNAMIC_FLAG


def anthropic_usage(raw: dict[str, Any]) -> Usage:
    return Usage(
        input=int(raw.get("input_tokens") or 0),
        cache_write=int(raw.get("cache_creation_input_tokens") or 0),
        cache_read=int(raw.get("cache_read_input_tokens") or 0),
        output=int(raw.get("output_tokens") or 0),
    )


def summarize(value: Any, limit: int = 120) -> str:
    """One readable line for a tool's input or result."""
    if isinstance(value, dict):
        for key in ("command", "file_path", "path", "pattern", "url", "query", "description"):
            if isinstance(value.get(key), str):
                text = value[key]
                break
        else:
            text = json.dumps(value, ensure_ascii=False)
    elif isinstance(value, list):
        text = " ".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in value)
    else:
        text = str(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ClaudeParser(JsonLineParser):
    """Claude Code's stream-json output to normalized events.

    Usage is counted once per model call: the call's ``message_start`` usage
    (from ``--include-partial-messages``) completed by the output count of its
    ``message_delta``. The ``assistant`` lines repeat that snapshot once per
    content block and are used for usage only when no partial messages came.
    ``result.usage`` (a turn sum) and ``modelUsage`` (a session total) are
    never counted as calls.
    """

    def __init__(self) -> None:
        self._pending: dict[str, tuple[Usage, str | None]] = {}
        self._current: str | None = None
        self._counted: set[str] = set()
        self._streamed_text: set[str] = set()

    def event(self, obj: dict[str, Any]) -> list[Event]:
        kind = obj.get("type")
        handler = getattr(self, f"_on_{kind}", None) if isinstance(kind, str) else None
        if handler is not None:
            return list(handler(obj))
        if kind in IGNORED:
            return []
        return [Unknown(str(kind))]

    def finish(self) -> list[Event]:
        events: list[Event] = []
        for call_id, (usage, model) in self._pending.items():
            events.append(CallUsage(usage, model, call_id))
            self._counted.add(call_id)
        self._pending.clear()
        return events

    def _on_system(self, obj: dict[str, Any]) -> list[Event]:
        sub = obj.get("subtype")
        if sub == "init":
            return [
                SessionStarted(str(obj.get("session_id", "")), obj.get("model"), obj.get("cwd"), obj.get("claude_code_version"))
            ]
        if sub == "compact_boundary":
            meta = obj.get("compact_metadata") or {}
            return [Compaction(meta.get("trigger"), meta.get("pre_tokens"), meta.get("post_tokens"))]
        if sub == "api_retry":
            delay = (obj.get("retry_delay_ms") or 0) / 1000
            return [Warning(f"API call failed; retry {obj.get('attempt')}/{obj.get('max_retries')} in {delay:.1f}s")]
        if sub == "permission_denied":
            return [Warning(str(obj.get("message") or f"permission denied for {obj.get('tool_name')}"))]
        if sub == "status":
            return []
        return [Unknown(f"system/{sub}")]

    def _on_stream_event(self, obj: dict[str, Any]) -> list[Event]:
        ev = obj.get("event") or {}
        etype = ev.get("type")
        if etype == "message_start":
            msg = ev.get("message") or {}
            call_id = msg.get("id")
            if call_id and call_id not in self._counted:
                self._pending[call_id] = (anthropic_usage(msg.get("usage") or {}), msg.get("model"))
                self._current = call_id
            return []
        if etype == "content_block_delta":
            delta = ev.get("delta") or {}
            if delta.get("type") == "text_delta" and delta.get("text"):
                if self._current:
                    self._streamed_text.add(self._current)
                return [TextDelta(delta["text"])]
            return []
        if etype == "message_delta":
            call_id = self._current
            out = (ev.get("usage") or {}).get("output_tokens")
            if call_id and call_id in self._pending:
                usage, model = self._pending.pop(call_id)
                if isinstance(out, int):
                    usage = Usage(usage.input, usage.cache_write, usage.cache_read, out, usage.reasoning)
                self._counted.add(call_id)
                return [CallUsage(usage, model, call_id)]
            if call_id and isinstance(out, int):
                return [OutputFinal(out, call_id)]
            return []
        return []

    def _on_assistant(self, obj: dict[str, Any]) -> list[Event]:
        msg = obj.get("message") or {}
        if obj.get("is_api_error_message") or msg.get("model") == "<synthetic>":
            # The CLI's own stand-in for a failed call: no tokens, and its text is an
            # error message that the turn's result reports; it is not the answer.
            return []
        call_id = msg.get("id")
        events: list[Event] = []
        if call_id and call_id not in self._counted and call_id not in self._pending:
            # No partial messages for this call: count the snapshot we have.
            events.append(CallUsage(anthropic_usage(msg.get("usage") or {}), msg.get("model"), call_id))
            self._counted.add(call_id)
        for block in msg.get("content") or []:
            btype = block.get("type")
            if btype == "text" and block.get("text"):
                if call_id not in self._streamed_text:
                    events.append(Text(block["text"]))
            elif btype == "tool_use":
                events.append(ToolUse(str(block.get("id", "")), str(block.get("name", "?")), summarize(block.get("input"))))
        return events

    def _on_user(self, obj: dict[str, Any]) -> list[Event]:
        content = (obj.get("message") or {}).get("content")
        events: list[Event] = []
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    events.append(
                        ToolResult(
                            str(block.get("tool_use_id", "")), bool(block.get("is_error")), summarize(block.get("content"))
                        )
                    )
        return events

    def _on_result(self, obj: dict[str, Any]) -> list[Event]:
        events: list[Event] = self.finish()
        for model, info in (obj.get("modelUsage") or {}).items():
            window = info.get("contextWindow") if isinstance(info, dict) else None
            if isinstance(window, int) and window > 0:
                events.append(ContextWindow(window, model))
        is_error = bool(obj.get("is_error")) or obj.get("subtype") != "success"
        error = None
        if is_error:
            errors = obj.get("errors")
            error = (
                str(obj.get("result") or "")
                or (("; ".join(map(str, errors))) if errors else "")
                or str(obj.get("subtype") or "error")
            )
        cost = obj.get("total_cost_usd")
        events.append(
            TurnEnd(
                is_error=is_error,
                result=str(obj.get("result") or ""),
                error=error,
                provider_cost_usd=float(cost) if isinstance(cost, int | float) else None,
            )
        )
        self._streamed_text.clear()
        # A call's lines never outlive its turn's result: forgetting its ids keeps a long session's memory flat.
        self._counted.clear()
        self._current = None
        return events

    def _on_control_request(self, obj: dict[str, Any]) -> list[Event]:
        req = obj.get("request") or {}
        if req.get("subtype") == "can_use_tool":
            return [PermissionRequest(str(obj.get("request_id", "")), str(req.get("tool_name", "?")), req.get("input") or {})]
        return [Unknown(f"control_request/{req.get('subtype')}")]


def base_argv(command: str, session_id: str, resume: bool) -> list[str]:
    return [
        command,
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--resume" if resume else "--session-id",
        session_id,
    ]


class ClaudeAdapter(Described):
    """Claude Code 2.1.x."""

    descriptor: ProviderDescriptor = CLAUDE
    persistent: Literal[True] = True

    def plan(self, spec: AgentSpec, command: str, session_id: str, resume: bool, interactive: bool) -> TurnPlan:
        argv = base_argv(command, session_id, resume)
        notices: list[str] = []
        if spec.model:
            argv += ["--model", spec.model]
        if any(flag.split("=")[0] in SYSTEM_PROMPT_FLAGS for flag in spec.provider_flags):
            notices.append(
                "provider_flags replace the system prompt, so --exclude-dynamic-system-prompt-sections "
                "would do nothing: not passing it"
            )
        else:
            argv.append(EXCLUDE_DYNAMIC_FLAG)
        if spec.permission_mode:
            argv += ["--permission-mode", spec.permission_mode]
        if spec.allowed_tools:
            argv += ["--allowedTools", ",".join(spec.allowed_tools)]
        if interactive:
            argv += ["--permission-prompt-tool", "stdio"]
        argv += list(spec.provider_flags)
        return TurnPlan(argv=argv, notices=notices)

    def parser(self, state: Mapping[str, object] | None = None) -> ClaudeParser:
        return ClaudeParser()

    def new_state(self, session_id: str) -> ProviderState:
        """Claude Code keeps the whole session itself; nothing to remember between launches."""
        return {}

    def resume_state(self, session_id: str, stored: Mapping[str, object] | None) -> ProviderState:
        return dict(stored or {})

    @staticmethod
    def user_message(text: str) -> dict[str, object]:
        return {"type": "user", "message": {"role": "user", "content": text}}
