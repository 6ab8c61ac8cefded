"""A native Codex launch's rollout files: which is this launch's (the newest of its working directory since it
started), and what one already holds (the calls it records, the answers it gave), read without parsing every line."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from hashlib import sha256
from pathlib import Path
from typing import Any

from agentlaunch.providers import untrusted
from agentlaunch.providers.untrusted import file_key, label, opt_label, string

HEAD_LIMIT = 1 << 20


def recorded_ids(path: Path) -> tuple[set[str], set[str]]:
    """The ``response_id`` of every per-call record in a rollout file, and the keys of its agent messages
    (``AgentMessage`` item ids and ``turn:ID`` of each completed turn, as
    :class:`~agentlaunch.providers.native.codex.CodexNativeSource` keys them)."""
    ids, answers = set(), set()
    for obj in _lines_with(path, ('"token_usage_record"', '"AgentMessage"', '"task_complete"')):
        if not isinstance(obj, dict):
            continue
        payload = untrusted.obj(obj.get("payload"))
        kind = obj.get("type")
        if kind == "token_usage_record":
            if call_id := opt_label(payload.get("response_id")):
                ids.add(call_id)
        elif kind == "event_msg" and payload.get("type") == "item_completed":
            item = untrusted.obj(payload.get("item"))
            if label(item.get("type")) == "AgentMessage":
                answers.add(opt_label(item.get("id")) or "text:" + text_digest(agent_text(item)))
        elif kind == "event_msg" and payload.get("type") == "task_complete":
            text = string(payload.get("last_agent_message"))
            answers.add("turn:" + (opt_label(payload.get("turn_id")) or text_digest(text)))
    return ids, answers


def _lines_with(path: Path, markers: tuple[str, ...]) -> list[Any]:
    """What the lines of ``path`` holding one of ``markers`` parse to (the others are never parsed; [] unreadable)."""
    found = []
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if any(marker in line for marker in markers):
                    with contextlib.suppress(ValueError):  # not JSON, or nested too deep: not a line Codex writes
                        found.append(untrusted.loads(line))
    except OSError:
        return []
    return found


def agent_text(item: dict[str, Any]) -> str:
    """The text of an ``AgentMessage`` item: its ``Text`` parts joined (any other part is not text)."""
    parts = untrusted.items(item.get("content"))
    return "".join(string(p.get("text")) for p in parts if isinstance(p, dict) and label(p.get("type")).lower() == "text")


def text_digest(text: str) -> str:
    """The key of an agent message without an id (its text's digest)."""
    return sha256(text.encode("utf-8", "replace")).hexdigest()[:32]


def newest_rollout(home: Path, working_dir: Path, started_at: float, not_of: Sequence[str] = ()) -> Path | None:
    """The rollout file of a thread started in ``working_dir`` after ``started_at``, if any (the newest).

    Only the day folders of the launch and of today are listed (local and UTC dates), and a file's
    first line (its ``session_meta``) must name ``working_dir`` as its cwd. The files of the threads
    ``not_of`` names (a fork's parent, which may write its own file just as the fork starts) are left out.
    """
    skipped = tuple(f"-{key}.jsonl" for key in map(file_key, not_of) if key)
    days = set()
    for moment in (started_at, time.time()):
        for fmt in (time.localtime(moment), time.gmtime(moment)):
            days.add(time.strftime("%Y/%m/%d", fmt))
    found: list[tuple[float, Path]] = []
    for day in days:
        folder = home / "sessions" / day
        try:
            entries = list(folder.glob("rollout-*.jsonl"))
        except OSError:
            continue
        for path in entries:
            try:
                mtime = path.stat().st_mtime
            except OSError:
                continue
            if mtime + 1 < started_at or path.name.endswith(skipped):
                continue
            if _rollout_cwd(path) == str(working_dir):
                found.append((mtime, path))
    return max(found)[1] if found else None


def _rollout_cwd(path: Path) -> str | None:
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            head = untrusted.loads(fh.readline(HEAD_LIMIT))
    except (OSError, ValueError):
        return None
    if not isinstance(head, dict) or head.get("type") != "session_meta":
        return None
    return label(untrusted.obj(head.get("payload")).get("cwd")) or None
