"""Wiring a launch as ``agentlaunch run`` does: the collaborators :class:`~agentlaunch.launch.session.Launch` is given."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentlaunch import paths
from agentlaunch.clock import Clock, SystemClock
from agentlaunch.datarecord import datarecord, replace
from agentlaunch.definitions.settings import Settings, load_settings
from agentlaunch.definitions.spec import AgentSpec, load_agent, resolve_working_dir
from agentlaunch.launch.early import prespawn
from agentlaunch.launch.identity import choose_session
from agentlaunch.launch.options import LaunchOptions
from agentlaunch.launch.reaper import Reaper
from agentlaunch.launch.session import Launch
from agentlaunch.launch.signals import Signals
from agentlaunch.providers import get_adapter
from agentlaunch.providers.base import Adapter
from agentlaunch.sinks import Sink
from agentlaunch.token_usage import Usage
from agentlaunch.usage.budget import BudgetGuard
from agentlaunch.usage.meter import Meter
from agentlaunch.usage.pricing import Pricer
from agentlaunch.usage.recorder import UsageRecorder, tmux_place
from agentlaunch.usage.store import Store


def needs_you_sink(spec: AgentSpec, settings: Settings) -> Sink:
    """The "needs you" sink with agent.yaml's notify settings, else the global ones (``config.yaml``)."""
    from agentlaunch.live.needs_you import DEFAULT_AFTER, NeedsYou, desktop_notifier

    after = spec.notify_after if spec.notify_after is not None else settings.notify_after
    notify = spec.notify or settings.notify
    return NeedsYou(
        notify=notify,
        after=DEFAULT_AFTER if after is None else after,
        bell=None if settings.bell else False,
        desktop=None if notify else desktop_notifier(settings.desktop_notify),  # a notify command replaces it
    )


@datarecord(frozen=True)
class AgentWorktree:
    """The worktree a launch runs in: its path, the notice when made now, and its setup's record (None: no setup)."""

    path: Path
    made: str | None
    setup: dict[str, Any] | None
    fresh: bool  # made or set up by this launch: a CLI started early (before it) is not adopted


def agent_worktree(spec: AgentSpec, start: Path, state_dir: Path, settings: Settings) -> AgentWorktree:
    """The agent's git worktree for the repository of ``start`` (made on first use, then set up: ``worktree_setup``)."""
    from agentlaunch.worktrees import git_worktree as worktree
    from agentlaunch.worktrees import setup_commands as worktree_setup

    base = settings.worktrees_dir or state_dir / "worktrees"

    def pending(entry: worktree.Worktree) -> None:
        if spec.worktree_setup:
            worktree_setup.mark_pending(state_dir, spec.name, Path(entry.path))

    entry, created = worktree.ensure_entry(spec.name, start, base, state_dir, spec.worktree_branch, on_create=pending)
    path = Path(entry.path)
    place = worktree_setup.Place(spec.name, path, Path(entry.repo), entry.branch)
    record, ran = worktree_setup.ensure_setup(spec.worktree_setup, place, state_dir, created=created, report=report_setup)
    made = f"created git worktree {path} on branch {entry.branch}" if created else None
    return AgentWorktree(path, made, record.shown() if record is not None else None, created or ran)


def report_setup(message: str) -> None:
    """A line of the worktree's setup, on stderr as it happens (the launch and its views do not exist yet)."""
    from agentlaunch.visible import visible

    with contextlib.suppress(OSError, ValueError):
        print(f"agentlaunch: {visible(message)}", file=sys.stderr, flush=True)


