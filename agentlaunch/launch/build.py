"""Wiring a launch as ``agentlaunch run`` does: the collaborators :class:`~agentlaunch.launch.session.Launch` is given."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from agentlaunch import paths
from agentlaunch.clock import Clock, SystemClock
from agentlaunch.definitions.settings import Settings, load_settings
from agentlaunch.definitions.spec import AgentSpec, load_agent, resolve_working_dir
from agentlaunch.events import Usage
from agentlaunch.launch import prespawn
from agentlaunch.launch.identity import choose_session
from agentlaunch.launch.reaper import Reaper
from agentlaunch.launch.session import Launch, LaunchOptions
from agentlaunch.launch.signals import Signals
from agentlaunch.providers import get_adapter
from agentlaunch.sinks import Sink
from agentlaunch.usage.budget import BudgetGuard
from agentlaunch.usage.meter import Meter
from agentlaunch.usage.pricing import Pricer
from agentlaunch.usage.recorder import UsageRecorder, tmux_place
from agentlaunch.usage.store import Store


def needs_you_sink(spec: AgentSpec, settings: Settings) -> Sink:
    """The "needs you" sink with agent.yaml's notify settings, else the global ones (``config.yaml``)."""
    from agentlaunch.live.needs_you import DEFAULT_AFTER, NeedsYou

    after = spec.notify_after if spec.notify_after is not None else settings.notify_after
    return NeedsYou(
        notify=spec.notify or settings.notify,
        after=DEFAULT_AFTER if after is None else after,
        bell=None if settings.bell else False,
    )


def agent_worktree(spec: AgentSpec, start: Path, state_dir: Path, settings: Settings) -> tuple[Path, str | None]:
    """The agent's git worktree for the repository of ``start`` (made on first use); a notice when made now."""
    from agentlaunch import worktree

    base = settings.worktrees_dir or state_dir / "worktrees"
    path, created = worktree.ensure(spec.name, start, base, state_dir, spec.worktree_branch)
    branch = spec.worktree_branch or worktree.default_branch(spec.name)
    return path, f"created git worktree {path} on branch {branch}" if created else None


def build_launch(options: LaunchOptions, views: Callable[[Meter], Sequence[Sink]], *, status: bool = True) -> Launch:
    """A launch of ``options.agent`` whose events go to the usage store, ``views(meter)`` and the live status record.

    The recorder comes first (a call is stored before it is shown), the status
    writer last. The process becomes a child subreaper here, so that whatever
    the CLI starts comes back to agentlaunch to be ended.
    """
    state_dir = paths.state_dir()
    spec = load_agent(options.agents_dir, options.agent, state_dir)
    adapter = get_adapter(spec.provider)
    working_dir = resolve_working_dir(spec, options.working_dir, state_dir)
    settings = load_settings()  # <config dir>/config.yaml: read once per launch (no YAML import without the file)
    made: str | None = None
    if options.worktree or spec.worktree:
        working_dir, made = agent_worktree(spec, working_dir, state_dir, settings)
    meter = Meter(configured_window=spec.context_window, buffer=spec.compaction_buffer, model=spec.model)
    store = Store.open(paths.store_path())
    pricer = Pricer(agents_dir=spec.agents_dir)
    clock = SystemClock()
    sinks: list[Sink] = [UsageRecorder(store, tmux_place())]
    try:
        guard = budget_guard(spec, options, store, pricer, clock, settings)
    except BaseException:
        store.close()
        raise
    if guard is not None:
        sinks.append(guard)  # after the recorder: it reads what was spent from the store
    sinks.extend(views(meter))
    if status:
        from agentlaunch.live.status import StatusWriter

        sinks.append(StatusWriter())  # the live status record (agentlaunch status, tmux)
    if options.interactive:  # a person is there: tell them when the agent needs them (a script knows when it ends)
        sinks.append(needs_you_sink(spec, settings))
    if os.environ.get("AGENTLAUNCH_OTEL") or settings.otel:
        # A flag and a thread; the exporter itself is imported by that thread once the CLI runs.
        from agentlaunch.usage.otel_sink import OtelExportSink, export_enabled

        if export_enabled(settings.otel):
            sinks.append(OtelExportSink(paths.store_path(), spec.id))  # last: its bounded exit wait follows the views
    if settings.ready_timeout is not None:
        options = dataclasses.replace(options, ready_timeout=settings.ready_timeout)
    fresh = not (options.resume or options.continue_last or options.fork or options.interactive)
    pending = prespawn.take() if fresh and adapter.persistent else None
    try:
        session = choose_session(
            spec, adapter, store, working_dir, resume=options.resume, continue_last=options.continue_last,
            new_id=pending.session_id if pending else None, fork=options.fork,
        )  # fmt: skip
        launch = Launch(
            options, spec=spec, adapter=adapter, store=store, pricer=pricer, meter=meter, sinks=sinks,
            state_dir=state_dir, working_dir=working_dir, clock=clock, session=session, prespawned=pending,
            signals=Signals(), reaper=Reaper(subreaper=True),
        )  # fmt: skip
        if made:
            launch.notice(made)
        return launch
    except BaseException:
        prespawn.discard(pending)
        store.close()
        raise


def budget_guard(
    spec: AgentSpec, options: LaunchOptions, store: Store, pricer: Pricer, clock: Clock, settings: Settings
) -> BudgetGuard | None:
    """The launch's budget guard, or None when no budget applies (agent.yaml, --budget-usd, the global settings)."""
    from agentlaunch.usage.budget import BudgetGuard, limits_for

    limits = limits_for(spec.budget, settings.budget, options.budget_usd)
    if not limits.any:
        return None
    priceable = spec.model is None or pricer.price(Usage(input=1, output=1), spec.provider, None, spec.model) is not None
    return BudgetGuard(limits, store, clock, priceable=priceable)
