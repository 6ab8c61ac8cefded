"""Normalized events: the one vocabulary every provider parser speaks.

Parsers turn provider output lines into these; the meter, the view, the
JSON-lines sink and the usage store consume them. All are plain frozen data.
"""

from __future__ import annotations

from typing import Any, ClassVar

from agentlaunch.frozen_record import Record
from agentlaunch.token_usage import Usage

_put = object.__setattr__  # how a record's __init__ sets its fields (its own __setattr__ refuses)


class Event(Record):
    """Base of all normalized events; ``kind`` names the event in JSON output."""

    __slots__ = ()
    kind: ClassVar[str] = "event"

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"event": self.kind}
        for name, value in self.fields().items():
            data[name] = value.as_dict() if isinstance(value, Usage) else value
        return data


class SessionStarted(Event):
    kind: ClassVar[str] = "session"
    __slots__ = ("session_id", "model", "cwd", "cli_version")
    session_id: str
    model: str | None
    cwd: str | None
    cli_version: str | None

    def __init__(
        self,
        session_id: str,
        model: str | None = None,
        cwd: str | None = None,
        cli_version: str | None = None,
    ) -> None:
        _put(self, "session_id", session_id)
        _put(self, "model", model)
        _put(self, "cwd", cwd)
        _put(self, "cli_version", cli_version)


class TextDelta(Event):
    """A piece of assistant text as it streams."""

    kind: ClassVar[str] = "text_delta"
    __slots__ = ("text",)
    text: str

    def __init__(self, text: str) -> None:
        _put(self, "text", text)


class Text(Event):
    """A whole block of assistant text (after its deltas, or instead of them)."""

    kind: ClassVar[str] = "text"
    __slots__ = ("text",)
    text: str

    def __init__(self, text: str) -> None:
        _put(self, "text", text)


class ToolUse(Event):
    kind: ClassVar[str] = "tool_use"
    __slots__ = ("tool_id", "name", "summary")
    tool_id: str
    name: str
    summary: str

    def __init__(self, tool_id: str, name: str, summary: str = "") -> None:
        _put(self, "tool_id", tool_id)
        _put(self, "name", name)
        _put(self, "summary", summary)


class ToolResult(Event):
    kind: ClassVar[str] = "tool_result"
    __slots__ = ("tool_id", "is_error", "summary")
    tool_id: str
    is_error: bool
    summary: str

    def __init__(self, tool_id: str, is_error: bool = False, summary: str = "") -> None:
        _put(self, "tool_id", tool_id)
        _put(self, "is_error", is_error)
        _put(self, "summary", summary)


class CallUsage(Event):
    """Usage of one model call, never a running total.

    Codex and Gemini print only turn sums; their adapters split them into
    calls from the CLI's own files, and a turn whose calls cannot be read
    that way stays one CallUsage carrying its sum.
    """

    kind: ClassVar[str] = "usage"
    __slots__ = ("usage", "model", "call_id")
    usage: Usage
    model: str | None
    call_id: str | None

    def __init__(self, usage: Usage, model: str | None = None, call_id: str | None = None) -> None:
        _put(self, "usage", usage)
        _put(self, "model", model)
        _put(self, "call_id", call_id)


class OutputFinal(Event):
    """The final output token count of the call ``call_id`` (streamed late by Claude)."""

    kind: ClassVar[str] = "output_final"
    __slots__ = ("output", "call_id")
    output: int
    call_id: str | None

    def __init__(self, output: int, call_id: str | None = None) -> None:
        _put(self, "output", output)
        _put(self, "call_id", call_id)


class ContextWindow(Event):
    """The provider told us the model's context window."""

    kind: ClassVar[str] = "context_window"
    __slots__ = ("tokens", "model")
    tokens: int
    model: str | None

    def __init__(self, tokens: int, model: str | None = None) -> None:
        _put(self, "tokens", tokens)
        _put(self, "model", model)


class TurnEnd(Event):
    kind: ClassVar[str] = "turn_end"
    __slots__ = ("is_error", "result", "error", "provider_cost_usd")
    is_error: bool
    result: str
    error: str | None
    provider_cost_usd: float | None
    """Cost as the provider CLI itself reports it (Claude: cumulative per session)."""

    def __init__(
        self,
        is_error: bool = False,
        result: str = "",
        error: str | None = None,
        provider_cost_usd: float | None = None,
    ) -> None:
        _put(self, "is_error", is_error)
        _put(self, "result", result)
        _put(self, "error", error)
        _put(self, "provider_cost_usd", provider_cost_usd)


class Compaction(Event):
    kind: ClassVar[str] = "compaction"
    __slots__ = ("trigger", "pre_tokens", "post_tokens")
    trigger: str | None
    pre_tokens: int | None
    post_tokens: int | None

    def __init__(
        self,
        trigger: str | None = None,
        pre_tokens: int | None = None,
        post_tokens: int | None = None,
    ) -> None:
        _put(self, "trigger", trigger)
        _put(self, "pre_tokens", pre_tokens)
        _put(self, "post_tokens", post_tokens)


