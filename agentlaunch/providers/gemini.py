"""Gemini CLI: a fresh ``gemini -p`` process per turn; agentlaunch chooses the session id.

Usage arrives only in ``result.stats``, per turn (not cumulative after
``--resume``): ``input_tokens`` includes ``cached`` and ``input`` is the
uncached part; ``output_tokens`` leaves out thinking tokens, which
``total_tokens`` includes, so reasoning = total - input_tokens - output_tokens
and is counted into output (it is billed as output).
"""

from __future__ import annotations

from typing import Any

from agentlaunch.events import (
    CallUsage,
    Event,
    SessionStarted,
    TextDelta,
    ToolResult,
    ToolUse,
    TurnEnd,
    Unknown,
    Usage,
    Warning,
)
from agentlaunch.providers.base import JsonLineParser, TurnPlan
from agentlaunch.providers.claude import summarize
from agentlaunch.providers.codex import ARGV_PROMPT_LIMIT
from agentlaunch.spec import AgentSpec


def gemini_usage(stats: dict[str, Any]) -> Usage:
    total_input = int(stats.get("input_tokens") or 0)
    cached = int(stats.get("cached") or 0)
    uncached = stats.get("input")
    output = int(stats.get("output_tokens") or 0)
    total = int(stats.get("total_tokens") or 0)
    reasoning = max(total - total_input - output, 0)
    return Usage(
        input=int(uncached) if isinstance(uncached, int) else total_input - cached,
        cache_read=cached,
        output=output + reasoning,
        reasoning=reasoning,
    )


class GeminiParser(JsonLineParser):
    """``gemini --output-format stream-json`` lines to normalized events."""

    def __init__(self, asked: str | None = None, resumed: bool = False) -> None:
        self.asked = asked
        self.resumed = resumed
        self.session_id: str | None = None

    def event(self, obj: dict[str, Any]) -> list[Event]:
        kind = obj.get("type")
        if kind == "init":
            self.session_id = str(obj.get("session_id"))
            return [SessionStarted(self.session_id, obj.get("model"))]
        if kind == "message":
            if obj.get("role") == "assistant" and obj.get("content"):
                return [TextDelta(str(obj["content"]))]
            return []
        if kind == "tool_use":
            return [ToolUse(str(obj.get("tool_id", "")), str(obj.get("tool_name", "?")), summarize(obj.get("parameters") or {}))]
        if kind == "tool_result":
            failed = obj.get("status") != "success"
            detail = obj.get("error") or obj.get("output") or ""
            return [ToolResult(str(obj.get("tool_id", "")), failed, summarize(detail))]
        if kind == "error":
            message = str(obj.get("message") or "error")
            if obj.get("severity") == "error":
                return [TurnEnd(is_error=True, error=message)]
            return [Warning(message)]
        if kind == "result":
            return self._result(obj)
        return [Unknown(str(kind))]

    def _result(self, obj: dict[str, Any]) -> list[Event]:
        stats = obj.get("stats") or {}
        events: list[Event] = []
        models = stats.get("models") or {}
        model = next(iter(models), None) if isinstance(models, dict) else None
        if obj.get("status") == "success" or any(stats.get(k) for k in ("input_tokens", "output_tokens")):
            events.append(CallUsage(gemini_usage(stats), model))
        if obj.get("status") == "success":
            events.append(TurnEnd(result=""))
        else:
            error = obj.get("error") or {}
            events.append(TurnEnd(is_error=True, error=str(error.get("message") or obj.get("status") or "error")))
        return events


class GeminiAdapter:
    """Gemini CLI 0.61."""

    name = "gemini"
    default_command = "gemini"
    persistent = False
    install_hint = "install Gemini CLI: npm install -g @google/gemini-cli"

    def plan_turn(self, spec: AgentSpec, command: str, state: dict[str, Any], prompt: str) -> TurnPlan:
        session_flag = "--resume" if state.get("started") else "--session-id"
        argv = [command, "--output-format", "stream-json"]
        if spec.model:
            argv += ["-m", spec.model]
        argv += [session_flag, str(state["session_id"]), *spec.provider_flags]
        if len(prompt.encode("utf-8")) > ARGV_PROMPT_LIMIT:
            # Gemini reads stdin and puts it before the -p text.
            return TurnPlan(argv=[*argv, "-p", " "], stdin=prompt.encode("utf-8"))
        return TurnPlan(argv=[*argv, "-p", prompt], stdin=b"")

    def new_state(self, session_id: str) -> dict[str, Any]:
        return {"session_id": session_id, "started": False}

    def resume_state(self, session_id: str, stored: dict[str, Any] | None) -> dict[str, Any]:
        return dict(stored) if stored and stored.get("session_id") else {"session_id": session_id, "started": True}

    def parser(self, state: dict[str, Any]) -> GeminiParser:
        return GeminiParser(state.get("session_id"), bool(state.get("started")))

    def state_after_turn(self, parser: GeminiParser, env: dict[str, str]) -> tuple[dict[str, Any], list[Event]]:
        if parser.session_id is None:  # the CLI never said it started the session
            return {"session_id": parser.asked, "started": parser.resumed}, []
        return {"session_id": parser.session_id, "started": True}, []
