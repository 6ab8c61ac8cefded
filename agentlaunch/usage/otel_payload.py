"""Stored calls as OTLP metrics and log records, following the OpenTelemetry GenAI semantic conventions.

Followed: the GenAI conventions of OpenTelemetry semantic conventions v1.37.0
and later (status: development; ``gen_ai.provider.name`` replaced
``gen_ai.system`` in 1.37.0). Per call:

- ``gen_ai.client.token.usage`` (histogram, ``{token}``, the convention's
  buckets): one measurement of ``gen_ai.token.type=input`` (all input,
  cached included, as the convention counts it) and one of ``output``;
- ``agentlaunch.token.usage`` (monotonic sum, ``{token}``) by
  ``agentlaunch.token.type``: uncached_input, cache_write, cache_read, output,
  reasoning — agentlaunch's own split, which sums without double counting;
- ``agentlaunch.cost.usage`` (monotonic sum, ``USD``): priced calls only, so
  an unpriced call adds no point rather than a $0 one;
- one log record (event ``gen_ai.client.inference.operation.details``) with
  the ``gen_ai.usage.*`` figures, the session as ``gen_ai.conversation.id``,
  and the call's id as ``log.record.uid`` and ``agentlaunch.call.id``.

Metric points are deltas, summed per attribute set over the batch; their
attributes leave out the session (one series per session would grow a
Prometheus without bound). No prompt or answer text is ever exported: the
store has none.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import socket
import time
from collections.abc import Iterable
from typing import Any

from agentlaunch import __version__
from agentlaunch.usage.otel_config import OtelConfig
from agentlaunch.usage.otel_queue import PendingCall

SCOPE = {"name": "agentlaunch", "version": __version__}
TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
DELTA = 1  # AggregationTemporality.AGGREGATION_TEMPORALITY_DELTA
SEVERITY_INFO = 9
EVENT_NAME = "gen_ai.client.inference.operation.details"

# agentlaunch's provider -> the convention's well-known gen_ai.provider.name.
PROVIDER_NAMES = {"claude": "anthropic", "codex": "openai", "gemini": "gcp.gemini"}


def resource_attributes(config: OtelConfig) -> dict[str, str]:
    """service.*, host.name and user.name, then OTEL_RESOURCE_ATTRIBUTES over them, then OTEL_SERVICE_NAME."""
    attrs = {"service.name": "agentlaunch", "service.version": __version__, "host.name": socket.gethostname()}
    with contextlib.suppress(KeyError, OSError):  # no login name (a container's uid without a passwd entry)
        attrs["user.name"] = getpass.getuser()
    attrs.update(config.resource)
    if config.service_name:
        attrs["service.name"] = config.service_name
    return attrs


def call_attributes(pending: PendingCall) -> dict[str, str]:
    """The attributes a call's metric points share (no session, no call id: low cardinality)."""
    call = pending.call
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": PROVIDER_NAMES.get(call.provider, call.provider),
        "agentlaunch.provider": call.provider,
        "gen_ai.agent.name": call.agent,
        "agentlaunch.agent.name": call.agent,
    }
    if call.model_requested:
        attrs["gen_ai.request.model"] = call.model_requested
    if call.model_reported:
        attrs["gen_ai.response.model"] = call.model_reported
    if pending.agent_id:
        attrs["gen_ai.agent.id"] = pending.agent_id
        attrs["agentlaunch.agent.id"] = pending.agent_id
    if pending.working_dir:
        attrs["agentlaunch.project"] = os.path.basename(pending.working_dir.rstrip("/")) or pending.working_dir
    return attrs


def metrics_request(calls: Iterable[PendingCall], config: OtelConfig) -> dict[str, Any]:
    """An ExportMetricsServiceRequest (JSON shape) for ``calls``."""
    histogram: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}
    tokens: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}
    cost: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}
    for pending in calls:
        base = call_attributes(pending)
        u, at = pending.call.usage, _nanos(pending.call.at.timestamp())
        for kind, value in (("input", u.input + u.cache_write + u.cache_read), ("output", u.output)):
            _add_histogram(histogram, {**base, "gen_ai.token.type": kind}, value, at)
        for kind, value in (
            ("uncached_input", u.input), ("cache_write", u.cache_write), ("cache_read", u.cache_read),
            ("output", u.output), ("reasoning", u.reasoning),
        ):  # fmt: skip
            _add_sum(tokens, {**base, "agentlaunch.token.type": kind}, value, at)
        if pending.call.cost_usd is not None:
            _add_sum(cost, base, float(pending.call.cost_usd), at)
    metrics = []
    if histogram:
        metrics.append({
            "name": "gen_ai.client.token.usage", "unit": "{token}", "description": "Number of input and output tokens used.",
            "histogram": {"dataPoints": list(histogram.values()), "aggregationTemporality": DELTA},
        })  # fmt: skip
    if tokens:
        metrics.append({
            "name": "agentlaunch.token.usage", "unit": "{token}",
            "description": "Tokens by agentlaunch's kinds: uncached input, cache write, cache read, output, reasoning.",
            "sum": {"dataPoints": list(tokens.values()), "aggregationTemporality": DELTA, "isMonotonic": True},
        })  # fmt: skip
    if cost:
        metrics.append({
            "name": "agentlaunch.cost.usage", "unit": "USD", "description": "What the calls cost (priced calls only).",
            "sum": {"dataPoints": list(cost.values()), "aggregationTemporality": DELTA, "isMonotonic": True},
        })  # fmt: skip
    return {"resourceMetrics": [{
        "resource": {"attributes": _key_values(resource_attributes(config))},
        "scopeMetrics": [{"scope": SCOPE, "metrics": metrics}],
    }]}  # fmt: skip


