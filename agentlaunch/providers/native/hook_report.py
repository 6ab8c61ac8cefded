"""Run by the provider CLI (a hook, a notify program, a status-line command): one report to the launch's socket.

Usage: ``python -I -S hook_report.py SOCKET EVENT [JSON-ARG]``. It reads the
JSON object the CLI writes on stdin (bounded; Codex's notify passes it as the
last argument instead), and sends ``{"event": EVENT, "payload": OBJECT}`` as
one datagram to SOCKET. It is run by file path with ``-I -S``, so it imports
only the standard library and starts in milliseconds: it runs on every tool
call. It never blocks (a launch that is gone or busy loses the report, not the
CLI's time), prints nothing (Claude Code adds some hooks' stdout to the
model's context) and always exits 0.

One exception, the *gate*: an EVENT written ``gate:NAME`` (Claude Code's
``PreToolUse`` while a budget applies) reports NAME with a reply socket of
its own beside SOCKET and waits, at most :data:`GATE_WAIT` seconds, for the
launch's answer, which it prints (the hook's JSON output: nothing lets the
tool run, an object refuses it and ends the turn). A launch that is gone
answers nothing: the tool runs, as without agentlaunch.

SOCKET written ``@FILE`` means: the socket's path is the first line of FILE
(Gemini's hooks live in a settings file shared by every launch of an agent, so
each launch names its socket in a file of its session's; see
``gemini_hooks``). No such file: no launch follows this session, nothing is sent.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys

MAX_INPUT = 1 << 20
"""At most this much of stdin is read; a hook's input can hold a whole file the tool wrote."""
MAX_DATAGRAM = 60_000
"""Reports larger than this keep only the payload's short top-level values (a datagram has a size limit)."""
SHORT = 2_000
GATE = "gate:"
GATE_WAIT = 30.0
"""Seconds a gated hook waits for the launch's answer (it comes within milliseconds, or the launch is stuck)."""


def report(event: str, raw: str, reply: str | None = None) -> bytes:
    """The datagram for ``event`` with the CLI's JSON text ``raw`` (not JSON: the payload is null)."""
    try:
        payload = json.loads(raw) if raw.strip() else None
    except (ValueError, RecursionError):
        payload = None
    head = {"event": event, "reply": reply} if reply else {"event": event}
    data = json.dumps({**head, "payload": payload}).encode()
    if len(data) > MAX_DATAGRAM:
        short = {}
        if isinstance(payload, dict):
            for key, value in payload.items():
                if isinstance(value, str | int | float | bool) and len(str(value)) <= SHORT:
                    short[key] = value
        data = json.dumps({**head, "payload": short, "truncated": True}).encode()
    return data


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        return 0
    path, event = argv[1], argv[2]
    if path.startswith("@"):
        path = named_socket(path[1:])
        if not path:
            return 0  # no launch follows this session (a headless turn, the CLI started by hand): stdin unread
    if len(argv) > 3:
        raw = argv[3]
    else:
        try:
            raw = sys.stdin.buffer.read(MAX_INPUT).decode("utf-8", "replace")
        except (OSError, ValueError):
            raw = ""
    if event.startswith(GATE):
        sys.stdout.write(gate(path, event[len(GATE) :], raw))
        return 0
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.setblocking(False)
            sock.sendto(report(event, raw), path)
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


def gate(path: str, event: str, raw: str) -> str:
    """Report ``event`` and wait for the launch's answer on a socket of this process's own; "" when none came."""
    reply = os.path.join(os.path.dirname(path), f"gate-{os.getpid()}.sock")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            with contextlib.suppress(OSError):
                os.unlink(reply)  # a socket a killed reporter of the same pid left
            sock.bind(reply)
            try:
                sock.settimeout(GATE_WAIT)
                sock.sendto(report(event, raw, reply), path)
                return sock.recv(MAX_INPUT).decode("utf-8", "replace")
            finally:
                os.unlink(reply)
    except (OSError, ValueError):
        return ""


if __name__ == "__main__":
    sys.exit(main(sys.argv))
