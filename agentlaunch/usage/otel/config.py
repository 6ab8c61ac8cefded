"""Where and how calls are exported: the standard ``OTEL_*`` variables, read and checked.

Export is off unless ``AGENTLAUNCH_OTEL`` is 1 (or true/yes/on). The rest is
the OpenTelemetry SDK's own configuration, so an existing Collector setup
works unchanged:

- ``OTEL_EXPORTER_OTLP_ENDPOINT`` (a base URL; ``/v1/metrics`` and ``/v1/logs``
  are appended; default ``http://localhost:4318``), or per signal
  ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` / ``..._LOGS_ENDPOINT`` (used as given);
- ``OTEL_EXPORTER_OTLP_PROTOCOL`` (and per signal): ``http/protobuf`` (default)
  or ``http/json``; ``grpc`` is refused with a message;
- ``OTEL_EXPORTER_OTLP_HEADERS`` (and per signal): ``key=value,key2=value2``,
  values percent-decoded (authentication tokens);
- ``OTEL_EXPORTER_OTLP_TIMEOUT`` (milliseconds per request, default 10000),
  ``OTEL_EXPORTER_OTLP_COMPRESSION`` (``gzip`` or ``none``),
  ``OTEL_EXPORTER_OTLP_CERTIFICATE`` (a CA bundle for an https endpoint);
- ``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_SERVICE_NAME``;
- ``OTEL_METRICS_EXPORTER`` / ``OTEL_LOGS_EXPORTER``: ``otlp`` (default) or
  ``none``, which sends that signal not at all (a Collector with a metrics
  pipeline only answers 404 to logs).

``AGENTLAUNCH_OTEL_EXIT_WAIT`` bounds how long a launch waits at exit for its
last calls to be accepted (seconds, default 2). A bad value never fails a
launch: :func:`read_config` raises :class:`OtelConfigError` with one message
that names the variable, and the caller reports it and exports nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from agentlaunch.errors import AgentlaunchError

SIGNALS = ("metrics", "logs")
PROTOCOLS = ("http/protobuf", "http/json")
DEFAULT_ENDPOINT = "http://localhost:4318"
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_EXIT_WAIT_S = 2.0


class OtelConfigError(AgentlaunchError):
    """A telemetry variable that cannot be used (the message names it and says what it should be)."""


@dataclass(frozen=True)
class SignalTarget:
    """Where one signal (metrics or logs) goes, and how."""

    signal: str  # "metrics" or "logs"
    url: str
    protocol: str
    headers: dict[str, str]

    @property
    def json(self) -> bool:
        return self.protocol == "http/json"


@dataclass(frozen=True)
class OtelConfig:
    """The checked export configuration."""

    targets: dict[str, SignalTarget]
    timeout_s: float = DEFAULT_TIMEOUT_S
    gzip: bool = False
    ca_file: str | None = None
    resource: dict[str, str] = field(default_factory=dict)
    service_name: str | None = None
    exit_wait_s: float = DEFAULT_EXIT_WAIT_S

    @property
    def where(self) -> str:
        """The endpoints, for messages."""
        urls = sorted({shown_url(t.url) for t in self.targets.values()})
        return " and ".join(urls)


def shown_url(url: str) -> str:
    """``url`` for a message: without a user:password part, which must never reach a terminal or a log."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def read_config(env: Mapping[str, str] | None = None) -> OtelConfig:
    """The configuration in ``env`` (default: the process environment); OtelConfigError when a value is unusable."""
    env = os.environ if env is None else env
    base = _get(env, "OTEL_EXPORTER_OTLP_ENDPOINT") or DEFAULT_ENDPOINT
    _check_url("OTEL_EXPORTER_OTLP_ENDPOINT", base)
    common_protocol = _protocol(env, "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    common_headers = _headers(env, "OTEL_EXPORTER_OTLP_HEADERS", {})
    targets = {}
    for signal in SIGNALS:
        upper = signal.upper()
        if _exporter(env, f"OTEL_{upper}_EXPORTER") == "none":
            continue  # this signal is not sent; its calls count as done for it
        own = _get(env, f"OTEL_EXPORTER_OTLP_{upper}_ENDPOINT")
        if own:
            _check_url(f"OTEL_EXPORTER_OTLP_{upper}_ENDPOINT", own)
            url = own
        else:
            url = base.rstrip("/") + f"/v1/{signal}"
        targets[signal] = SignalTarget(
            signal=signal,
            url=url,
            protocol=_protocol(env, f"OTEL_EXPORTER_OTLP_{upper}_PROTOCOL", common_protocol),
            headers=_headers(env, f"OTEL_EXPORTER_OTLP_{upper}_HEADERS", common_headers),
        )
    if not targets:
        raise OtelConfigError(
            "OTEL_METRICS_EXPORTER and OTEL_LOGS_EXPORTER are both none: nothing to export (unset AGENTLAUNCH_OTEL instead)"
        )
    compression = (_get(env, "OTEL_EXPORTER_OTLP_COMPRESSION") or "none").lower()
    if compression not in ("gzip", "none"):
        raise OtelConfigError(f"OTEL_EXPORTER_OTLP_COMPRESSION={compression!r}: use gzip or none")
    ca_file = _get(env, "OTEL_EXPORTER_OTLP_CERTIFICATE") or None
    if ca_file is not None and not os.path.isfile(ca_file):
        raise OtelConfigError(f"OTEL_EXPORTER_OTLP_CERTIFICATE={ca_file!r}: no such file (give a CA bundle in PEM)")
    return OtelConfig(
        targets=targets,
        timeout_s=_seconds(env, "OTEL_EXPORTER_OTLP_TIMEOUT", DEFAULT_TIMEOUT_S * 1000, scale=1000),
        gzip=compression == "gzip",
        ca_file=ca_file,
        resource=_resource(env),
        service_name=_get(env, "OTEL_SERVICE_NAME") or None,
        exit_wait_s=_seconds(env, "AGENTLAUNCH_OTEL_EXIT_WAIT", DEFAULT_EXIT_WAIT_S, scale=1, allow_zero=True),
    )


def _get(env: Mapping[str, str], name: str) -> str:
    return env.get(name, "").strip()


def _shown(value: str) -> str:
    """An endpoint for an error message: no user:password, no query (where a token may sit), or nothing at all."""
    try:
        parts = urlsplit(shown_url(value))
    except ValueError:
        return ""
    return f" ({parts._replace(query='', fragment='').geturl()})" if parts.scheme and parts.netloc else ""


def _check_url(name: str, value: str) -> None:
    try:
        parts = urlsplit(value)
        port = parts.port  # raises ValueError for a port that is not a number
    except ValueError as exc:
        raise OtelConfigError(f"{name}{_shown(value)} is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OtelConfigError(f"{name}{_shown(value)} is not an http:// or https:// URL (for example http://localhost:4318)")
    if port == 0:
        raise OtelConfigError(f"{name}{_shown(value)}: port 0 is not a port")


def _exporter(env: Mapping[str, str], name: str) -> str:
    value = (_get(env, name) or "otlp").lower()
    if value not in ("otlp", "none"):
        raise OtelConfigError(f"{name}={value!r}: agentlaunch exports over OTLP only; use otlp or none")
    return value


def _protocol(env: Mapping[str, str], name: str, default: str) -> str:
    value = _get(env, name) or default
    if value == "grpc":
        raise OtelConfigError(f"{name}=grpc: agentlaunch exports over OTLP/HTTP only; use http/protobuf or http/json")
    if value not in PROTOCOLS:
        raise OtelConfigError(f"{name}={value!r}: use http/protobuf or http/json")
    return value


# A header name is an RFC 9110 token; a value holds tabs, spaces, visible ASCII and obs-text (0x80-0xFF), which is
# what goes on the wire as Latin-1. Anything else cannot be sent (and a line break would add a header of its own).
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")


def _pairs(name: str, value: str) -> list[tuple[str, str]]:
    """``k=v,k2=v2`` (W3C baggage style, values percent-encoded) as pairs; OtelConfigError on a malformed entry.

    Messages name the variable and the entry's position, never its text: these
    variables carry bearer tokens, and an error goes to a terminal or a log.
    """
    pairs = []
    for position, entry in enumerate(value.split(","), 1):
        if not entry.strip():
            continue
        key, sep, item = entry.partition("=")
        key = key.strip()
        if not sep or not key or any(c.isspace() for c in key):
            raise OtelConfigError(
                f"{name}: entry {position} is not key=value (its text is not shown: it may be a secret)",
                hint=f"write {name}=key1=value1,key2=value2 (values percent-encoded)",
            )
        pairs.append((unquote(key), unquote(item.strip())))
    return pairs


def _headers(env: Mapping[str, str], name: str, default: dict[str, str]) -> dict[str, str]:
    value = _get(env, name)
    if not value:
        return dict(default)
    headers = {}
    for position, (key, item) in enumerate(_pairs(name, value), 1):
        if not _TOKEN.fullmatch(key):
            raise OtelConfigError(
                f"{name}: the name in entry {position} is not an HTTP header name",
                hint="a header name is letters, digits and !#$%&'*+-.^_`|~ (for example Authorization)",
            )
        if not _FIELD_VALUE.fullmatch(item):
            raise OtelConfigError(
                f"{name}: the value in entry {position} has a character an HTTP header cannot carry "
                "(a line break or other control character, or one beyond Latin-1)",
                hint="a header value is printable ASCII (or Latin-1); percent-encoding does not change what is sent",
            )
        headers[key] = item
    return headers


def _resource(env: Mapping[str, str]) -> dict[str, str]:
    value = _get(env, "OTEL_RESOURCE_ATTRIBUTES")
    return dict(_pairs("OTEL_RESOURCE_ATTRIBUTES", value)) if value else {}


def _seconds(env: Mapping[str, str], name: str, default: float, *, scale: float, allow_zero: bool = False) -> float:
    value = _get(env, name)
    if not value:
        return default / scale
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if number != number or number < 0 or (number == 0 and not allow_zero) or number == float("inf"):
        unit = "milliseconds" if scale == 1000 else "seconds"
        raise OtelConfigError(f"{name}={value!r}: give a positive number of {unit}")
    return number / scale