def logs_request(calls: Iterable[PendingCall], config: OtelConfig) -> dict[str, Any]:
    """An ExportLogsServiceRequest (JSON shape): one record per call."""
    observed = _nanos(time.time())
    records = []
    for pending in calls:
        call, u = pending.call, pending.call.usage
        attrs: dict[str, str | int | float] = {
            **call_attributes(pending),
            "gen_ai.usage.input_tokens": u.input + u.cache_write + u.cache_read,
            "gen_ai.usage.output_tokens": u.output,
            "gen_ai.usage.cache_read.input_tokens": u.cache_read,
            "gen_ai.usage.cache_creation.input_tokens": u.cache_write,
            "gen_ai.usage.reasoning.output_tokens": u.reasoning,
            "agentlaunch.usage.uncached_input_tokens": u.input,
            "agentlaunch.call.id": pending.uid,
            "log.record.uid": pending.uid,
        }
        if call.session_id:
            attrs["gen_ai.conversation.id"] = call.session_id
        if call.turn is not None:
            attrs["agentlaunch.turn"] = call.turn
        if call.cost_usd is not None:
            attrs["agentlaunch.cost.usd"] = float(call.cost_usd)
        if call.price_key:
            attrs["agentlaunch.price.key"] = call.price_key
        records.append({
            "timeUnixNano": _nanos(call.at.timestamp()), "observedTimeUnixNano": observed,
            "severityNumber": SEVERITY_INFO, "severityText": "INFO", "eventName": EVENT_NAME,
            "attributes": _key_values(attrs),
        })  # fmt: skip
    return {"resourceLogs": [{
        "resource": {"attributes": _key_values(resource_attributes(config))},
        "scopeLogs": [{"scope": SCOPE, "logRecords": records}],
    }]}  # fmt: skip


# --------------------------------------------------------------------------- helpers

Key = tuple[tuple[str, str], ...]


def _nanos(seconds: float) -> int:
    return int(round(seconds * 1_000_000)) * 1000  # microsecond precision: what the store keeps


def _key_values(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for key, value in attrs.items():
        if isinstance(value, bool):
            any_value: dict[str, Any] = {"boolValue": value}
        elif isinstance(value, int):
            any_value = {"intValue": value}
        elif isinstance(value, float):
            any_value = {"doubleValue": value}
        else:
            any_value = {"stringValue": str(value)}
        out.append({"key": key, "value": any_value})
    return out


def _window(point: dict[str, Any], at: int) -> None:
    point["startTimeUnixNano"] = min(point["startTimeUnixNano"], at)
    point["timeUnixNano"] = max(point["timeUnixNano"], at)


def _add_histogram(points: dict[Key, dict[str, Any]], attrs: dict[str, str], value: int, at: int) -> None:
    key = tuple(sorted(attrs.items()))
    point = points.get(key)
    if point is None:
        point = points[key] = {
            "startTimeUnixNano": at, "timeUnixNano": at, "count": 0, "sum": 0.0,
            "bucketCounts": [0] * (len(TOKEN_BUCKETS) + 1), "explicitBounds": list(TOKEN_BUCKETS),
            "attributes": _key_values(attrs), "min": float(value), "max": float(value),
        }  # fmt: skip
    _window(point, at)
    point["count"] += 1
    point["sum"] += value
    point["min"], point["max"] = min(point["min"], float(value)), max(point["max"], float(value))
    # Bucket i holds values in (bound[i-1], bound[i]]; the last one everything above the last bound.
    index = next((i for i, bound in enumerate(TOKEN_BUCKETS) if value <= bound), len(TOKEN_BUCKETS))
    point["bucketCounts"][index] += 1


def _add_sum(points: dict[Key, dict[str, Any]], attrs: dict[str, str], value: int | float, at: int) -> None:
    key = tuple(sorted(attrs.items()))
    point = points.get(key)
    if point is None:
        number = "asDouble" if isinstance(value, float) else "asInt"
        point = points[key] = {"startTimeUnixNano": at, "timeUnixNano": at, number: 0 * value, "attributes": _key_values(attrs)}
    _window(point, at)
    number = "asDouble" if "asDouble" in point else "asInt"
    point[number] += value
