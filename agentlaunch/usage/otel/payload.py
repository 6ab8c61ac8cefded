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

Metric points are cumulative: one point per series (attribute set) in the
batch, its total over every stored call of the series up to the batch's latest
call, computed from the store. A batch sent again (the receiver accepted it,
the sender died before noting so) carries the same values at the same time, so
it changes nothing a backend shows; delta points would have been added twice.
Their attributes leave out the session (one series per session would grow a
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
from agentlaunch.providers.descriptors import DESCRIPTORS
from agentlaunch.usage.otel.config import OtelConfig
from agentlaunch.usage.otel.queue import PendingCall

SCOPE = {"name": "agentlaunch", "version": __version__}
TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
CUMULATIVE = 2  # AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE
SEVERITY_INFO = 9
EVENT_NAME = "gen_ai.client.inference.operation.details"


def provider_name(provider: str) -> str:
    """The convention's well-known ``gen_ai.provider.name`` of agentlaunch's ``provider`` (its descriptor's)."""
    descriptor = DESCRIPTORS.get(provider)
    return descriptor.otel_name or provider if descriptor else provider


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
    return series_attributes(
        call.agent, call.provider, call.model_requested, call.model_reported, pending.agent_id, pending.working_dir
    )


def series_attributes(
    agent: str,
    provider: str,
    model_requested: str | None,
    model_reported: str | None,
    agent_id: str | None,
    working_dir: str | None,
) -> dict[str, str]:
    """The attributes of one metric series, from the columns of a call and its session."""
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider_name(provider),
        "agentlaunch.provider": provider,
        "gen_ai.agent.name": agent,
        "agentlaunch.agent.name": agent,
    }
    if model_requested:
        attrs["gen_ai.request.model"] = model_requested
    if model_reported:
        attrs["gen_ai.response.model"] = model_reported
    if agent_id:
        attrs["gen_ai.agent.id"] = agent_id
        attrs["agentlaunch.agent.id"] = agent_id
    if working_dir:
        attrs["agentlaunch.project"] = os.path.basename(working_dir.rstrip("/")) or working_dir
    return attrs


def metrics_request(
    calls: Iterable[PendingCall], config: OtelConfig, totals: tuple[float | None, list[tuple[Any, ...]]]
) -> dict[str, Any]:
    """An ExportMetricsServiceRequest (JSON shape): the cumulative points of the series ``calls`` belong to.

    ``totals`` is :meth:`ExportQueue.series_totals` of ``calls``: each point is
    its series' total over the store up to the latest of ``calls`` (that
    time is the point's time; the series' first call its start), so a batch
    sent again carries the same values, and a backend that keeps the latest
    value of a series has the store's totals whatever was sent twice.
    """
    wanted = {_key(call_attributes(p)) for p in calls}
    until, rows = totals
    histogram: dict[Key, dict[str, Any]] = {}
    tokens: dict[Key, dict[str, Any]] = {}
    cost: dict[Key, dict[str, Any]] = {}
    if until is None:
        rows = []
    at = _nanos(until or 0.0)
    for row in rows:
        base = series_attributes(*row[:6])
        if _key(base) not in wanted:
            continue  # another series of the same agent: not part of this batch
        in_bucket, out_bucket, count, in_sum, out_sum, in_min, in_max, out_min, out_max = row[6:15]
        uncached, cache_write, cache_read, reasoning, usd, priced, first = row[15:22]
        start = _nanos(first)
        _add_histogram(histogram, {**base, "gen_ai.token.type": "input"}, in_bucket, count, in_sum, in_min, in_max, start, at)
        _add_histogram(
            histogram, {**base, "gen_ai.token.type": "output"}, out_bucket, count, out_sum, out_min, out_max, start, at
        )
        for kind, value in (
            ("uncached_input", uncached),
            ("cache_write", cache_write),
            ("cache_read", cache_read),
            ("output", out_sum),
            ("reasoning", reasoning),
        ):
            _add_sum(tokens, {**base, "agentlaunch.token.type": kind}, int(value or 0), start, at)
        if priced:
            _add_sum(cost, base, float(usd), start, at)
    metrics = []
    if histogram:
        metrics.append(
            {
                "name": "gen_ai.client.token.usage",
                "unit": "{token}",
                "description": "Number of input and output tokens used.",
                "histogram": {"dataPoints": list(histogram.values()), "aggregationTemporality": CUMULATIVE},
            }
        )
    if tokens:
        metrics.append(
            {
                "name": "agentlaunch.token.usage",
                "unit": "{token}",
                "description": "Tokens by agentlaunch's kinds: uncached input, cache write, cache read, output, reasoning.",
                "sum": {"dataPoints": list(tokens.values()), "aggregationTemporality": CUMULATIVE, "isMonotonic": True},
            }
        )
    if cost:
        metrics.append(
            {
                "name": "agentlaunch.cost.usage",
                "unit": "USD",
                "description": "What the calls cost (priced calls only).",
                "sum": {"dataPoints": list(cost.values()), "aggregationTemporality": CUMULATIVE, "isMonotonic": True},
            }
        )
    return {
        "resourceMetrics": [
            {
                "resource": {"attributes": _key_values(resource_attributes(config))},
                "scopeMetrics": [{"scope": SCOPE, "metrics": metrics}],
            }
        ]
    }


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
        records.append(
            {
                "timeUnixNano": _nanos(call.at.timestamp()),
                "observedTimeUnixNano": observed,
                "severityNumber": SEVERITY_INFO,
                "severityText": "INFO",
                "eventName": EVENT_NAME,
                "attributes": _key_values(attrs),
            }
        )
    return {
        "resourceLogs": [
            {
                "resource": {"attributes": _key_values(resource_attributes(config))},
                "scopeLogs": [{"scope": SCOPE, "logRecords": records}],
            }
        ]
    }


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


def _key(attrs: dict[str, str]) -> Key:
    return tuple(sorted(attrs.items()))


def _add_histogram(
    points: dict[Key, dict[str, Any]],
    attrs: dict[str, str],
    bucket: int,
    count: int,
    total: int,
    low: int,
    high: int,
    start: int,
    at: int,
) -> None:
    """Add one group of calls (``count`` of them in bucket ``bucket``) to the series' cumulative histogram point."""
    key = _key(attrs)
    point = points.get(key)
    if point is None:
        point = points[key] = {
            "startTimeUnixNano": start,
            "timeUnixNano": at,
            "count": 0,
            "sum": 0.0,
            "bucketCounts": [0] * (len(TOKEN_BUCKETS) + 1),
            "explicitBounds": list(TOKEN_BUCKETS),
            "attributes": _key_values(attrs),
            "min": float(low),
            "max": float(high),
        }
    point["startTimeUnixNano"] = min(point["startTimeUnixNano"], start)
    point["count"] += count
    point["sum"] += float(total or 0)
    point["min"], point["max"] = min(point["min"], float(low)), max(point["max"], float(high))
    point["bucketCounts"][bucket] += count


def _add_sum(points: dict[Key, dict[str, Any]], attrs: dict[str, str], value: int | float, start: int, at: int) -> None:
    """Add ``value`` to the series' cumulative sum point."""
    key = _key(attrs)
    point = points.get(key)
    if point is None:
        number = "asDouble" if isinstance(value, float) else "asInt"
        point = points[key] = {
            "startTimeUnixNano": start,
            "timeUnixNano": at,
            number: 0 * value,
            "attributes": _key_values(attrs),
        }
    point["startTimeUnixNano"] = min(point["startTimeUnixNano"], start)
    number = "asDouble" if "asDouble" in point else "asInt"
    point[number] += value
