"""Codex's own records read back: its token figures in agentlaunch's vocabulary, its home, its rollout files.

Both ways of running Codex read them: a headless turn (:mod:`agentlaunch.providers.codex`, which splits a turn into
the calls its rollout records) and the interface (:mod:`agentlaunch.providers.native.codex`, which tails the
rollout). ``input_tokens`` includes the cached tokens; :func:`codex_usage` gives the uncached input.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from agentlaunch.events import CallUsage
from agentlaunch.providers import untrusted
from agentlaunch.providers.base import json_lines
from agentlaunch.providers.untrusted import BadUsage, count, counts, file_key, label, opt_label, part_of
from agentlaunch.token_usage import Usage

CODEX_FIELDS = ("input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens", "reasoning_output_tokens")


def codex_usage(raw: Any) -> Usage:
    """Codex's figures in agentlaunch's vocabulary: uncached input = input - cached.

    BadUsage when they are not token counts, ``input_tokens`` or
    ``output_tokens`` is missing, or the cached tokens exceed the input that includes them.
    """
    found = counts(raw, CODEX_FIELDS, required=("input_tokens", "output_tokens"))
    cached = found["cached_input_tokens"]
    return Usage(
        input=part_of(cached, found["input_tokens"], "cached_input_tokens", "input_tokens"),
        cache_write=found["cache_write_input_tokens"],
        cache_read=cached,
        output=found["output_tokens"],
        reasoning=found["reasoning_output_tokens"],
    )


def codex_home(env: Mapping[str, str]) -> Path:
    return Path(env.get("CODEX_HOME") or Path(env.get("HOME", "~")).expanduser() / ".codex")


_rollouts: dict[tuple[Path, str], list[Path]] = {}
"""The rollout files found this process, by sessions folder and thread: a turn reads its thread's rollout three or
four times (its calls, its window, its total)."""


def thread_days(thread_id: str) -> list[str]:
    """The ``YYYY/MM/DD`` folders a thread's rollout can be in, from its id's time: Codex's thread ids are UUIDv7,
    whose first 48 bits are the Unix time in ms, and the folder is the day of that time where Codex ran, so the UTC
    day and the days either side of it. None (an empty list) for an id that is not a version-7 UUID."""
    digits = thread_id.replace("-", "")
    if len(digits) != 32 or digits[12] != "7" or not all(c in "0123456789abcdefABCDEF" for c in digits):
        return []
    seconds = int(digits[:12], 16) / 1000
    return [time.strftime("%Y/%m/%d", time.gmtime(seconds + shift)) for shift in (-86400, 0, 86400)]


def rollout_files(thread_id: str, env: Mapping[str, str]) -> list[Path]:
    """The thread's rollout file(s): ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-…-THREAD_ID.jsonl``.

    One file per thread (a resumed thread appends to it), in the folder of the day the thread started. For a
    thread id that is a UUIDv7 (Codex's), only the folders of the days its time can be are listed: a walk of every
    day's folder (``rglob``) took 50-60 ms for a year of sessions, and a headless turn looks three or four times,
    the first before Codex has written the file (measured). Any other id: the walk. A file moved out of its day's
    folder is not found (the turn is then kept as its printed sum, as with no file).
    """
    sessions = codex_home(env) / "sessions"
    key = file_key(thread_id)
    if key is None:
        return []
    known = _rollouts.get((sessions, key))
    if known and all(path.is_file() for path in known):
        return known
    pattern = f"rollout-*-{key}.jsonl"
    days = thread_days(key)
    if days:
        found = sorted(path for day in days for path in (sessions / day).glob(pattern))
    else:
        found = sorted(sessions.rglob(pattern)) if sessions.is_dir() else []
    if found:
        _rollouts[(sessions, key)] = found
    return found


def rollout_payloads(thread_id: str, env: Mapping[str, str], marker: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(line type, payload) of the thread's rollout lines that contain ``marker``, in file order (:func:`rollout_files`)."""
    for path in rollout_files(thread_id, env):
        for obj in json_lines(path, marker):
            payload = obj.get("payload") if isinstance(obj, dict) else None
            if isinstance(payload, dict):
                yield label(obj.get("type")), payload


def rollout_context_window(thread_id: str, env: Mapping[str, str]) -> int | None:
    """``model_context_window`` from the thread's rollout file, when it can be found."""
    window = None
    for _, payload in rollout_payloads(thread_id, env, "model_context_window"):
        info = untrusted.obj(payload.get("info"))
        value = count(payload.get("model_context_window")) or count(info.get("model_context_window"))
        if value:
            window = value
    return window


def rollout_calls(thread_id: str, env: Mapping[str, str]) -> list[tuple[CallUsage, Usage | None]]:
    """Every model call of the thread, from the rollout's ``token_usage_record`` lines: (the call's exact usage,
    the thread's running total after it, when recorded). A record whose figures are not counts is left out
    (the turn is then kept as its printed sum, see :func:`~agentlaunch.providers.base.split_turn`)."""
    calls = []
    for kind, payload in rollout_payloads(thread_id, env, '"token_usage_record"'):
        if kind == "token_usage_record" and isinstance(payload.get("usage"), dict):
            try:
                usage = codex_usage(payload["usage"])
            except BadUsage:
                continue
            try:
                running = codex_usage(payload["thread_token_usage"]) if "thread_token_usage" in payload else None
            except BadUsage:
                running = None
            calls.append((CallUsage(usage, call_id=opt_label(payload.get("response_id"))), running))
    return calls


def rollout_total(thread_id: str, env: Mapping[str, str]) -> Usage | None:
    """The thread's running total as its rollout last recorded it (``token_count`` events), or None."""
    total = None
    for kind, payload in rollout_payloads(thread_id, env, "total_token_usage"):
        info = untrusted.obj(payload.get("info"))
        if kind == "event_msg" and payload.get("type") == "token_count" and isinstance(info.get("total_token_usage"), dict):
            try:
                total = codex_usage(info["total_token_usage"])
            except BadUsage:
                continue
    return total
