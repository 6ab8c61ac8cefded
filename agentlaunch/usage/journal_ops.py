"""The usage store's journal ops: one write to the store as one JSON line, written and read back.

An :class:`Op` is one write a launch makes to the store (a session, its place,
title, events, calls, provider state, turns, end): :func:`call_op` and the
other ``*_op`` functions make one, :meth:`Op.line` writes it as a journal line
(``{"v": 1, "uid": ..., "op": ..., <fields>}``), and :func:`parse` reads a
journal's bytes back into ops, refusing any line whose fields are not exactly
the op's (never half-applied), each uid once, a half-written last line unread.

The file these lines go to is :mod:`agentlaunch.usage.journal`'s; what an op
does to the store is :func:`agentlaunch.usage.store_writes.apply_op`'s.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, get_args

from agentlaunch.datarecord import datarecord, field
from agentlaunch.token_usage import Usage, usage_problem
from agentlaunch.usage.records import CallRecord, from_ts, to_ts

OpKind = Literal["session", "place", "title", "event", "call", "state", "touch", "end"]
OP_KINDS: tuple[str, ...] = get_args(OpKind)
VERSION = 1
MAX_LINE = 64 * 1024  # one line is well under 4 KiB; a longer one is not ours
_LAST_TS = 253402300799.0  # 9999-12-31T23:59:59Z


def new_uid() -> str:
    """A random id for one write: 128 bits, so two writes never share one."""
    return os.urandom(16).hex()  # what secrets.token_hex(16) gives, without importing secrets (~1-5 ms)


@datarecord(frozen=True)
class Op:
    """One write to the store: ``kind`` names it, ``args`` are its fields as JSON values, ``uid`` makes it unique."""

    kind: OpKind
    args: Mapping[str, Any]
    uid: str = field(default_factory=new_uid)

    def line(self) -> bytes:
        """The op as one journal line (JSON, ``\\n`` at the end)."""
        data = {"v": VERSION, "uid": self.uid, "op": self.kind, **self.args}
        return json.dumps(data, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode() + b"\n"

    def call(self) -> CallRecord:
        """The call a ``call`` op stores."""
        a = self.args
        at = from_ts(a["at"])
        assert self.kind == "call" and at is not None
        return CallRecord(
            agent=a["agent"],
            provider=a["provider"],
            usage=Usage(**a["usage"]),
            session_id=a["session_id"],
            turn=a["turn"],
            model_requested=a["model_requested"],
            model_reported=a["model_reported"],
            cost_usd=a["cost_usd"],
            price_key=a["price_key"],
            at=at,
            full_price_usd=a["full_price_usd"],
        )


def call_op(call: CallRecord) -> Op:
    u = call.usage
    usage = {
        "input": u.input,
        "cache_write": u.cache_write,
        "cache_read": u.cache_read,
        "output": u.output,
        "reasoning": u.reasoning,
        "cache_write_1h": u.cache_write_1h,
    }
    return Op(
        "call",
        {
            "at": to_ts(call.at),
            "agent": call.agent,
            "provider": call.provider,
            "session_id": call.session_id,
            "turn": call.turn,
            "model_requested": call.model_requested,
            "model_reported": call.model_reported,
            "usage": usage,
            "cost_usd": call.cost_usd,
            "price_key": call.price_key,
            "full_price_usd": call.full_price_usd,
        },
    )


def session_op(session_id: str, *, agent: str, provider: str, working_dir: str, model: str | None, at: datetime) -> Op:
    args = {"session_id": session_id, "agent": agent, "provider": provider, "working_dir": working_dir, "model": model}
    return Op("session", {**args, "at": to_ts(at)})


def place_op(session_id: str, tmux_session: str, tmux_window: str | None, tmux_layout: str | None) -> Op:
    return Op(
        "place", {"session_id": session_id, "tmux_session": tmux_session, "tmux_window": tmux_window, "tmux_layout": tmux_layout}
    )


def title_op(session_id: str, prompt: str) -> Op:
    return Op("title", {"session_id": session_id, "prompt": prompt})


def event_op(session_id: str, kind: str, detail: str | None, at: datetime) -> Op:
    return Op("event", {"session_id": session_id, "kind": kind, "detail": detail, "at": to_ts(at)})


def state_op(session_id: str, state: dict[str, Any] | None) -> Op:
    return Op("state", {"session_id": session_id, "state": state})


def touch_op(session_id: str, turns: int, at: datetime) -> Op:
    return Op("touch", {"session_id": session_id, "turns": turns, "at": to_ts(at)})


def end_op(session_id: str, exit_status: int | None, at: datetime) -> Op:
    return Op("end", {"session_id": session_id, "exit_status": exit_status, "at": to_ts(at)})


# What each op's fields must be; a line whose fields differ is not read (never half-applied).
_TEXT, _OPT_TEXT, _TIME, _OPT_INT, _INT, _OPT_USD, _USAGE, _STATE = range(8)
_FIELDS: dict[str, dict[str, int]] = {
    "session": {"session_id": _TEXT, "agent": _TEXT, "provider": _TEXT, "working_dir": _TEXT, "model": _OPT_TEXT, "at": _TIME},
    "place": {"session_id": _TEXT, "tmux_session": _TEXT, "tmux_window": _OPT_TEXT, "tmux_layout": _OPT_TEXT},
    "title": {"session_id": _TEXT, "prompt": _TEXT},
    "event": {"session_id": _TEXT, "kind": _TEXT, "detail": _OPT_TEXT, "at": _TIME},
    "call": {
        "at": _TIME,
        "agent": _TEXT,
        "provider": _TEXT,
        "session_id": _OPT_TEXT,
        "turn": _OPT_INT,
        "model_requested": _OPT_TEXT,
        "model_reported": _OPT_TEXT,
        "usage": _USAGE,
        "cost_usd": _OPT_USD,
        "price_key": _OPT_TEXT,
        "full_price_usd": _OPT_USD,
    },
    "state": {"session_id": _TEXT, "state": _STATE},
    "touch": {"session_id": _TEXT, "turns": _INT, "at": _TIME},
    "end": {"session_id": _TEXT, "exit_status": _OPT_INT, "at": _TIME},
}
_MAX_INT = (1 << 53) - 1


def _fits(kind: int, value: Any) -> bool:
    if kind in (_OPT_TEXT, _OPT_INT, _OPT_USD, _STATE) and value is None:
        return True
    if kind in (_TEXT, _OPT_TEXT):
        return isinstance(value, str) and _utf8(value)
    if kind in (_INT, _OPT_INT):
        return type(value) is int and -_MAX_INT <= value <= _MAX_INT
    if kind == _TIME:
        return type(value) in (int, float) and math.isfinite(value) and 0 <= value <= _LAST_TS
    if kind == _OPT_USD:
        return type(value) in (int, float) and math.isfinite(value) and 0 <= value <= 1e12
    if kind == _STATE:
        return isinstance(value, dict)
    # _USAGE: exactly Usage's fields, each a possible count
    if not isinstance(value, dict) or set(value) != {
        "input",
        "cache_write",
        "cache_read",
        "output",
        "reasoning",
        "cache_write_1h",
    }:
        return False
    return usage_problem(Usage(**value)) is None


def _utf8(text: str) -> bool:
    """Whether SQLite can take ``text`` (JSON can spell a lone surrogate, which no UTF-8 string holds)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def read_op(line: bytes) -> Op | None:
    """The op a journal line holds (without its ``\\n``), or None when the line is not one this version wrote."""
    if len(line) > MAX_LINE:
        return None
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    if not isinstance(data, dict) or data.get("v") != VERSION:
        return None
    kind, uid = data.pop("op", None), data.pop("uid", None)
    data.pop("v")
    if kind not in _FIELDS or not isinstance(uid, str) or not 0 < len(uid) <= 64:
        return None
    fields = _FIELDS[kind]
    if set(data) != set(fields) or not all(_fits(fields[name], data[name]) for name in fields):
        return None
    if isinstance(data.get("at"), int):
        data["at"] = float(data["at"])
    return Op(kind, data, uid)


@datarecord(frozen=True)
class Read:
    """What one read of the journal found: the ops, in order (a uid once), and the lines that were not ops."""

    ops: list[Op]
    bad: list[int]  # 1-based numbers of complete lines that are not ops
    end: int  # the bytes up to here are read (a half-written last line is not)


def parse(data: bytes) -> Read:
    """The ops of journal bytes. Never raises: a line that is not an op is named in ``bad``; the bytes
    after the last ``\\n`` (a line a writer was killed while writing) are left unread."""
    ops: list[Op] = []
    bad: list[int] = []
    seen: set[str] = set()
    end = data.rfind(b"\n") + 1
    for number, line in enumerate(data[:end].split(b"\n")[:-1], start=1):
        if not line.strip():
            continue  # the newline an append put after a half-written line
        op = read_op(line)
        if op is None:
            bad.append(number)
        elif op.uid not in seen:
            seen.add(op.uid)
            ops.append(op)
    return Read(ops, bad, end)
