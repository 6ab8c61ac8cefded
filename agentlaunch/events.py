"""Normalized events: the one vocabulary every provider parser speaks.

Parsers turn provider output lines into these; the meter, the view, the
JSON-lines sink and the usage store consume them. All are plain frozen data.
"""

from __future__ import annotations

from typing import Any, ClassVar

from agentlaunch.datarecord import datarecord, field, fields
from agentlaunch.token_usage import Usage


class Event:
    """Base of all normalized events; ``kind`` names the event in JSON output."""

    __slots__ = ()
    kind: ClassVar[str] = "event"

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"event": self.kind}
        for f in fields(self):
            value = getattr(self, f.name)
            data[f.name] = value.as_dict() if isinstance(value, Usage) else value
        return data


@datarecord(frozen=True, slots=True)
class SessionStarted(Event):
    kind: ClassVar[str] = "session"
    session_id: str
    model: str | None = None
    cwd: str | None = None
    cli_version: str | None = None


@datarecord(frozen=True, slots=True)
class TextDelta(Event):
    """A piece of assistant text as it streams."""

    kind: ClassVar[str] = "text_delta"
    text: str


@datarecord(frozen=True, slots=True)
class ThinkingDelta(Event):
    """The model's thinking: a piece of Claude Code's thinking block as it streams, or Codex's reasoning summary once
    its item is done; never part of the answer."""

    kind: ClassVar[str] = "thinking_delta"
    text: str


@datarecord(frozen=True, slots=True)
class Text(Event):
    """A whole block of assistant text (after its deltas, or instead of them)."""

    kind: ClassVar[str] = "text"
    text: str


@datarecord(frozen=True, slots=True)
class ToolUse(Event):
    kind: ClassVar[str] = "tool_use"
    tool_id: str
    name: str
    summary: str = ""


@datarecord(frozen=True, slots=True)
class ToolResult(Event):
    kind: ClassVar[str] = "tool_result"
    tool_id: str
    is_error: bool = False
    summary: str = ""


@datarecord(frozen=True, slots=True)
class CallUsage(Event):
    """Usage of one model call, never a running total.

    Codex and Gemini print only turn sums; their adapters split them into
    calls from the CLI's own files, and a turn whose calls cannot be read
    that way stays one CallUsage carrying its sum.
    """

    kind: ClassVar[str] = "usage"
    usage: Usage
    model: str | None = None
    call_id: str | None = None


@datarecord(frozen=True, slots=True)
class OutputFinal(Event):
    """The final output token count of the call ``call_id`` (streamed late by Claude)."""

    kind: ClassVar[str] = "output_final"
    output: int
    call_id: str | None = None


@datarecord(frozen=True, slots=True)
class ContextWindow(Event):
    """The provider told us the model's context window."""

    kind: ClassVar[str] = "context_window"
    tokens: int
    model: str | None = None


@datarecord(frozen=True, slots=True)
class TurnEnd(Event):
    kind: ClassVar[str] = "turn_end"
    is_error: bool = False
    result: str = ""
    error: str | None = None
    provider_cost_usd: float | None = None
    """Cost as the provider CLI itself reports it (Claude: cumulative per session)."""


@datarecord(frozen=True, slots=True)
class Compaction(Event):
    kind: ClassVar[str] = "compaction"
    trigger: str | None = None
    pre_tokens: int | None = None
    post_tokens: int | None = None


@datarecord(frozen=True, slots=True)
class RateWindow:
    """One plan limit's window as the CLI last read it: how much is used, and when the window starts again."""

    used_percent: float
    """0 to 100 (the CLI caps it at 100)."""
    resets_at: int | None = None
    """Unix seconds; None: the CLI did not say."""

    def as_dict(self) -> dict[str, Any]:
        return {"used_percent": self.used_percent, "resets_at": self.resets_at}


@datarecord(frozen=True, slots=True)
class RateLimits(Event):
    """The subscription's plan limits, as the CLI read them from the API's replies (Claude Code: the
    ``anthropic-ratelimit-unified-*`` headers, for claude.ai logins and gateways; never for an API key)."""

    kind: ClassVar[str] = "rate_limits"
    five_hour: RateWindow | None = None
    seven_day: RateWindow | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "event": self.kind,
            "five_hour": self.five_hour.as_dict() if self.five_hour else None,
            "seven_day": self.seven_day.as_dict() if self.seven_day else None,
        }


@datarecord(frozen=True, slots=True)
class CacheTtl(Event):
    """The prompt cache's lifetime the CLI asks the API for (Claude Code's status line, ``prompt_cache.ttl``)."""

    kind: ClassVar[str] = "cache_ttl"
    seconds: int


@datarecord(frozen=True, slots=True)
class PermissionRequest(Event):
    kind: ClassVar[str] = "permission_request"
    request_id: str
    tool_name: str
    tool_input: dict[str, Any] = field(default_factory=dict)


@datarecord(frozen=True, slots=True)
class ToolGate(Event):
    """The CLI holds a tool until agentlaunch answers (its PreToolUse hook, asked while a budget applies).

    ``call_open``: the model call that asked for the tool has not reported its final usage yet, so the
    answer waits for it (the budget is checked with that call counted).
    """

    kind: ClassVar[str] = "tool_gate"
    request_id: str
    call_open: bool = False


@datarecord(frozen=True, slots=True)
class Warning(Event):
    kind: ClassVar[str] = "warning"
    message: str
    retry: str | None = None
    """Set when the CLI is trying a failed API call again: the cause and the attempt (``529 overloaded, attempt 3/10``)."""


@datarecord(frozen=True, slots=True)
class Diagnostic(Event):
    """A line the provider printed that is not one of its JSON events."""

    kind: ClassVar[str] = "diagnostic"
    line: str


@datarecord(frozen=True, slots=True)
class Unknown(Event):
    """A JSON event of a type this version of agentlaunch does not know."""

    kind: ClassVar[str] = "unknown"
    type: str


# What `agentlaunch run --json` prints, one JSON object a line, by its "event" name, with what it means.
# Every event class but Unknown reaches the JSON lines (Unknown becomes a one-time note on stderr).
# The docs' "--json events" section lists exactly these (tests/test_json_events.py checks both ways).
JSON_EVENTS: dict[str, str] = {
    "session": "the CLI confirmed the session: its id, model, working directory and CLI version",
    "text_delta": "a piece of the answer as it streams (Claude Code, Gemini CLI)",
    "thinking_delta": "the model's thinking (Claude Code's as it streams, Codex's reasoning summary), never the answer",
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
