"""A resumed session's figures before its first new call, and what it will not get of an edit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentlaunch.definitions.fingerprint import held_notice
from agentlaunch.errors import AgentlaunchError
from agentlaunch.usage.pricing import format_cost

if TYPE_CHECKING:
    from agentlaunch.launch.session import Launch


def resume_figures(launch: Launch) -> None:
    """Context, cost and cache warmth from the session's stored calls (``status`` after ``up --resume``)."""
    try:
        stored = launch.store.calls_for_session(launch.session_id)
    except AgentlaunchError:  # a store that cannot be read now: the figures start at the next call, as before
        return
    launch.calls.resume(stored)


def say_held(launch: Launch) -> None:
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
