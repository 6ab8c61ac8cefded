"""Budgets that stop an agent: per session and per local day for one agent, per day for all agents, and a share
of the plan's 5-hour and 7-day limits.

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

``five_hour_percent`` and ``seven_day_percent`` (agent.yaml) stop the launch the same way once the CLI reports
that much of the subscription's window used (:mod:`agentlaunch.usage.plan_limits`): checked when it reports them,
after each call and before each held tool. A window past its reset time no longer counts; with an API key the
CLI reports no window, so these never stop it.

``on_spent: pause`` (agent.yaml's ``budget:``, else the global one's) pauses the launch instead of stopping it
(:meth:`LaunchView.pause`): the running turn is interrupted the same way, the CLI and its session stay. It resumes
when the limits read again (:meth:`BudgetGuard.relimit`) are no longer spent, or once the person confirms
(:meth:`BudgetGuard.confirm`): the guard then lets the calls of one more turn go, and pauses again at the first
check after that turn if the limit is still spent. A launch whose budget is spent before it starts is refused
(exit 6) either way: there is no session to keep.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Mapping
from typing import Any

from agentlaunch.clock import Clock
from agentlaunch.datarecord import datarecord, replace
from agentlaunch.errors import BudgetExceeded, StateError
from agentlaunch.events import RateLimits
from agentlaunch.sinks import LaunchView, PricedCall, SessionClosed, SinkEvent, StateChanged, TurnDone
from agentlaunch.token_usage import Usage
from agentlaunch.usage.plan_limits import current
from agentlaunch.usage.records import CallRecord, ReportRow
from agentlaunch.usage.store import InFlight, Store

HINTS = {
    "session_usd": "raise it for one launch with --budget-usd AMOUNT, or under budget: in agent.yaml",
    "daily_usd": "raise it under budget: in agent.yaml, or wait for tomorrow",
    "session_tokens": "raise it under budget: in agent.yaml, or start a new session",
    "daily_tokens": "raise it under budget: in agent.yaml, or wait for tomorrow",
    "all_agents_daily_usd": "raise it under budget: in the global config.yaml, or wait for tomorrow",
    "all_agents_daily_tokens": "raise it under budget: in the global config.yaml, or wait for tomorrow",
    "five_hour_percent": "raise five_hour_percent under budget: in agent.yaml, or wait for the 5-hour window to reset",
    "seven_day_percent": "raise seven_day_percent under budget: in agent.yaml, or wait for the 7-day window to reset",
}
PERCENT_KEYS = {"five_hour_percent": "five_hour", "seven_day_percent": "seven_day"}
WARN_AT = 0.8


@datarecord(frozen=True)
class Limits:
    """The limits of one launch; None: no such limit."""

    session_usd: float | None = None
    daily_usd: float | None = None
    session_tokens: int | None = None
    daily_tokens: int | None = None
    all_agents_daily_usd: float | None = None
    all_agents_daily_tokens: int | None = None
    five_hour_percent: float | None = None
    seven_day_percent: float | None = None
    on_spent: str = "stop"
    """``stop`` (end the launch, exit 6) or ``pause`` (keep its session until the person resumes it)."""

    @property
    def any(self) -> bool:
        return any(v is not None for k, v in vars(self).items() if k != "on_spent")

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
        five_hour_percent=own.get("five_hour_percent"),
        seven_day_percent=own.get("seven_day_percent"),
        on_spent=str(own.get("on_spent") or global_budget.get("on_spent") or "stop"),
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


@datarecord(frozen=True)
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
        self._holder = os.urandom(8).hex()  # this launch's reservation in the store (one launch, one row)
        self._reserved = False  # a call let go by check() that is not stored yet
        self._last = (0.0, 0)  # the last call's cost and tokens: what the next one is expected to cost
        self._confirmed = False  # the person confirmed a pause: the calls of one more turn go

    @property
    def pausing(self) -> bool:
        """A spent limit pauses the launch (``on_spent: pause``) rather than stopping it."""
        return self.limits.on_spent == "pause"

    def _spent_now(self, launch: LaunchView, error: BudgetExceeded) -> None:
        """A limit is spent: pause the launch (unless the person let this turn go on) or stop it."""
        if not self.pausing:
            launch.stop(error)
        elif not self._confirmed:
            launch.pause(error)

    def confirm(self) -> None:
        """The person resumes a pause with the limit still spent: the calls of one more turn go (until its end)."""
        self._confirmed = True

    def relimit(self, limits: Limits, launch: LaunchView) -> BudgetExceeded | None:
        """Take ``limits`` (agent.yaml or config.yaml read again); the first of them still spent, or None."""
        self.limits = replace(limits, on_spent=self.limits.on_spent)  # what a spent one does: as started
        for key, spent, limit, label in self._checks(launch):
            if spent >= limit:
                return self._exceeded(key, spent, limit, label, starting=False)
        return None

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
        return checks + self._plan_checks(launch)

    def _plan_checks(self, launch: LaunchView) -> list[tuple[str, float, float, str]]:
        """(key, used percent, limit, label) for each plan-limit budget whose window the CLI reported and that has
        not reset since (a subscription's; with an API key the CLI reports none, and these budgets never stop it)."""
        if self.limits.five_hour_percent is None and self.limits.seven_day_percent is None:
            return []
        running = current(launch.meter.rate_limits, self.clock.now())
        checks: list[tuple[str, float, float, str]] = []
        for key, name in PERCENT_KEYS.items():
            limit = getattr(self.limits, key)
            if limit is not None and name in running:
                what = "5-hour" if name == "five_hour" else "7-day"
                label = f"the {what} plan-limit budget of agent {launch.spec.name!r}"
                checks.append((key, running[name].used_percent, float(limit), label))
        return checks

    @staticmethod
    def _figure(key: str, value: float) -> str:
        if key.endswith("percent"):
            return f"{value:g}%"
        return _usd(value) if key.endswith("usd") else f"{int(value):,} tokens"

    def _exceeded(
        self, key: str, spent: float, limit: float, label: str, *, starting: bool, ahead: InFlight | None = None
    ) -> BudgetExceeded:
        what = f"{label} ({self._figure(key, limit)}) is spent: {self._figure(key, spent)} so far"
        if ahead is not None:
            more = ahead.usd if key.endswith("usd") else ahead.tokens
            calls = f"{ahead.calls} call{'s' if ahead.calls != 1 else ''}"
            what = (
                f"{label} ({self._figure(key, limit)}) is spent with the calls in flight: {self._figure(key, spent)} "
                f"so far and {self._figure(key, more)} in {calls} other agents are making"
            )
        if starting:
            message = f"budget: not starting: {what}"
        elif self.pausing:
            message = f"budget: paused the agent: {what}"
        else:
            message = f"budget: stopped the agent: {what}"
        return BudgetExceeded(message, hint=HINTS[key], spent=what)

    # -- the sink -----------------------------------------------------------------
    def event(self, event: SinkEvent, launch: LaunchView) -> None:
        if isinstance(event, StateChanged) and event.state == "starting" and not self._checked:
            self._checked = True
            self._before_start(launch)
        elif isinstance(event, PricedCall):
            self._release()  # stored by the recorder before this sink: it counts as spent now
            self._last = (event.record.cost_usd or 0.0, call_tokens(event.record.usage))
            self._after_call(event, launch)
        elif isinstance(event, TurnDone | SessionClosed):
            self._confirmed = False  # the confirmed turn is over: a limit still spent pauses the next
            self._release()  # a turn that ended without its call (failed, interrupted) has none in flight
        elif isinstance(event, RateLimits) and (self.limits.five_hour_percent or self.limits.seven_day_percent):
            self._against(self._plan_checks(launch), launch)  # the CLI reports them after the call it priced

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
        once a shared limit is spent, none of them makes another call. The calls other launches let go and
        did not store yet (their reservations) count too, at what each is expected to cost, against the
        limits they share with this one (all agents' daily, this agent's daily). The check and this launch's
        own reservation are one transaction of the store, so two checks never both miss each other's call.
        """
        error: BudgetExceeded | None = None
        with self.store.admission() as reserving:
            for key, spent, limit, label in self._checks(launch):
                ahead = self._others(launch, key) if reserving else InFlight()
                if spent >= limit:
                    error = self._exceeded(key, spent, limit, label, starting=False)
                elif ahead.calls and spent + (ahead.usd if key.endswith("usd") else ahead.tokens) >= limit:
                    error = self._exceeded(key, spent, limit, label, starting=False, ahead=ahead)
                if error is not None:
                    break
            if error is None and reserving:
                self.store.reserve(self._holder, launch.spec.name, *self._last)
                self._reserved = True
        if error is not None:
            self._spent_now(launch, error)

    def headroom(self, launch: LaunchView) -> list[tuple[str, float, float, str]]:
        """Each limit's (key, spent with the calls other launches let go and did not store yet, limit, label), as
        :meth:`check` counts them; none while the person lets one more turn go over a limit (:meth:`confirm`)."""
        if self._confirmed:
            return []
        checks = []
        for key, spent, limit, label in self._checks(launch):
            ahead = self._others(launch, key)
            checks.append((key, spent + (ahead.usd if key.endswith("usd") else ahead.tokens), limit, label))
        return checks

    def _others(self, launch: LaunchView, key: str) -> InFlight:
        """The calls in flight of the other launches that spend ``key``'s limit (none for a session's own)."""
        if key.startswith("all_agents"):
            return self.store.in_flight(self._holder)
        if key.startswith("daily"):
            return self.store.in_flight(self._holder, launch.spec.name)
        return InFlight()

    def _release(self) -> None:
        """This launch's call is stored, or none is coming: its reservation goes."""
        if self._reserved:
            self._reserved = False
            with contextlib.suppress(StateError):  # a store gone bad is the recorder's to report
                self.store.release(self._holder)

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
        self._against(self._checks(launch), launch)

    def _against(self, checks: list[tuple[str, float, float, str]], launch: LaunchView) -> None:
        """Stop the launch at the first limit spent; warn once at 80 % of each."""
        for key, spent, limit, label in checks:
            if spent >= limit:
                self._spent_now(launch, self._exceeded(key, spent, limit, label, starting=False))
                return
            if spent >= WARN_AT * limit and key not in self._warned:
                self._warned.add(key)
                launch.notice(f"budget: {label}: {self._figure(key, spent)} of {self._figure(key, limit)} spent (80 % reached)")
