"""Budgets that stop an agent: per session and per local day for one agent, per day for all agents.

The limits come from ``budget:`` in agent.yaml (``session_usd``, ``daily_usd``,
``session_tokens``, ``daily_tokens``), ``--budget-usd`` on the command line
(the session's USD limit for one launch) and ``budget:`` in the global
settings, ``<config dir>/config.yaml`` (``daily_usd``, ``daily_tokens`` over every agent). What was
spent is always read from the usage store, so a budget survives restarts and
counts agents that run in parallel; the calls waiting in the store's journal
(kept while another process held the store's lock) count too.

:class:`BudgetGuard` is a sink. At the launch's first event (before the CLI
is started or any call is made) it refuses a launch whose budget is already
spent; after each priced call it warns once at 80 % of a limit and, at 100 %,
stops the launch: the running turn is interrupted and no new turn starts
(exit 6). Tokens are all the tokens of a call: input (uncached, cache writes
and reads) and output. A USD limit over calls that cannot be priced cannot be
enforced: without a token limit beside it, such a launch is refused, and an
unpriced call stops it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentlaunch.clock import Clock
from agentlaunch.errors import BudgetExceeded
from agentlaunch.events import Usage
from agentlaunch.sinks import LaunchView, PricedCall, SinkEvent, StateChanged
from agentlaunch.usage.records import CallRecord, ReportRow
from agentlaunch.usage.store import Store

HINTS = {
    "session_usd": "raise it for one launch with --budget-usd AMOUNT, or under budget: in agent.yaml",
    "daily_usd": "raise it under budget: in agent.yaml, or wait for tomorrow",
    "session_tokens": "raise it under budget: in agent.yaml, or start a new session",
    "daily_tokens": "raise it under budget: in agent.yaml, or wait for tomorrow",
    "all_agents_daily_usd": "raise it under budget: in the global config.yaml, or wait for tomorrow",
    "all_agents_daily_tokens": "raise it under budget: in the global config.yaml, or wait for tomorrow",
}
WARN_AT = 0.8


@dataclass(frozen=True)
class Limits:
    """The limits of one launch; None: no such limit."""

    session_usd: float | None = None
    daily_usd: float | None = None
    session_tokens: int | None = None
    daily_tokens: int | None = None
    all_agents_daily_usd: float | None = None
    all_agents_daily_tokens: int | None = None

    @property
    def any(self) -> bool:
        return any(v is not None for v in vars(self).values())

    @property
    def usd(self) -> bool:
        return any(v is not None for v in (self.session_usd, self.daily_usd, self.all_agents_daily_usd))

    @property
    def tokens(self) -> bool:
        return any(v is not None for v in (self.session_tokens, self.daily_tokens, self.all_agents_daily_tokens))


def limits_for(agent_budget: Mapping[str, Any] | None, global_budget: Mapping[str, Any], budget_usd: float | None) -> Limits:
    """The launch's limits: the agent's, ``--budget-usd`` over its session USD limit, and the global daily ones."""
    own = dict(agent_budget or {})
    if budget_usd is not None:
        own["session_usd"] = budget_usd
    return Limits(
        session_usd=own.get("session_usd"),
        daily_usd=own.get("daily_usd"),
        session_tokens=own.get("session_tokens"),
        daily_tokens=own.get("daily_tokens"),
        all_agents_daily_usd=global_budget.get("daily_usd"),
        all_agents_daily_tokens=global_budget.get("daily_tokens"),
    )


def check_budget_usd(value: float) -> float:
    """``--budget-usd``: a finite amount above 0, else a usage error."""
    from agentlaunch.errors import UsageError

    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"--budget-usd: must be an amount of US dollars above 0, got {value!r}")
    return value


def call_tokens(usage: Usage) -> int:
    """What a token budget counts of one call: all its input (uncached, cache writes and reads) and its output."""
    return usage.total_input + usage.output


@dataclass(frozen=True)
class Spent:
    usd: float
    tokens: int
    unpriced: int

    @classmethod
    def of(cls, rows: list[ReportRow]) -> Spent:
        """The sum over report rows (the priced calls' cost; every call's tokens)."""
        return cls(
            sum(r.cost_usd or 0.0 for r in rows), sum(r.total_input + r.output for r in rows), sum(r.unpriced_calls for r in rows)
        )

    def plus(self, calls: list[CallRecord]) -> Spent:
        """This and ``calls`` (the journal's calls, not in the store yet)."""
        return Spent(
            self.usd + sum(c.cost_usd or 0.0 for c in calls),
            self.tokens + sum(call_tokens(c.usage) for c in calls),
            self.unpriced + sum(c.cost_usd is None for c in calls),
        )


def _usd(value: float) -> str:
    """Dollars to the cent, or to 1/100 cent where cents would hide the figure ($0.0042)."""
    return f"${value:,.2f}" if value >= 1 or round(value, 2) == round(value, 6) else f"${value:.4f}"


class BudgetGuard:
    """The sink that enforces :class:`Limits` (see the module's docstring)."""

    def __init__(self, limits: Limits, store: Store, clock: Clock, *, priceable: bool) -> None:
        self.limits, self.store, self.clock, self.priceable = limits, store, clock, priceable
        self._checked = False
        self._warned: set[str] = set()

    # -- what was spent ---------------------------------------------------------
    def _spent(self, launch: LaunchView, scope: str) -> Spent:
        """What was spent in ``scope`` (``session``, ``daily``, ``all_agents_daily``), read from the store and its journal."""
        # Billed, kept while the store was locked: spent all the same. Read before the store, so a replay in
        # between counts a call twice (a budget stops early), never not at all.
        pending = self.store.pending_calls()
        if scope == "session":
            mine = [c for c in pending if c.session_id == launch.session_id]
            return Spent.of(self.store.usage_report("session", session=launch.session_id)).plus(mine)
        # "Today" is the local calendar day of the launch's clock; calls stamped later (a clock set back) count too.
        midnight = self.clock.now().replace(hour=0, minute=0, second=0, microsecond=0)
        agent = launch.spec.name if scope == "daily" else None
        mine = [c for c in pending if c.at >= midnight and (agent is None or c.agent == agent)]
        return Spent.of(self.store.usage_report("agent", agent=agent, since=midnight)).plus(mine)

    def _checks(self, launch: LaunchView) -> list[tuple[str, float, float, str]]:
        """(key, spent, limit, label) for every limit that is set."""
        spent: dict[str, Spent] = {}  # each scope read once, and only when one of its limits is set
        name = launch.spec.name
        checks: list[tuple[str, float, float, str]] = []
        table = (
            ("session_usd", "session", "usd", f"the session budget of agent {name!r}"),
            ("daily_usd", "daily", "usd", f"today's budget of agent {name!r}"),
            ("all_agents_daily_usd", "all_agents_daily", "usd", "today's budget for all agents"),
            ("session_tokens", "session", "tokens", f"the session token budget of agent {name!r}"),
            ("daily_tokens", "daily", "tokens", f"today's token budget of agent {name!r}"),
            ("all_agents_daily_tokens", "all_agents_daily", "tokens", "today's token budget for all agents"),
        )
        for key, scope, unit, label in table:
            limit = getattr(self.limits, key)
            if limit is not None:
                if scope not in spent:
                    spent[scope] = self._spent(launch, scope)
                    for line in self.store.skipped():  # a malformed row is left out of the sum, and named once
                        launch.notice(line)
                amount = spent[scope].usd if unit == "usd" else spent[scope].tokens
                checks.append((key, float(amount), float(limit), label))
        return checks

    @staticmethod
    def _figure(key: str, value: float) -> str:
        return _usd(value) if key.endswith("usd") else f"{int(value):,} tokens"

    def _exceeded(self, key: str, spent: float, limit: float, label: str, *, starting: bool) -> BudgetExceeded:
        what = f"{label} ({self._figure(key, limit)}) is spent: {self._figure(key, spent)} so far"
        if starting:
            message = f"budget: not starting: {what}"
        else:
            message = f"budget: stopped the agent: {what}"
        return BudgetExceeded(message, hint=HINTS[key])

    # -- the sink -----------------------------------------------------------------
    def event(self, event: SinkEvent, launch: LaunchView) -> None:
        if isinstance(event, StateChanged) and event.state == "starting" and not self._checked:
            self._checked = True
            self._before_start(launch)
        elif isinstance(event, PricedCall):
            self._after_call(event, launch)

    def _before_start(self, launch: LaunchView) -> None:
        if self.limits.usd and not self.limits.tokens and not self.priceable:
            model = launch.spec.model or "the provider's default model"
            raise BudgetExceeded(
                f"budget: not starting: a USD budget cannot be enforced, because calls of {model} cannot be priced",
                hint="add a token budget (session_tokens or daily_tokens), or give the model's rates in pricing.yaml",
            )
        for key, spent, limit, label in self._checks(launch):
            if key.startswith("session") and not launch.resumed:
                continue  # a new session has spent nothing
            if spent >= limit:
                raise self._exceeded(key, spent, limit, label, starting=True)

    def check(self, launch: LaunchView) -> None:
        """Before the launch's next call (a new turn, a tool held for the answer): stop it when a limit is spent.

        What was spent is read from the store again, so the calls of agents running beside this one count:
        once a shared limit is spent, none of them makes another call.
        """
        for key, spent, limit, label in self._checks(launch):
            if spent >= limit:
                launch.stop(self._exceeded(key, spent, limit, label, starting=False))
                return

    def _after_call(self, event: PricedCall, launch: LaunchView) -> None:
        if event.record.cost_usd is None and self.limits.usd and not self.limits.tokens:
            launch.stop(
                BudgetExceeded(
                    f"budget: stopped the agent: a call of {event.record.model or 'an unknown model'} could not be "
                    "priced, so the USD budget cannot be enforced",
                    hint="add a token budget (session_tokens or daily_tokens), or give the model's rates in pricing.yaml",
                )
            )
            return
        for key, spent, limit, label in self._checks(launch):
            if spent >= limit:
                launch.stop(self._exceeded(key, spent, limit, label, starting=False))
                return
            if spent >= WARN_AT * limit and key not in self._warned:
                self._warned.add(key)
                launch.notice(f"budget: {label}: {self._figure(key, spent)} of {self._figure(key, limit)} spent (80 % reached)")

