"""Run by Claude Code as a command hook that waits for the launch's answer (the budget's gate on ``PreToolUse``, and
a ``PermissionRequest`` the person may answer with ``agentlaunch answer``).

Usage: ``python -I -S hook_ask.py SOCKET EVENT``. It reads the hook's JSON on stdin (bounded), connects to the
launch's held-hook socket SOCKET (a Unix stream socket in the launch's 0700 runtime folder: only this user can
open it; :mod:`agentlaunch.providers.native.hook_held`), sends ``{"event": EVENT}`` + a newline + the CLI's bytes,
closes its side, and waits for the answer: :data:`MARK` then the hook's output, which it prints (nothing lets the
tool run; ``tool_refusal``'s JSON refuses it and ends the turn). It always exits 0.

It fails closed: when the launch cannot be reached (no socket, refused, its backlog full), closes without
:data:`MARK`, or does not answer within :data:`ASK_WAIT` seconds (Claude Code's own ``timeout`` for the hook is
longer: a hook Claude Code kills lets the tool run, measured on 2.1.332), a ``PreToolUse`` hook prints a refusal
naming why (the tool does not run, the turn ends); any other event prints nothing (Claude Code goes on as without
the hook: a ``PermissionRequest`` then shows its own dialog).

What it costs: a process per gated tool, as each state hook's ``hook_report``. ``bench/bench_hook_run.py``
measured (30 rounds, load 10 on 2 cores, 2026-12-07) 26 ms of CPU per run of either (``python -I -S -c pass``:
11.6 ms; most of the rest is importing ``socket``), and 0.1-0.2 ms in the launch to read a report or answer the
gate, where the http hook it replaces cost the launch 0.2 ms and no process. The price buys a channel no other
user can open (see :mod:`agentlaunch.providers.native.hook_held`).
"""

from __future__ import annotations

import sys

MAX_INPUT = 1 << 20
"""At most this much of stdin is read and sent; a larger payload is cut (the launch then drops it unparsed)."""
MARK = b"agentlaunch-answer\n"
"""What starts every answer the launch gives: a connection closed without it is no answer."""
ASK_WAIT = 50.0
"""Seconds the hook waits for the answer (Claude Code's ``timeout`` for it is :data:`claude_settings.GATE_TIMEOUT`)."""
QUESTION_WAIT = 24 * 3600
"""Seconds a ``PermissionRequest`` hook waits: Claude Code shows its dialog meanwhile, and the person may answer it
there or with agentlaunch answer (:mod:`agentlaunch.providers.native.claude_question`)."""
WAITS = {"PermissionRequest": float(QUESTION_WAIT)}
MAX_ANSWER = 1 << 20


def refusal(reason: str) -> str:
    """The refusal of a ``PreToolUse`` (as ``providers.claude_hooks.tool_refusal`` writes it): no tool, no further call."""
    import json

    return json.dumps(
        {
            "continue": False,
            "stopReason": reason,
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            },
        }
    )


def closed(event: str, why: str) -> str:
    """The hook's output when the launch gave no answer: a refusal for a tool, nothing for anything else."""
    if event != "PreToolUse":
        return ""
    return refusal(f"agentlaunch refused the tool: the launch's budget gate gave no answer ({why})")


def ask(path: str, event: str, raw: bytes, wait: float = ASK_WAIT) -> str:
    """The launch's answer to ``event`` with the CLI's bytes ``raw``, or :func:`closed`'s when none came."""
    import socket
    import time

    # The body's length in the header: the request is whole without shutting this side, so a launch on any system
    # tells this hook going away (its connection reads end of file) from it waiting (macOS's poll() reports a
    # connection half shut as hung up).
    head = b'{"event": "' + event.encode("ascii", "replace") + b'", "length": ' + str(len(raw)).encode() + b"}\n"
    end = time.monotonic() + wait
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError as exc:
        return closed(event, f"no socket: {exc.strerror or exc}")
    try:
        sock.settimeout(wait)
        sock.connect(path)
        sock.sendall(head + raw)
        got = b""
        while len(got) <= MAX_ANSWER:
            left = end - time.monotonic()
            if left <= 0:
                return closed(event, f"none within {wait:g} s")
            sock.settimeout(left)
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            got += chunk
    except TimeoutError:
        return closed(event, f"none within {wait:g} s")
    except OSError as exc:
        return closed(event, f"cannot reach the launch: {exc.strerror or exc}")
    finally:
        sock.close()
    if not got.startswith(MARK):
        return closed(event, "the launch closed without answering")
    return got[len(MARK) :].decode("utf-8", "replace")


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        return 0
    path, event = argv[1], argv[2]
    try:
        raw = sys.stdin.buffer.read(MAX_INPUT)
    except (OSError, ValueError):
        raw = b""
    answer = ask(path, event, raw, WAITS.get(event, ASK_WAIT))
    try:
        sys.stdout.write(answer)
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
