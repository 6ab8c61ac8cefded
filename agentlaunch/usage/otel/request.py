"""One OTLP/HTTP request and what its answer means: accepted, try again later, or refused.

Following the OTLP/HTTP specification: 200 (any 2xx) is success, and its body may carry
a partial success (some points or records rejected; never retried, the
message is reported). 429, 502, 503 and 504 are retryable, after the
``Retry-After`` the receiver asked for when it gave one; so are a refused or
reset connection and a timeout. Every other status (400, 401, 404, 413, 500,
...) is not retried: its ``google.rpc.Status`` message is reported. A TLS
failure is not retried either (retrying cannot fix a certificate).
"""

from __future__ import annotations

import socket
import sys
from dataclasses import dataclass
from urllib.parse import urlsplit

from agentlaunch import __version__
from agentlaunch.usage.otel.config import OtelConfig, SignalTarget, shown_url
from agentlaunch.usage.otel.transport import exchange
from agentlaunch.usage.otel.wire import partial_success, status_message

RETRYABLE_STATUS = {429, 502, 503, 504}
MAX_RETRY_AFTER_S = 60.0


@dataclass(frozen=True)
class Answer:
    """What became of one request.

    ``accepted``: the receiver took it (``problem`` is a partial success's message, if any).
    Otherwise ``retryable`` says whether sending the same again later may succeed,
    ``retry_after`` is the receiver's own wish (seconds) and ``problem`` says what happened.
    """

    accepted: bool
    retryable: bool = False
    problem: str = ""
    retry_after: float | None = None


def post(target: SignalTarget, body: bytes, config: OtelConfig) -> Answer:
    """POST ``body`` (already encoded for ``target.protocol``) to ``target.url``; never raises for network trouble."""
    parts = urlsplit(target.url)
    host, port = parts.hostname or "", parts.port
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    content_type = "application/json" if target.json else "application/x-protobuf"
    headers = {"Content-Type": content_type, "User-Agent": f"agentlaunch/{__version__}", **target.headers}
    if config.gzip:
        import gzip  # only when asked for

        body = gzip.compress(body, compresslevel=5)
        headers["Content-Encoding"] = "gzip"
    where = shown_url(target.url)
    try:
        reply = exchange(parts.scheme, host, port, path, headers, body, timeout=config.timeout_s, ca_file=config.ca_file)
    except ConnectionRefusedError:
        return Answer(False, retryable=True, problem=f"{where}: connection refused (is the collector running?)")
    except TimeoutError:
        return Answer(False, retryable=True, problem=f"{where}: no answer within {config.timeout_s:g}s")
    except socket.gaierror as exc:
        return Answer(False, retryable=True, problem=f"{where}: cannot resolve {host!r} ({exc.strerror or exc})")
    except OSError as exc:
        tls = _tls_problem(exc, config)
        if tls is not None:
            return Answer(False, retryable=False, problem=f"{where}: {tls}")
        return Answer(False, retryable=True, problem=f"{where}: {type(exc).__name__}: {exc}")
    status, reply_type, data = reply.status, reply.headers.get("content-type", ""), reply.body
    retry_after = reply.headers.get("retry-after")
    json_reply = "json" in reply_type
    if 200 <= status < 300:
        rejected, message = partial_success(data, json_reply, target.signal) if _decodable(reply_type) else (0, "")
        problem = f"{where}: the receiver rejected {rejected} of them: {message}" if rejected or message else ""
        return Answer(True, problem=problem)
    said = status_message(data, json_reply) if _decodable(reply_type) else _text(data)
    problem = f"{where} answered {status}" + (f": {said}" if said else "")
    if status == 404:
        problem += f" (no pipeline for it? OTEL_{target.signal.upper()}_EXPORTER=none leaves that signal out)"
    if status in RETRYABLE_STATUS:
        return Answer(False, retryable=True, problem=problem, retry_after=_retry_after(retry_after))
    return Answer(False, retryable=False, problem=problem)


def _tls_problem(exc: OSError, config: OtelConfig) -> str | None:
    """What a TLS failure says (ssl is loaded only for https endpoints, so only then can ``exc`` be one)."""
    ssl = sys.modules.get("ssl")
    if ssl is None or not isinstance(exc, ssl.SSLError):
        return None
    if isinstance(exc, ssl.SSLCertVerificationError):
        hint = "" if config.ca_file else " (give its CA bundle with OTEL_EXPORTER_OTLP_CERTIFICATE)"
        return f"TLS certificate not trusted: {exc.verify_message}{hint}"
    return f"TLS failed: {exc.reason or exc}"


def _decodable(content_type: str) -> bool:
    return "protobuf" in content_type or "json" in content_type


def _text(data: bytes) -> str:
    return " ".join(data[:300].decode("utf-8", "replace").split())


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (seconds form; an HTTP date counts as absent), capped."""
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S) if seconds == seconds else None
