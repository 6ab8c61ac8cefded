"""One HTTP/1.1 POST to an OTLP receiver, through the standard library's ``http.client``, with every bound held.

It runs on the exporter's background thread, after the launch's prompt is on
its way, so ``http.client``'s import (with ``email`` and, for https, ``ssl``:
about 8 ms) costs the launch nothing. What a receiver (or whatever answers at
its address) can send is bounded here:

- at most :data:`MAX_BODY` bytes of an answer are read (``read(MAX_BODY)``
  stops inside a chunk of any announced size, or a Content-Length of any
  size); ``http.client`` refuses a header line over 64 KiB and more than 100
  header lines;
- one deadline covers the whole exchange (connect, send, every read): a timer
  shuts the socket down when it passes, which ends any read a slow drip of
  bytes would otherwise keep alive one socket timeout at a time;
- a redirect is an answer like any other (``http.client`` follows none);
- for https the certificate and the host name are checked
  (``ssl.create_default_context``, with the CA bundle given, if any).

Everything that goes wrong is an ``OSError``: the socket's own, ``TimeoutError``
at the deadline, :class:`ProtocolError` for an answer that is not HTTP/1.x.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
from dataclasses import dataclass

MAX_BODY = 1 << 20
"""An OTLP answer is a few bytes (a partial success, a status): anything past this is cut."""


class ProtocolError(OSError):
    """The receiver's answer is not HTTP/1.x (or the request could not be written as HTTP)."""


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]  # lower-cased names
    body: bytes


def exchange(
    scheme: str,
    host: str,
    port: int | None,
    path: str,
    headers: dict[str, str],
    body: bytes,
    *,
    timeout: float,
    ca_file: str | None = None,
) -> Reply:
    """POST ``body`` to ``scheme://host:port/path``; raises OSError (TimeoutError, ConnectionRefusedError,
    ssl.SSLError, ProtocolError...) when no complete answer came within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    conn: http.client.HTTPConnection
    if scheme == "https":
        import ssl  # only for https

        context = ssl.create_default_context(cafile=ca_file)  # CERT_REQUIRED and check_hostname
        conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
    else:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
    expired = threading.Event()
    timer = threading.Timer(timeout, _cut, (conn, expired))
    timer.daemon = True
    timer.start()
    try:
        return _post(conn, path, headers, body, deadline)
    except OSError:  # first: ssl.SSLCertVerificationError is a ValueError too
        if expired.is_set():
            raise TimeoutError("no complete answer in time") from None
        raise
    except (http.client.HTTPException, ValueError) as exc:
        if expired.is_set():
            raise TimeoutError("no complete answer in time") from None
        raise ProtocolError(_said(exc)) from None
    finally:
        timer.cancel()
        conn.close()


def _post(conn: http.client.HTTPConnection, path: str, headers: dict[str, str], body: bytes, deadline: float) -> Reply:
    conn.request("POST", path, body=body, headers={**headers, "Connection": "close"})
    _shorten(conn, deadline)
    response = conn.getresponse()
    _shorten(conn, deadline)
    data = b"" if response.status in (204, 304) else response.read(MAX_BODY)
    if time.monotonic() > deadline:
        raise TimeoutError("no complete answer in time")
    return Reply(response.status, {name.lower(): value for name, value in response.getheaders()}, data)


def _shorten(conn: http.client.HTTPConnection, deadline: float) -> None:
    """Each blocking read waits at most what is left of the deadline (the timer ends the last one)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("no complete answer in time")
    if conn.sock is not None:
        conn.sock.settimeout(left)


def _cut(conn: http.client.HTTPConnection, expired: threading.Event) -> None:
    """At the deadline: shut the socket down, so that a read blocked in ``http.client`` returns at once."""
    expired.set()
    sock = conn.sock
    if sock is not None:
        with contextlib.suppress(OSError):  # already closed: nothing left to end
            sock.shutdown(socket.SHUT_RDWR)


def _said(exc: Exception) -> str:
    """An ``http.client`` failure in a few words (its repr can hold a whole line of what was received)."""
    if isinstance(exc, http.client.BadStatusLine):
        return f"not an HTTP answer: {str(exc)[:80]!r}"
    if isinstance(exc, http.client.IncompleteRead):
        return "the answer ended early"
    if isinstance(exc, http.client.LineTooLong):
        return "the answer has a header line too long"
    if isinstance(exc, http.client.HTTPException):
        return f"a malformed answer ({type(exc).__name__})"
    return f"the request could not be written ({type(exc).__name__})"
