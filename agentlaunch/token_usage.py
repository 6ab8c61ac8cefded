"""Token usage of one model call, in one vocabulary for every provider (:class:`Usage`), and what a possible one is."""

from __future__ import annotations

from agentlaunch.datarecord import datarecord, fields

MAX_TOKENS = 2**53
"""Every usage field is a count below this (exact in a float, far above any real call)."""


@datarecord(frozen=True, slots=True)
class Usage:
    """Token usage of one model call, in one vocabulary for every provider.

    ``input`` is the *uncached* input only; Anthropic reports it that way,
    Codex and Gemini include cached reads in their input figure and the
    provider adapters subtract them. ``cache_write_1h`` is the part of
    ``cache_write`` written with the 1-hour lifetime (Anthropic bills it at 2x
    input against 1.25x for 5 minutes); the rest of ``cache_write`` is 5-minute.
    """

    input: int = 0
    cache_write: int = 0
    cache_read: int = 0
    output: int = 0
    reasoning: int = 0
    cache_write_1h: int = 0

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
        return {f.name: getattr(self, f.name) for f in fields(self)}


def uncached(usage: Usage) -> Usage:
    """``usage`` as it would be billed without a cache: every input token at the full input price."""
    return Usage(input=usage.total_input, output=usage.output, reasoning=usage.reasoning)


def usage_problem(usage: Usage) -> str | None:
    """Why ``usage`` is not a possible call's usage (a field that is not a count from 0 below
    :data:`MAX_TOKENS`), or None when it is."""
    for name, value in usage.as_dict().items():
        if type(value) is not int:
            return f"{name} is a {type(value).__name__}, not a token count"
        if value < 0:
            return f"{name} is negative"
        if value >= MAX_TOKENS:
            return f"{name} is 2**53 or more"
    if usage.cache_write_1h > usage.cache_write:
        return f"cache_write_1h ({usage.cache_write_1h:,}) is more than cache_write ({usage.cache_write:,}), which includes it"
    return None