def build_launch(options: LaunchOptions, views: Callable[[Meter], Sequence[Sink]], *, status: bool = True) -> Launch:
    """A launch of ``options.agent`` whose events go to the usage store, ``views(meter)`` and the live status record.

    The recorder comes first (a call is stored before it is shown), the status
    writer last. The process becomes a child subreaper here, so that whatever
    the CLI starts comes back to agentlaunch to be ended.
    """
    state_dir = paths.state_dir()
    spec = load_agent(options.agents_dir, options.agent, state_dir)
    if options.extra_flags:
        spec = replace(spec, provider_flags=(*spec.provider_flags, *options.extra_flags))
    adapter = get_adapter(spec.provider)
    working_dir = resolve_working_dir(spec, options.working_dir, state_dir)
    settings = load_settings()  # <config dir>/config.yaml: read once per launch (no YAML import without the file)
    place: AgentWorktree | None = None
    if options.worktree or spec.worktree:
        place = agent_worktree(spec, working_dir, state_dir, settings)
        working_dir = place.path
    meter = Meter(
        configured_window=spec.context_window, buffer=spec.compaction_buffer, model=spec.model, compaction_at=spec.compaction_at
    )
    meter.cache_ttl = {"5m": 300, "1h": 3600}.get(spec.cache_ttl or "")  # what the CLI is told to ask for
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
    if options.interactive:  # a person is there: tell them when the agent needs them (a script knows when it ends)
        # Before the status record: once a record says "asking" or "stalled", its pane's flag is already up.
        sinks.append(needs_you_sink(spec, settings))
    if status:
        from agentlaunch.live.status import StatusWriter

        setup = {"worktree_setup": place.setup} if place is not None and place.setup is not None else None
        sinks.append(StatusWriter(extra=setup))  # the live status record (agentlaunch status, tmux)
    if os.environ.get("AGENTLAUNCH_OTEL") or settings.otel:
        # A flag and a thread; the exporter itself is imported by that thread once the CLI runs.
        from agentlaunch.usage.otel.sink import OtelExportSink, export_enabled

        if export_enabled(settings.otel):
            sinks.append(OtelExportSink(paths.store_path(), spec.id))  # last: its bounded exit wait follows the views
    if settings.ready_timeout is not None:
        options = replace(options, ready_timeout=settings.ready_timeout)
    if settings.stall_timeout is not None:
        options = replace(options, stall_timeout=settings.stall_timeout)
    pending = take_prespawned(options, adapter)
    if pending is not None and place is not None and place.fresh:
        # A CLI started early ran before the worktree was made or set up: never adopted.
        prespawn.discard(pending)
        pending = None
    try:
        session = choose_session(
            spec,
            adapter,
            store,
            working_dir,
            resume=options.resume,
            continue_last=options.continue_last,
            new_id=pending.session_id if pending else None,
            fork=options.fork,
        )
        launch = Launch(
            options,
            spec=spec,
            adapter=adapter,
            store=store,
            pricer=pricer,
            meter=meter,
            sinks=sinks,
            state_dir=state_dir,
            working_dir=working_dir,
            clock=clock,
            session=session,
            prespawned=pending,
            signals=Signals(),
            reaper=Reaper(subreaper=True),
        )
        if place is not None and place.made:
            launch.notice(place.made)
        return launch
    except BaseException:
        prespawn.discard(pending)
        store.close()
        raise


def take_prespawned(options: LaunchOptions, adapter: Adapter) -> prespawn.Prespawned | None:
    """The CLI the entry point started early, when it is the kind this launch starts (a headless persistent CLI, a
    per-turn CLI's first turn, the interface of a new native session or the app-server Codex's runs on); any other
    is killed now, before it reads its first prompt (a per-turn CLI's: before its stdin ends)."""
    pending = prespawn.take()
    if pending is None:
        return None
    new = not (options.resume or options.continue_last or options.fork)
    if pending.app_server:
        wanted = new and options.native and getattr(adapter, "remote_interface", False)
    elif pending.interface:
        wanted = new and options.native and adapter.early_interface
    else:
        # A headless persistent CLI, or a per-turn one whose first turn may start early (agentlaunch.launch.early.early_turn).
        wanted = (
            new
            and not options.interactive
            and pending.per_turn == (not adapter.persistent)
            and (adapter.persistent or adapter.early_turn)
        )
    if not wanted:
        prespawn.discard(pending)
        return None
    return pending


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
