"""Gemini's session files read back: where they are, and the model calls they record, each with its own figures.

Both ways of running Gemini read them: a headless turn (:mod:`agentlaunch.providers.gemini`, which splits a turn
into the calls its session file records) and the interface (:mod:`agentlaunch.providers.native.gemini`).
A call's ``tokens`` give ``input`` including ``cached``, and ``thoughts`` apart from ``output``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentlaunch.events import CallUsage
from agentlaunch.providers.base import json_lines
from agentlaunch.providers.untrusted import BadUsage, counts, file_key, label, loads, opt_label, part_of
from agentlaunch.token_usage import Usage

HEADER_LIMIT = 1 << 20  # a session file's first line (its header) is read up to this many characters
CALL_FIELDS = ("input", "cached", "thoughts", "output")


def call_usage(tokens: Any) -> Usage:
    """One call's ``tokens`` from the session file, in the vocabulary of :func:`gemini_usage` (BadUsage likewise)."""
    found = counts(tokens, CALL_FIELDS, required=("input", "output"))
    cached, thoughts = found["cached"], found["thoughts"]
    return Usage(
        input=part_of(cached, found["input"], "cached", "input"),
        cache_read=cached,
        output=found["output"] + thoughts,
        reasoning=thoughts,
    )


def session_files(session_id: str, env: Mapping[str, str]) -> list[Path]:
    """``~/.gemini/tmp/<project>/chats/session-<time>-<first 8 of the id>.jsonl`` whose first line names the session.

    ``~`` is ``$GEMINI_CLI_HOME`` when set (Gemini CLI's own rule), else ``$HOME``.
    A resumed session may leave a second file (seen after an interrupted
    resume: a header and no calls); they come oldest first.
    """
    key = file_key(session_id[:8]) if isinstance(session_id, str) else None
    if key is None:
        return []
    root = Path(env.get("GEMINI_CLI_HOME") or env.get("HOME", "~")).expanduser() / ".gemini" / "tmp"
    found = []
    for path in sorted(root.glob(f"*/chats/session-*-{key}.jsonl"), key=lambda p: p.name):
        try:
            with path.open(encoding="utf-8", errors="replace") as fh:
                head = loads(fh.readline(HEADER_LIMIT))
        except (OSError, ValueError):
            continue
        if isinstance(head, dict) and head.get("sessionId") == session_id:
            found.append(path)
    return found


def session_calls(session_id: str, env: Mapping[str, str]) -> list[CallUsage]:
    """Every model call of the session, from its session files (per-call ``tokens``), in order.

    A file is a log of changes: a message is written again when it changes
    (a tool call's result added, say), so the last version of each id counts.
    """
    calls: dict[str, CallUsage] = {}
    for path in session_files(session_id, env):
        for record in json_lines(path, '"tokens"'):
            if isinstance(record, dict) and record.get("type") == "gemini" and isinstance(record.get("tokens"), dict):
                try:
                    usage = call_usage(record["tokens"])
                except BadUsage:  # not counts: the turn is then kept as its printed sum
                    continue
                call_id = label(record.get("id"), "None")
                calls[call_id] = CallUsage(usage, opt_label(record.get("model")), call_id)
    return list(calls.values())
