"""An OTLP/HTTP receiver on 127.0.0.1 for the tests: decodes with the official opentelemetry-proto messages.

Each request is decoded by its content type, protobuf (``ParseFromString``)
or JSON (``json_format.Parse``, which refuses an unknown field), into
``ExportMetricsServiceRequest`` / ``ExportLogsServiceRequest``. What it
answers is set by ``mode``: ``ok``, ``503`` (retryable), ``400`` (a refusal,
with a ``google.rpc.Status`` message), ``hang`` (never answers until the
receiver stops), ``partial`` (200 with a partial success). ``accepted`` holds
only what it answered 200 to.
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message
from google.protobuf.unknown_fields import UnknownFieldSet
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

MESSAGES: dict[str, tuple[type[Message], type[Message]]] = {
    "/v1/metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse),
    "/v1/logs": (ExportLogsServiceRequest, ExportLogsServiceResponse),
}


@dataclass
class Received:
    path: str
    content_type: str
    headers: dict[str, str]
    message: Any  # the decoded Export*ServiceRequest
    status: int


def value_of(value: AnyValue) -> Any:
    """The Python value of an AnyValue."""
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def attrs(key_values: Any) -> dict[str, Any]:
    """A repeated KeyValue as a dict (a repeated key is an error: the convention has none)."""
    out: dict[str, Any] = {}
    for kv in key_values:
        assert isinstance(kv, KeyValue)
        assert kv.key not in out, f"attribute {kv.key} twice"
        out[kv.key] = value_of(kv.value)
    return out


def unknown_fields(message: Message, where: str = "") -> list[str]:
    """Where ``message`` (recursively) holds fields its descriptor does not know: a wrong number or wire type."""
    found = [f"{where or message.DESCRIPTOR.name}: field {f.field_number}" for f in UnknownFieldSet(message)]
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        items = value if descriptor.is_repeated else [value]
        for i, item in enumerate(items):
            found.extend(unknown_fields(item, f"{where}.{descriptor.name}[{i}]"))
    return found


class OtlpReceiver:
    """Start with ``with OtlpReceiver() as r:``; ``r.url`` is the base endpoint."""

    def __init__(self, mode: str = "ok", *, tls: tuple[str, str] | None = None) -> None:
        self.mode = mode
        self.received: list[Received] = []
        self.lock = threading.Lock()
        self.release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                receiver._handle(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        scheme = "http"
        if tls is not None:  # (certificate, key) in PEM: an https receiver
            import ssl

            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    # -- what arrived -------------------------------------------------------------------
    def accepted(self, path: str) -> list[Any]:
        with self.lock:
            return [r.message for r in self.received if r.path == path and r.status == 200]

    def log_records(self) -> list[dict[str, Any]]:
        """Every accepted log record: its attributes, plus time, event name and resource attributes."""
        out = []
        for request in self.accepted("/v1/logs"):
            for resource_logs in request.resource_logs:
                resource = attrs(resource_logs.resource.attributes)
                for scope_logs in resource_logs.scope_logs:
                    for record in scope_logs.log_records:
                        out.append(
                            {
                                "attributes": attrs(record.attributes),
                                "time": record.time_unix_nano,
                                "event_name": record.event_name,
                                "severity": record.severity_number,
                                "resource": resource,
                                "scope": scope_logs.scope.name,
                            }
                        )
        return out

    def metric_points(self, name: str) -> list[tuple[dict[str, Any], Any]]:
        """(attributes, data point) of every accepted point of metric ``name``."""
        out = []
        for request in self.accepted("/v1/metrics"):
            for resource_metrics in request.resource_metrics:
                for scope_metrics in resource_metrics.scope_metrics:
                    for metric in scope_metrics.metrics:
                        if metric.name != name:
                            continue
                        kind = metric.WhichOneof("data")
                        for point in getattr(metric, kind).data_points:
                            out.append((attrs(point.attributes), point))
        return out

    def latest_points(self, name: str) -> list[tuple[dict[str, Any], Any]]:
        """What a backend shows of cumulative metric ``name``: each series' (attribute set's) latest point."""
        latest: dict[tuple[tuple[str, str], ...], tuple[dict[str, Any], Any]] = {}
        for attributes, point in self.metric_points(name):
            key = tuple(sorted((k, repr(v)) for k, v in attributes.items()))
            if key not in latest or point.time_unix_nano >= latest[key][1].time_unix_nano:
                latest[key] = (attributes, point)
        return list(latest.values())

    def metrics(self) -> list[Any]:
        """Every accepted Metric message."""
        return [
            m
            for request in self.accepted("/v1/metrics")
            for rm in request.resource_metrics
            for sm in rm.scope_metrics
            for m in sm.metrics
        ]

    # -- answering ----------------------------------------------------------------------
    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        size = int(handler.headers.get("Content-Length", "0"))
        raw = handler.rfile.read(size)
        if handler.headers.get("Content-Encoding") == "gzip":
            raw = gzip.decompress(raw)
        content_type = handler.headers.get("Content-Type", "")
        if handler.path not in MESSAGES:  # as a Collector without that signal's pipeline answers
            handler.send_response(404)
            handler.send_header("Content-Type", "text/plain")
            handler.send_header("Content-Length", "18")
            handler.end_headers()
            handler.wfile.write(b"404 page not found")
            return
        request_type, response_type = MESSAGES[handler.path]
        message = request_type()
        if content_type == "application/json":
            json_format.Parse(raw.decode("utf-8"), message)
        else:
            assert content_type == "application/x-protobuf", content_type
            message.ParseFromString(raw)
            assert not unknown_fields(message), f"fields the official messages do not know: {unknown_fields(message)}"
        mode = self.mode
        if mode == "hang":
            self.release.wait()
            return
        status = {"ok": 200, "partial": 200, "503": 503, "400": 400}[mode]
        with self.lock:
            self.received.append(Received(handler.path, content_type, dict(handler.headers), message, status))
        if status == 200:
            response = response_type()
            if mode == "partial":
                part = response.partial_success  # type: ignore[attr-defined]
                if handler.path == "/v1/logs":
                    part.rejected_log_records = 1
                else:
                    part.rejected_data_points = 1
                part.error_message = "one point was too old"
            body = (
                json_format.MessageToJson(response).encode()
                if content_type == "application/json"
                else response.SerializeToString()
            )
            reply_type = content_type
        else:
            # google.rpc.Status: code (1), message (2); encoded by hand (the test extra has no googleapis protos).
            text = b"bad request: attribute gen_ai.x is not allowed" if status == 400 else b"collector overloaded"
            body = b"\x08\x03\x12" + bytes([len(text)]) + text
            reply_type = "application/x-protobuf"
        handler.send_response(status)
        handler.send_header("Content-Type", reply_type)
        handler.send_header("Content-Length", str(len(body)))
        if status == 503:
            handler.send_header("Retry-After", "0")
        handler.end_headers()
        handler.wfile.write(body)