class RateWindow(Record):
    """One plan limit's window as the CLI last read it: how much is used, and when the window starts again."""

    __slots__ = ("used_percent", "resets_at")
    used_percent: float
    """0 to 100 (the CLI caps it at 100)."""
    resets_at: int | None
    """Unix seconds; None: the CLI did not say."""

    def __init__(self, used_percent: float, resets_at: int | None = None) -> None:
        _put(self, "used_percent", used_percent)
        _put(self, "resets_at", resets_at)

    def as_dict(self) -> dict[str, Any]:
        return {"used_percent": self.used_percent, "resets_at": self.resets_at}


class RateLimits(Event):
    """The subscription's plan limits, as the CLI read them from the API's replies (Claude Code: the
    ``anthropic-ratelimit-unified-*`` headers, for claude.ai logins and gateways; never for an API key)."""

    kind: ClassVar[str] = "rate_limits"
    __slots__ = ("five_hour", "seven_day")
    five_hour: RateWindow | None
    seven_day: RateWindow | None

    def __init__(self, five_hour: RateWindow | None = None, seven_day: RateWindow | None = None) -> None:
        _put(self, "five_hour", five_hour)
        _put(self, "seven_day", seven_day)

    def as_dict(self) -> dict[str, Any]:
        return {
            "event": self.kind,
            "five_hour": self.five_hour.as_dict() if self.five_hour else None,
            "seven_day": self.seven_day.as_dict() if self.seven_day else None,
        }


class CacheTtl(Event):
    """The prompt cache's lifetime the CLI asks the API for (Claude Code's status line, ``prompt_cache.ttl``)."""

    kind: ClassVar[str] = "cache_ttl"
    __slots__ = ("seconds",)
    seconds: int

    def __init__(self, seconds: int) -> None:
        _put(self, "seconds", seconds)


class PermissionRequest(Event):
    kind: ClassVar[str] = "permission_request"
    __slots__ = ("request_id", "tool_name", "tool_input")
    request_id: str
    tool_name: str
    tool_input: dict[str, Any]

    def __init__(self, request_id: str, tool_name: str, tool_input: dict[str, Any] | None = None) -> None:
        _put(self, "request_id", request_id)
        _put(self, "tool_name", tool_name)
        _put(self, "tool_input", {} if tool_input is None else tool_input)


class ToolGate(Event):
    """The CLI holds a tool until agentlaunch answers (its PreToolUse hook, asked while a budget applies).

    ``call_open``: the model call that asked for the tool has not reported its final usage yet, so the
    answer waits for it (the budget is checked with that call counted).
    """

    kind: ClassVar[str] = "tool_gate"
    __slots__ = ("request_id", "call_open")
    request_id: str
    call_open: bool

    def __init__(self, request_id: str, call_open: bool = False) -> None:
        _put(self, "request_id", request_id)
        _put(self, "call_open", call_open)


class Warning(Event):
    kind: ClassVar[str] = "warning"
    __slots__ = ("message", "retry")
    message: str
    retry: str | None
    """Set when the CLI is trying a failed API call again: the cause and the attempt (``529 overloaded, attempt 3/10``)."""

    def __init__(self, message: str, retry: str | None = None) -> None:
        _put(self, "message", message)
        _put(self, "retry", retry)


class Diagnostic(Event):
    """A line the provider printed that is not one of its JSON events."""

    kind: ClassVar[str] = "diagnostic"
    __slots__ = ("line",)
    line: str

    def __init__(self, line: str) -> None:
        _put(self, "line", line)


class Unknown(Event):
    """A JSON event of a type this version of agentlaunch does not know."""

    kind: ClassVar[str] = "unknown"
    __slots__ = ("type",)
    type: str

    def __init__(self, type: str) -> None:
        _put(self, "type", type)


# What `agentlaunch run --json` prints, one JSON object a line, by its "event" name, with what it means.
# Every event class but Unknown reaches the JSON lines (Unknown becomes a one-time note on stderr).
# The docs' "--json events" section lists exactly these (tests/test_json_events.py checks both ways).
JSON_EVENTS: dict[str, str] = {
    "session": "the CLI confirmed the session: its id, model, working directory and CLI version",
    "text_delta": "a piece of the answer as it streams (Claude Code, Gemini CLI)",
    "text": "a whole block of the answer that did not stream: Codex CLI always, Claude Code for a call without deltas",
    "tool_use": "the model called a tool: its id, name and a one-line summary of the input",
    "tool_result": "what the tool returned, summarized, and whether it failed",
    "usage": "exactly one model call's tokens (input is the uncached part), its model and call id",
    "output_final": "a call's final output token count, arriving after its usage event: replaces that call's output",
    "context_window": "the model's context window, as the provider reported it",
    "cache_ttl": "the prompt cache's lifetime in seconds the CLI asks for (300 or 3600; Claude Code's interface)",
    "rate_limits": "the plan's 5-hour and 7-day limits (used_percent, resets_at in unix seconds), as the CLI read them",
    "tool_gate": "with a budget, Claude Code holds each tool until agentlaunch has checked the budget (then allowed or stopped)",
    "compaction": "the CLI compacted the conversation: trigger and tokens before and after",
    "permission_request": "Claude Code asks whether a tool may run (answered by the person, or denied headless)",
    "warning": "the provider reported a problem it recovers from (a retried API call, say)",
    "diagnostic": "a line the CLI printed that is not one of its JSON events",
    "turn_end": "the turn is over: whether it failed, the result text or error, the CLI's own cost figure",
}
