#!/usr/bin/env python3
"""A stand-in for Claude Code that answers every user line with a hostile stream around one valid call.

Set as ``command:`` of a ``provider: claude`` agent. It takes Claude Code's
flags and ignores them, reads stream-json user lines from stdin, and for each
prints ``system/init``, ``HOSTILE_NOISE_LINES`` (default 0) lines of plain
text, the lines of :func:`hostile_lines.noise`, then :func:`hostile_lines.valid_call`.
Only the standard library and its sibling module: it runs with any Python.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hostile_lines  # noqa: E402


def main(argv: list[str]) -> int:
    session_id = argv[argv.index("--session-id") + 1] if "--session-id" in argv else "hostile-session"
    noise_lines = int(os.environ.get("HOSTILE_NOISE_LINES") or 0)
    out = sys.stdout
    for raw in sys.stdin:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(message, dict) or message.get("type") != "user":
            continue
        out.write(hostile_lines.init(session_id) + "\n")
        chunk = "not JSON: a CLI that prints progress forever " * 2 + "\n"
        for start in range(0, noise_lines, 1000):
            out.write(chunk * min(1000, noise_lines - start))
        for line in hostile_lines.noise() + hostile_lines.valid_call(session_id):
            out.write(line + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
