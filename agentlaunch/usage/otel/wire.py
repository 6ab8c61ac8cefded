"""OTLP messages on the wire: the protobuf and JSON encodings of the few messages agentlaunch sends.

The payload is built once, as the OTLP/JSON shape (lowerCamelCase field
names, nested dicts and lists; see :mod:`agentlaunch.usage.otel.payload`).
JSON is that shape serialized, with 64-bit integers as decimal strings as the
protobuf JSON mapping asks. Protobuf is the same shape walked with the field
numbers and wire types of ``opentelemetry/proto`` (``SCHEMA`` below): a few
dozen fields, so a table and a small encoder replace the protobuf runtime and
its generated modules (the tests decode every payload with the official
``opentelemetry-proto`` messages, so a wrong number cannot go unnoticed).

The reverse direction is smaller still: a response is an
``Export*ServiceResponse`` (partial success) or a ``google.rpc.Status`` (an
error), and only their counts and messages are read.
"""

from __future__ import annotations

import json
import struct
from typing import Any

# Wire kinds of the table: a nested message (by its schema name), or a scalar.
# "fixed64" and "double" are 8-byte little-endian; "int64"/"enum"/"bool" are varints.
Field = tuple[int, str]

SCHEMA: dict[str, dict[str, Field]] = {
    "ExportMetricsServiceRequest": {"resourceMetrics": (1, "ResourceMetrics")},
    "ExportLogsServiceRequest": {"resourceLogs": (1, "ResourceLogs")},
    "ResourceMetrics": {"resource": (1, "Resource"), "scopeMetrics": (2, "ScopeMetrics"), "schemaUrl": (3, "string")},
    "ResourceLogs": {"resource": (1, "Resource"), "scopeLogs": (2, "ScopeLogs"), "schemaUrl": (3, "string")},
    "Resource": {"attributes": (1, "KeyValue")},
    "ScopeMetrics": {"scope": (1, "InstrumentationScope"), "metrics": (2, "Metric"), "schemaUrl": (3, "string")},
    "ScopeLogs": {"scope": (1, "InstrumentationScope"), "logRecords": (2, "LogRecord"), "schemaUrl": (3, "string")},
    "InstrumentationScope": {"name": (1, "string"), "version": (2, "string"), "attributes": (3, "KeyValue")},
    "Metric": {
        "name": (1, "string"), "description": (2, "string"), "unit": (3, "string"),
        "sum": (7, "Sum"), "histogram": (9, "Histogram"),
    },  # fmt: skip
    "Sum": {"dataPoints": (1, "NumberDataPoint"), "aggregationTemporality": (2, "enum"), "isMonotonic": (3, "bool")},
    "Histogram": {"dataPoints": (1, "HistogramDataPoint"), "aggregationTemporality": (2, "enum")},
    "NumberDataPoint": {
        "startTimeUnixNano": (2, "fixed64"), "timeUnixNano": (3, "fixed64"), "asDouble": (4, "double"),
        "asInt": (6, "sfixed64"), "attributes": (7, "KeyValue"),
    },  # fmt: skip
    "HistogramDataPoint": {
        "startTimeUnixNano": (2, "fixed64"), "timeUnixNano": (3, "fixed64"), "count": (4, "fixed64"),
        "sum": (5, "double"), "bucketCounts": (6, "fixed64"), "explicitBounds": (7, "double"),
        "attributes": (9, "KeyValue"), "min": (11, "double"), "max": (12, "double"),
    },  # fmt: skip
    "LogRecord": {
        "timeUnixNano": (1, "fixed64"), "severityNumber": (2, "enum"), "severityText": (3, "string"),
        "body": (5, "AnyValue"), "attributes": (6, "KeyValue"), "observedTimeUnixNano": (11, "fixed64"),
        "eventName": (12, "string"),
    },  # fmt: skip
    "KeyValue": {"key": (1, "string"), "value": (2, "AnyValue")},
    "AnyValue": {
        "stringValue": (1, "string"), "boolValue": (2, "bool"), "intValue": (3, "int64"), "doubleValue": (4, "double"),
    },  # fmt: skip
}

# Scalars the JSON mapping writes as strings (64-bit integers).
_INT64_AS_STRING = {"fixed64", "sfixed64", "int64"}
_PACKED = {"fixed64", "double"}  # repeated numeric fields are packed in proto3


