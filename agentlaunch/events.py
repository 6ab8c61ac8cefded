"""Normalized events: the one vocabulary every provider parser speaks.

Parsers turn provider output lines into these; the meter, the view, the
JSON-lines sink and the usage store consume them. All are plain frozen data.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

MAX_TOKENS = 2**53
"""Every usage field is a count below this (exact in a float, far above any real call)."""


_put = object.__setattr__  # how a record's __init__ sets its fields (its own __setattr__ refuses)


class Record:
    """A plain frozen record: equal when of the same class with equal fields, hashable, never changed.

    Not a dataclass: creating the 20 record classes of this module as frozen slotted dataclasses took about a
    millisecond each at every launch's import (the generated methods are compiled then); a plain class
    costs a few microseconds. The fields are the ``__slots__`` of the class and of its bases, in order,
    and each class's ``__init__`` takes them in that order (:meth:`replace` and pickling rely on it).
    """

    __slots__ = ()
    field_names: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls) -> None:
        cls.field_names = tuple(name for klass in reversed(cls.__mro__) for name in vars(klass).get("__slots__", ()))

    def values(self) -> tuple[Any, ...]:
        """The fields' values, in order."""
        return tuple(getattr(self, name) for name in self.field_names)

    def fields(self) -> dict[str, Any]:
        """The fields by name, in order (nested records as they are)."""
        return {name: getattr(self, name) for name in self.field_names}

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes``."""
        unknown = set(changes) - set(self.field_names)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]!r}")
        return type(self)(*(changes.get(name, getattr(self, name)) for name in self.field_names))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.values() == other.values()

    def __hash__(self) -> int:
        return hash(self.values())

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{name}={getattr(self, name)!r}' for name in self.field_names)})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return type(self), self.values()



class Usage(Record):
    """Token usage of one model call, in one vocabulary for every provider.

    ``input`` is the *uncached* input only; Anthropic reports it that way,
    Codex and Gemini include cached reads in their input figure and the
    provider adapters subtract them. ``cache_write_1h`` is the part of
    ``cache_write`` written with the 1-hour lifetime (Anthropic bills it at 2x
    input against 1.25x for 5 minutes); the rest of ``cache_write`` is 5-minute.
    """

    __slots__ = ("input", "cache_write", "cache_read", "output", "reasoning", "cache_write_1h")
    input: int
    cache_write: int
    cache_read: int
    output: int
    reasoning: int
    cache_write_1h: int

    def __init__(
        self, input: int = 0, cache_write: int = 0, cache_read: int = 0, output: int = 0, reasoning: int = 0,
        cache_write_1h: int = 0,
    ) -> None:  # fmt: skip
        _put(self, "input", input)
        _put(self, "cache_write", cache_write)
        _put(self, "cache_read", cache_read)
        _put(self, "output", output)
        _put(self, "reasoning", reasoning)
        _put(self, "cache_write_1h", cache_write_1h)

    @property
    def context(self) -> int:
        """Tokens in the context window after this call's input was read."""
        return self.input + self.cache_write + self.cache_read

    @property
    def cache_write_5m(self) -> int:
        """The cache writes with the 5-minute lifetime (all of them unless the provider said otherwise)."""
        return self.cache_write - self.cache_write_1h

    @property
    def total_input(self) -> int:
        return self.input + self.cache_write + self.cache_read

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input + other.input,
            self.cache_write + other.cache_write,
            self.cache_read + other.cache_read,
            self.output + other.output,
            self.reasoning + other.reasoning,
            self.cache_write_1h + other.cache_write_1h,
        )

    def __sub__(self, other: Usage) -> Usage:
        return Usage(
            self.input - other.input,
            self.cache_write - other.cache_write,
            self.cache_read - other.cache_read,
            self.output - other.output,
            self.reasoning - other.reasoning,
            self.cache_write_1h - other.cache_write_1h,
        )

    def as_dict(self) -> dict[str, int]:
        return self.fields()


def uncached(usage: Usage) -> Usage:
    """``usage`` as it would be billed without a cache: every input token at the full input price."""
    return Usage(input=usage.total_input, output=usage.output, reasoning=usage.reasoning)


def usage_problem(usage: Usage) -> str | None:
    """Why ``usage`` is not a possible call's usage (a field that is not a count from 0 below
    :data:`MAX_TOKENS`), or None when it is."""
    for name, value in usage.fields().items():
        if type(value) is not int:
            return f"{name} is a {type(value).__name__}, not a token count"
        if value < 0:
            return f"{name} is negative"
        if value >= MAX_TOKENS:
            return f"{name} is 2**53 or more"
    if usage.cache_write_1h > usage.cache_write:
        return f"cache_write_1h ({usage.cache_write_1h:,}) is more than cache_write ({usage.cache_write:,}), which includes it"
    return None


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
        self, session_id: str, model: str | None = None, cwd: str | None = None, cli_version: str | None = None,
    ) -> None:  # fmt: skip
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
        self, is_error: bool = False, result: str = "", error: str | None = None, provider_cost_usd: float | None = None,
    ) -> None:  # fmt: skip
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
        self, trigger: str | None = None, pre_tokens: int | None = None, post_tokens: int | None = None,
    ) -> None:  # fmt: skip
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
