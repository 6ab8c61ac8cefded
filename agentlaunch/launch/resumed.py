"""A resumed session's figures before its first new call, and what it will not get of an edit.

It reads the launch through :class:`ResumedLaunch`, the few things it needs, never the whole ``Launch``
(which owns it: :mod:`agentlaunch.launch.session` calls it at the start).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from agentlaunch.definitions.fingerprint import held_notice
from agentlaunch.errors import AgentlaunchError
from agentlaunch.usage.pricing import format_cost

if TYPE_CHECKING:
    from agentlaunch.launch.identity import ForkSource
    from agentlaunch.usage.call_meter import CallMeter
    from agentlaunch.usage.meter import Meter
    from agentlaunch.usage.store import Store


class HeldPlan(Protocol):
    """How the CLI was started, as far as it matters here: the files its resumed session will not get (read-only)."""

    @property
    def held(self) -> Sequence[str]: ...


class ResumedLaunch(Protocol):
    """What a resumed session's figures and its notice read of the launch (all read-only), and where the notice goes."""

    @property
    def store(self) -> Store: ...
    @property
    def session_id(self) -> str: ...
    @property
    def calls(self) -> CallMeter: ...
    @property
    def meter(self) -> Meter: ...
    @property
    def plan(self) -> HeldPlan | None: ...
    @property
    def fork(self) -> ForkSource | None: ...

    def notice(self, message: str) -> None: ...


def resume_figures(launch: ResumedLaunch) -> None:
    """Context, cost and cache warmth from the session's stored calls (``status`` after ``up --resume``)."""
    try:
        stored = launch.store.calls_for_session(launch.session_id)
    except AgentlaunchError:  # a store that cannot be read now: the figures start at the next call, as before
        return
    launch.calls.resume(stored)


def say_held(launch: ResumedLaunch) -> None:
    """One line when the resumed session will not get an edit of its instructions (its CLI re-sends its record)."""
    if launch.plan is None or not launch.plan.held:
        return
    cache = launch.meter.cache
    rewrite = ""
    if cache is not None and cache.context:
        cost = f", ~{format_cost(cache.cold_usd)}" if cache.cold_usd is not None else ""
        rewrite = f" (its next call writes the conversation's ~{cache.context:,} tokens to the cache again{cost})"
    fork = launch.fork.session_id if launch.fork is not None else None
    launch.notice(held_notice(launch.plan.held, launch.session_id, rewrite, forked_from=fork) or "")
