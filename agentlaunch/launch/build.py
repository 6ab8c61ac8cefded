"""Wiring a launch as ``agentlaunch run`` does: the collaborators :class:`~agentlaunch.launch.session.Launch` is given."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from agentlaunch import paths
from agentlaunch.definitions.spec import load_agent, resolve_working_dir
from agentlaunch.launch import prespawn
from agentlaunch.launch.loop import SystemClock
from agentlaunch.launch.reaper import Reaper
from agentlaunch.launch.session import Launch, LaunchOptions
from agentlaunch.launch.signals import Signals
from agentlaunch.launch.sink import Sink
from agentlaunch.providers import get_adapter
from agentlaunch.usage.meter import Meter
from agentlaunch.usage.pricing import Pricer
from agentlaunch.usage.recorder import UsageRecorder
from agentlaunch.usage.store import Store


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
    meter = Meter(configured_window=spec.context_window, buffer=spec.compaction_buffer, model=spec.model)
    store = Store.open(paths.store_path())
    sinks: list[Sink] = [UsageRecorder(store), *views(meter)]
    if status:
        from agentlaunch.live.status import StatusWriter

        sinks.append(StatusWriter())  # the live status record (agentlaunch status, tmux)
    if os.environ.get("AGENTLAUNCH_OTEL"):
        # A flag and a thread; the exporter itself is imported by that thread once the CLI runs.
        from agentlaunch.usage.otel_sink import OtelExportSink, export_enabled

        if export_enabled():
            sinks.append(OtelExportSink(paths.store_path(), spec.id))  # last: its bounded exit wait follows the views
    fresh = not (options.resume or options.continue_last or options.interactive)
    pending = prespawn.take() if fresh and adapter.persistent else None
    try:
        return Launch(
            options, spec=spec, adapter=adapter, store=store, pricer=Pricer(agents_dir=spec.agents_dir), meter=meter,
            sinks=sinks, state_dir=state_dir, working_dir=working_dir, clock=SystemClock(), prespawned=pending,
            signals=Signals(), reaper=Reaper(subreaper=True),
        )  # fmt: skip
    except BaseException:
        prespawn.discard(pending)
        store.close()
        raise