def to_json(message: str, value: dict[str, Any]) -> bytes:
    """The OTLP/JSON encoding of ``value`` (a ``message`` in the JSON shape)."""
    return json.dumps(_jsonable(message, value), separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _jsonable(message: str, value: dict[str, Any]) -> dict[str, Any]:
    fields = SCHEMA[message]
    out: dict[str, Any] = {}
    for name, item in value.items():
        _number, kind = fields[name]
        if kind in SCHEMA:
            out[name] = [_jsonable(kind, v) for v in item] if isinstance(item, list) else _jsonable(kind, item)
        elif kind in _INT64_AS_STRING:
            out[name] = [str(v) for v in item] if isinstance(item, list) else str(item)
        else:
            out[name] = item
    return out


def to_protobuf(message: str, value: dict[str, Any]) -> bytes:
    """The protobuf encoding of ``value`` (a ``message`` in the JSON shape)."""
    out = bytearray()
    fields = SCHEMA[message]
    for name, item in value.items():
        number, kind = fields[name]
        if kind in SCHEMA:
            for sub in item if isinstance(item, list) else [item]:
                _length_delimited(out, number, to_protobuf(kind, sub))
        elif isinstance(item, list):
            if kind not in _PACKED:
                raise TypeError(f"{message}.{name}: repeated {kind} is not supported")
            fmt = "<d" if kind == "double" else "<Q"
            _length_delimited(out, number, b"".join(struct.pack(fmt, v) for v in item))
        else:
            _scalar(out, number, kind, item)
    return bytes(out)


def _scalar(out: bytearray, number: int, kind: str, value: Any) -> None:
    if kind == "string":
        _length_delimited(out, number, str(value).encode("utf-8"))
    elif kind in ("int64", "enum"):
        out += _varint(number << 3) + _varint(int(value) & 0xFFFFFFFFFFFFFFFF)  # negative int64: two's complement
    elif kind == "bool":
        out += _varint(number << 3) + _varint(1 if value else 0)
    elif kind == "double":
        out += _varint(number << 3 | 1) + struct.pack("<d", float(value))
    elif kind == "fixed64":
        out += _varint(number << 3 | 1) + struct.pack("<Q", int(value))
    elif kind == "sfixed64":
        out += _varint(number << 3 | 1) + struct.pack("<q", int(value))
    else:
        raise TypeError(f"unknown wire kind {kind!r}")


def _length_delimited(out: bytearray, number: int, data: bytes) -> None:
    out += _varint(number << 3 | 2) + _varint(len(data)) + data


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


# --------------------------------------------------------------------------- responses


def read_fields(data: bytes) -> dict[int, list[int | bytes]]:
    """The top-level fields of a protobuf message: number -> values (varints and fixed as ints, the rest as bytes).

    Raises ValueError on bytes that are not a protobuf message.
    """
    fields: dict[int, list[int | bytes]] = {}
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _read_varint(data, pos)
        elif wire == 1:
            value, pos = int.from_bytes(data[pos : pos + 8], "little"), pos + 8
        elif wire == 2:
            size, pos = _read_varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        elif wire == 5:
            value, pos = int.from_bytes(data[pos : pos + 4], "little"), pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if pos > len(data) or number == 0:
            raise ValueError("truncated protobuf message")
        fields.setdefault(number, []).append(value)
    return fields


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def partial_success(body: bytes, json_body: bool) -> tuple[int, str]:
    """(rejected count, message) of an ``Export*ServiceResponse``; (0, "") when it has none.

    Both the metrics and the logs response carry ``partial_success`` as field 1,
    whose fields are the rejected count (1) and the error message (2).
    """
    if not body:
        return 0, ""
    try:
        if json_body:
            part = json.loads(body).get("partialSuccess") or {}
            rejected = part.get("rejectedDataPoints", part.get("rejectedLogRecords", 0))
            return int(rejected or 0), str(part.get("errorMessage") or "")
        inner = read_fields(body).get(1)
        if not inner or not isinstance(inner[0], bytes):
            return 0, ""
        fields = read_fields(inner[0])
        count = fields.get(1, [0])[0]
        message = fields.get(2, [b""])[0]
        return (
            count if isinstance(count, int) else 0,
            message.decode("utf-8", "replace") if isinstance(message, bytes) else "",
        )
    except (ValueError, AttributeError, TypeError):
        return 0, ""


def status_message(body: bytes, json_body: bool) -> str:
    """The message of a ``google.rpc.Status`` error body (field 2), else the body as text (shortened)."""
    if not body:
        return ""
    try:
        if json_body:
            return str(json.loads(body).get("message") or "")
        message = read_fields(body).get(2, [b""])[0]
        if isinstance(message, bytes) and message:
            return message.decode("utf-8", "replace")
    except (ValueError, AttributeError, TypeError, UnicodeDecodeError):
        pass
    text = body[:300].decode("utf-8", "replace").strip()
    return " ".join(text.split())
