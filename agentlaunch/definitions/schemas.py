"""The pydantic schemas of the files people write: ``agent.yaml`` and ``pricing.yaml`` entries.

Kept apart so that only a launch that must validate pays for importing
pydantic (about a tenth of a second): :mod:`agentlaunch.definitions.spec` remembers what
this schema accepted (see ``agent_yaml.validated_config``), and a pricing.yaml is
rare.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Provider = Literal["claude", "codex", "gemini", "fake"]
Delivery = Literal["file", "system-prompt", "developer-instructions", "gemini-home"]
PrefixOrder = Literal["own-first", "shared-first"]


class BudgetYaml(BaseModel):
    """``budget:`` in agent.yaml: limits in US dollars, in tokens and in percent of the plan's 5-hour and 7-day
    limits (each optional, each above 0; a percentage at most 100), and what a spent one does (``on_spent``: ``stop``,
    the default, ends the agent; ``pause`` interrupts its turn and keeps its session for the person to resume)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    session_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    daily_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    session_tokens: int | None = Field(default=None, gt=0)
    daily_tokens: int | None = Field(default=None, gt=0)
    five_hour_percent: float | None = Field(default=None, gt=0, le=100, allow_inf_nan=False)
    seven_day_percent: float | None = Field(default=None, gt=0, le=100, allow_inf_nan=False)
    on_spent: Literal["stop", "pause"] | None = None


class AgentYaml(BaseModel):
    """The keys of ``agent.yaml``; anything else is an error."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    provider: Provider
    display: str | None = None
    id: str | None = None
    model: str | None = None
    soul: str | None = None
    instructions: str | None = None
    bundles: list[str] = Field(default_factory=list)
    skills: list[str] | Literal["all"] = Field(default_factory=list)
    working_dir: str | None = None
    accounts: list[str] = Field(default_factory=list)
    peers: list[str] | None = None
    startup: str | None = None
    provider_flags: list[str] = Field(default_factory=list)
    command: str | None = None
    context_window: int | None = Field(default=None, gt=0)
    compaction_buffer: int = Field(default=33000, ge=0)
    compaction_at: int | None = Field(default=None, gt=0)
    cache_ttl: Literal["5m", "1h"] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    permission_mode: str | None = None
    allowed_tools: list[str] = Field(default_factory=list)
    delivery: Delivery | None = None
    prefix_order: PrefixOrder = "own-first"
    notify: list[str] | str | None = None
    notify_after: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    worktree: bool = False
    worktree_branch: str | None = None
    worktree_setup: list[str] = Field(default_factory=list)
    budget: BudgetYaml | None = None


class RateEntry(BaseModel):
    """One pricing.yaml entry, as written by a person: USD per million tokens."""

    model_config = ConfigDict(extra="forbid", strict=True)

    input: float = Field(ge=0, allow_inf_nan=False)
    output: float = Field(ge=0, allow_inf_nan=False)
    cache_read: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    cache_write: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    cache_write_1h: float | None = Field(default=None, ge=0, allow_inf_nan=False)
