"""Run by the provider CLI (a hook, a notify program, a status-line command): one report to the launch's socket.

Usage: ``python -I -S hook_report.py SOCKET EVENT [JSON-ARG]``. It reads the
JSON object the CLI writes on stdin (bounded; Codex's notify passes it as the
last argument instead), and sends ``{"event": EVENT, "payload": OBJECT}`` as
one datagram to SOCKET. It is run by file path with ``-I -S``, so it imports
only the standard library and starts in milliseconds: it runs on every tool
call. It never blocks (a launch that is gone or busy loses the report, not the
CLI's time), prints nothing (Claude Code adds some hooks' stdout to the
model's context) and always exits 0.
"""

from __future__ import annotations

import json
import socket
import sys

MAX_INPUT = 1 << 20
"""At most this much of stdin is read; a hook's input can hold a whole file the tool wrote."""
MAX_DATAGRAM = 60_000
"""Reports larger than this keep only the payload's short top-level values (a datagram has a size limit)."""
SHORT = 2_000


def report(event: str, raw: str) -> bytes:
    """The datagram for ``event`` with the CLI's JSON text ``raw`` (not JSON: the payload is null)."""
    try:
        payload = json.loads(raw) if raw.strip() else None
    except (ValueError, RecursionError):
        payload = None
    data = json.dumps({"event": event, "payload": payload}).encode()
    if len(data) > MAX_DATAGRAM:
        short = {}
        if isinstance(payload, dict):
            for key, value in payload.items():
                if isinstance(value, str | int | float | bool) and len(str(value)) <= SHORT:
                    short[key] = value
        data = json.dumps({"event": event, "payload": short, "truncated": True}).encode()
    return data


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        return 0
    path, event = argv[1], argv[2]
    if len(argv) > 3:
        raw = argv[3]
    else:
        try:
            raw = sys.stdin.buffer.read(MAX_INPUT).decode("utf-8", "replace")
        except (OSError, ValueError):
            raw = ""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.setblocking(False)
            sock.sendto(report(event, raw), path)
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
