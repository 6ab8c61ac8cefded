"""The usage store's rows as Python values: a call, a session, a report group.

Times are aware UTC datetimes here and unix seconds (REAL) in the file.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agentlaunch.datarecord import datarecord, field
from agentlaunch.events import Usage


def now() -> datetime:
    return datetime.now(UTC)


def to_ts(value: datetime) -> float:
    """Unix seconds of an aware datetime; naive ones are refused (their zone is a guess)."""
    if value.tzinfo is None:
        raise ValueError(f"naive datetime {value!r}: give a timezone (UTC)")
    return value.timestamp()


def from_ts(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


@datarecord(frozen=True, slots=True)
class CallRecord:
    """One model call as stored: who made it, its usage, and its price if known.

    ``cost_usd`` None means unpriced (never $0); ``price_key`` says which price
    source priced it (see :class:`agentlaunch.usage.pricing.Price`).
    """

    agent: str
    provider: str
    usage: Usage
    session_id: str | None = None
    turn: int | None = None
    model_requested: str | None = None
    model_reported: str | None = None
    cost_usd: float | None = None
    price_key: str | None = None
    at: datetime = field(default_factory=now)
    id: int | None = None
    full_price_usd: float | None = None
    """What the call would have cost with every input token at the full input price (None: unpriced)."""

    @property
    def model(self) -> str | None:
        """The model the provider reported, else the one requested."""
        return self.model_reported or self.model_requested


@datarecord(frozen=True, slots=True)
class SessionRow:
    """A provider session as agentlaunch knows it (for resume and reports)."""

    session_id: str
    agent: str
    provider: str
    model: str | None
    working_dir: str
    started: datetime
    last_used: datetime
    ended: datetime | None
    exit_status: int | None
    turns: int
    provider_state: dict[str, Any] | None
    tmux_session: str | None = None  # where it ran in tmux (``tmux up``): its session, window and layout
    tmux_window: str | None = None
    tmux_layout: str | None = None
    title: str | None = None  # its first prompt, shortened


@datarecord(frozen=True, slots=True)
class ReportRow:
    """Usage summed over one group (a session, agent, model or local day).

    ``cost_usd`` is the sum over the group's *priced* calls, None when none was
    priced; ``unpriced_calls`` says how many calls that sum leaves out.
    """

    key: str
    calls: int
    input: int
    cache_write: int
    cache_read: int
    output: int
    reasoning: int
    cost_usd: float | None
    unpriced_calls: int
    first_at: datetime
    last_at: datetime
    cache_write_1h: int = 0
    """Of ``cache_write``, the tokens written with the 1-hour lifetime."""
    saved_usd: float | None = None
    """What caching saved over the priced calls: their cost at the full input price minus what they cost."""
    agent: str | None = None
    """The agent whose session it is (grouped by session only; ``a, b`` in the odd store where two agents share an id)."""

    @property
    def total_input(self) -> int:
        """All input tokens: uncached, cache writes and cache reads."""
        return self.input + self.cache_write + self.cache_read

    @property
    def cache_hit_ratio(self) -> float | None:
        """cache_read / total input; None when there was no input."""
        total = self.total_input
        return self.cache_read / total if total else None

    @property
    def full_price_share(self) -> float | None:
        """Uncached input / total input; None when there was no input."""
        total = self.total_input
        return self.input / total if total else None
