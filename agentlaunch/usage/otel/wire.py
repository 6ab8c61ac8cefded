"""OTLP messages on the wire: the official ``opentelemetry-proto`` messages, as protobuf or as OTLP/JSON.

The payload is built once, in the OTLP/JSON shape (lowerCamelCase field names, nested dicts and lists; see
:mod:`agentlaunch.usage.otel.payload`), and read into the official ``Export*ServiceRequest``
(``json_format.ParseDict``, which refuses a field the message does not know). Protobuf is that message
serialized; JSON is its protobuf JSON mapping with enums as numbers, which is what OTLP/JSON asks. An answer is
an ``Export*ServiceResponse`` (a partial success) or a ``google.rpc.Status`` (an error): only their counts and
messages are read.

The messages come with the ``otel`` extra (``pip install 'agentlaunch[otel]'``: ``opentelemetry-proto`` and
``googleapis-common-protos``, over ``protobuf``). They are imported only here, on the exporter's thread or by
``agentlaunch usage export``, never on a launch's path; without them :func:`require` raises
:class:`ExtraMissing`, which says what to install.
"""

from __future__ import annotations

import functools
import json
from types import SimpleNamespace
from typing import Any

from agentlaunch.errors import AgentlaunchError

EXTRA_HINT = "pip install 'agentlaunch[otel]'"


class ExtraMissing(AgentlaunchError):
    """OTLP export was asked for, and the ``otel`` extra's packages are not installed."""


@functools.cache
def require() -> Any:
    """The official messages (and ``json_format``) as one namespace; :class:`ExtraMissing` when they are missing."""
    try:
        from google.protobuf import json_format
        from google.protobuf.message import DecodeError
        from google.rpc.status_pb2 import Status
        from opentelemetry.proto.collector.logs.v1 import logs_service_pb2 as logs
        from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2 as metrics
    except ImportError as exc:
        raise ExtraMissing(
            f"OTLP export needs the otel extra, which is not installed (cannot import {exc.name or exc})",
            hint=f"install it: {EXTRA_HINT}",
        ) from None
    return SimpleNamespace(
        json_format=json_format,
        DecodeError=DecodeError,
        Status=Status,
        requests={
            "ExportMetricsServiceRequest": metrics.ExportMetricsServiceRequest,
            "ExportLogsServiceRequest": logs.ExportLogsServiceRequest,
        },
        responses={"metrics": metrics.ExportMetricsServiceResponse, "logs": logs.ExportLogsServiceResponse},
    )


def message(name: str, value: dict[str, Any]) -> Any:
    """The official message ``name`` (``ExportMetricsServiceRequest`` or ``ExportLogsServiceRequest``) of ``value``,
    a payload in the OTLP/JSON shape; ``json_format.ParseError`` for a field the message does not have."""
    official = require()
    return official.json_format.ParseDict(value, official.requests[name]())


def to_protobuf(name: str, value: dict[str, Any]) -> bytes:
    """The protobuf encoding of ``value`` (a ``name`` message in the JSON shape)."""
    return bytes(message(name, value).SerializeToString())


def to_json(name: str, value: dict[str, Any]) -> bytes:
    """The OTLP/JSON encoding of ``value``: the protobuf JSON mapping, enums as numbers, 64-bit integers as strings."""
    official = require()
    mapped = official.json_format.MessageToDict(message(name, value), use_integers_for_enums=True)
    return json.dumps(mapped, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


# --------------------------------------------------------------------------- answers


def partial_success(body: bytes, json_body: bool, signal: str) -> tuple[int, str]:
    """(rejected count, message) of the ``signal``'s ``Export*ServiceResponse``; (0, "") when it has none or is
    not one."""
    if not body:
        return 0, ""
    official = require()
    response = official.responses[signal]()
    try:
        if json_body:
            official.json_format.Parse(body, response, ignore_unknown_fields=True)
        else:
            response.ParseFromString(body)
    except (official.DecodeError, official.json_format.ParseError, ValueError):
        return 0, ""
    part = response.partial_success
    rejected = part.rejected_data_points if signal == "metrics" else part.rejected_log_records
    return int(rejected), str(part.error_message)


def status_message(body: bytes, json_body: bool) -> str:
    """The message of a ``google.rpc.Status`` error body, else the body as text (shortened)."""
    if not body:
        return ""
    official = require()
    status = official.Status()
    try:
        if json_body:
            official.json_format.Parse(body, status, ignore_unknown_fields=True)
        else:
            status.ParseFromString(body)
        if status.message:
            return str(status.message)
    except (official.DecodeError, official.json_format.ParseError, ValueError):
        pass
    text = body[:300].decode("utf-8", "replace").strip()
    return " ".join(text.split())
