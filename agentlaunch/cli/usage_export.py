"""`agentlaunch usage export`: send the calls an OpenTelemetry receiver has not accepted yet (catch-up)."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from agentlaunch import paths
from agentlaunch.cli.common import err, out


def export(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only say how many calls wait, and where they would go.")] = False,
    wait: Annotated[
        float,
        typer.Option("--wait", help="Give up after this many seconds of a collector that is down or failing.", min=0.1),
    ] = 60.0,
) -> None:
    """Send every stored call the OTLP receiver has not accepted yet, as metrics and log records (catch-up).

    Where to: the standard OTEL_EXPORTER_OTLP_* variables (endpoint, protocol
    http/protobuf or http/json, headers), OTEL_RESOURCE_ATTRIBUTES and
    OTEL_SERVICE_NAME, whether or not AGENTLAUNCH_OTEL is set. Idempotent: a
    call is marked exported only once the receiver accepted it, so running it
    again sends only what is still missing, and each log record carries the
    call's id (log.record.uid) for a backend to drop a duplicate. Retries
    429, 502, 503 and 504 with backoff; any other refusal (400, 401, 500...)
    is reported with the collector's message and not retried.
    Exit 0 when nothing is left, 1 when some calls could not be sent (they
    stay for the next try).

    Example: OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318 agentlaunch usage export
    """
    from agentlaunch.usage.otel_config import read_config
    from agentlaunch.usage.otel_export import Exporter, ExportFailed
    from agentlaunch.usage.otel_queue import ExportQueue

    config = read_config()
    with ExportQueue(paths.store_path()) as queue:
        waiting = queue.pending_count()
        if dry_run or not waiting:
            out.print(f"{waiting} call{'s' if waiting != 1 else ''} to export to {config.where}", highlight=False)
            return
        exporter = Exporter(queue, config)
        result = exporter.drain(deadline=time.monotonic() + wait)
        left = queue.pending_count()
    for note in exporter.notes:
        err.print(f"telemetry: {note}", highlight=False, markup=False)
    if left:
        raise ExportFailed(
            f"exported {result.exported} call{'s' if result.exported != 1 else ''}; "
            f"{left} not exported: {result.problem or 'another sender holds them'}",
            hint="run `agentlaunch usage export` again once the collector accepts them",
        )
    out.print(f"exported {result.exported} call{'s' if result.exported != 1 else ''} to {config.where}", highlight=False)
