"""Run by the provider CLI (a hook, a notify program, a status-line command): one report to the launch's socket.

Usage: ``python -I -S hook_report.py SOCKET EVENT [JSON-ARG]``. It reads the
JSON object the CLI writes on stdin (bounded; Codex's notify passes it as the
last argument instead), and sends it as one datagram to SOCKET, unparsed,
after a header line: ``{"event": EVENT}`` + ``\n`` + the CLI's bytes (the
launch parses them; see :func:`agentlaunch.providers.native.hook_socket.parse_report`).
It is run by file path with ``-I -S`` and imports ``json`` only for a payload
too large for one datagram: it runs on every tool call. Only such a payload is parsed, to keep its short top-level values
(``{"event": …, "payload": …, "truncated": true}``, one JSON object). It never
blocks (a launch that is gone or busy loses the report, not the CLI's time),
prints nothing (Claude Code adds some hooks' stdout to the model's context)
and always exits 0.

Claude Code's budget gate on its tools is not a report: it waits for the launch's answer
(:mod:`agentlaunch.providers.native.hook_ask`).

SOCKET written ``@FILE`` means: the socket's path is the first line of FILE
(Gemini's hooks live in a settings file shared by every launch of an agent, so
each launch names its socket in a file of its session's; see
``gemini_hooks``). No such file: no launch follows this session, nothing is sent.
"""

from __future__ import annotations

import sys

MAX_INPUT = 1 << 20
"""At most this much of stdin is read; a hook's input can hold a whole file the tool wrote."""
MAX_DATAGRAM = 60_000
"""Reports larger than this keep only the payload's short top-level values (a datagram has a size limit)."""
SHORT = 2_000


def report(event: str, raw: str | bytes) -> bytes:
    """The datagram for ``event`` with the CLI's JSON text ``raw``: a header line, then ``raw`` as it came.

    The launch parses ``raw`` (not JSON: the payload is null). Only when the datagram would be too large
    is ``raw`` parsed here, to keep the payload's short top-level values.
    """
    body = raw.encode("utf-8", "replace") if isinstance(raw, str) else raw
    head = b'{"event": ' + quoted(event) + b"}"
    if len(head) + 1 + len(body) <= MAX_DATAGRAM:
        return head + b"\n" + body
    return shortened(event, body)


def quoted(text: str) -> bytes:
    """``text`` as a JSON string (event names are plain ASCII: json only for any other)."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return b'"' + text.encode() + b'"'
    import json

    return json.dumps(text).encode()


def shortened(event: str, body: bytes) -> bytes:
    """A report too large for a datagram: one JSON object with only the payload's short top-level values."""
    import json

    try:
        payload = json.loads(body.decode("utf-8", "replace")) if body.strip() else None
    except (ValueError, RecursionError):
        payload = None
    head = {"event": event}
    short = {}
    if isinstance(payload, dict):
        for key, value in payload.items():
            if isinstance(value, str | int | float | bool) and len(str(value)) <= SHORT:
                short[key] = value
    return json.dumps({**head, "payload": short, "truncated": True}).encode()


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        return 0
    path, event = argv[1], argv[2]
    if path.startswith("@"):
        path = named_socket(path[1:])
        if not path:
            return 0  # no launch follows this session (a headless turn, the CLI started by hand): stdin unread
    raw: str | bytes
    if len(argv) > 3:
        raw = argv[3]
    else:
        try:
            raw = sys.stdin.buffer.read(MAX_INPUT)
        except (OSError, ValueError):
            raw = b""
    import socket  # here: with no launch to report to (above) it is not needed

    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.setblocking(False)
            sock.sendto(report(event, raw), path)
        finally:
            sock.close()
    except OSError:
        pass
    return 0


def named_socket(file: str) -> str:
    """The socket path written in ``file`` ("" when there is no such file or it names none)."""
    try:
        with open(file, "rb") as fh:
            return fh.read(4096).decode("utf-8", "replace").split("\n", 1)[0].strip()
    except (OSError, ValueError):
        return ""


if __name__ == "__main__":
    sys.exit(main(sys.argv))
