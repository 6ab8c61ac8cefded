"""Claude Code's session transcript as normalized events: one ``CallUsage`` per model call, compactions, answer text.

Claude Code appends every message of an interactive session to
``$CLAUDE_CONFIG_DIR/projects/<cwd, every character but letters and digits as
->/<session id>.jsonl`` (``~/.claude`` without the variable). An ``assistant``
line holds one content block of a model reply, and its ``message`` has the
shape the Messages API (and the stream-json ``assistant`` event) has: ``id``,
``model`` and ``usage`` with the call's final counts (measured on 2.1.332:
every line of a call carries the same, final ``usage``, output included).

A call is counted once. A line whose ``message.stop_reason`` is set was
written after the call ended, so it is counted at once; a line without one
(a call cut short) counts, with the usage of its last line read, when the call
is known to be over: another line follows it (the next block of another call, the tool's
result, a system line) or the launch says so (:meth:`CallsFromTranscript.close_calls`
after a hook that only runs between calls, and at the end). Ids already counted are
remembered (a bounded set), so a line read twice, a transcript read again from
its start after it was replaced, or a resumed session's old lines never count a
call twice. Lines from before the launch started (a resumed session's history)
are skipped by their ``timestamp``.

Some calls never get an ``assistant`` line: the summary calls of a compaction
(``/compact`` or automatic) and the CLI's side queries. Claude Code's
``cost-state`` lines (written as a session ends, measured on 2.1.332) hold the
session's totals per model (``modelUsage``); what they hold beyond the calls
counted from ``assistant`` lines since the previous ``cost-state`` is counted as
one more ``CallUsage`` per model, its ``call_id`` ``side-calls-N``: those calls'
sum, since they cannot be told apart. A ``cost-state`` whose totals went down
(a new process's count) only becomes the new base, as does one read before any
line written since the launch started (a resumed session's history). A file
read from its end starts from its last ``cost-state`` (:func:`last_cost_state`).

The model's answer text comes out as one ``Text`` per ``text`` block of an
``assistant`` line (Claude Code writes each block of a reply on its own line,
with the same ``message.id`` and the block's ``apiBlockIndex``), in the
transcript's order, once: a block is known by its message id and index (else
its line's ``uuid``), so a line read again gives none. Thinking, tool use, the
CLI's own stand-ins for failed calls, sub-agents' lines (``isSidechain``) and
lines from before the launch started (by ``timestamp``, as for calls) give none.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from hashlib import sha256
from typing import Any

from agentlaunch.events import CallUsage, Compaction, Event, Text, Warning
from agentlaunch.providers import untrusted
from agentlaunch.providers.claude_parser import anthropic_usage
from agentlaunch.providers.untrusted import BadUsage, Recent, count, opt_label, refused, string
from agentlaunch.sinks import StateChanged
from agentlaunch.token_usage import Usage

INTERRUPTED = "[Request interrupted by user"
"""The text Claude Code writes as a user line when Esc ends a turn (during an answer, or refusing a tool):
no Stop hook runs then, so this line is how the turn's end is known."""
RETRY_CAUSE = "Claude Code's transcript does not say why (its screen does)"
STATE_SKEW = 2.0
"""Seconds of clock difference tolerated when telling the launch's lines from earlier ones by timestamp."""

Item = Event | StateChanged


def project_folder(cwd: str) -> str:
    """The folder name Claude Code gives a working directory under ``projects/`` (``/a/b.c`` -> ``-a-b-c``)."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def _timestamp(value: Any) -> float | None:
    text = string(value)
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class CallsFromTranscript:
    """Turns transcript lines (parsed JSON values) into events, counting each call exactly once."""

    def __init__(self, started_at: float | None = None, base: dict[str, Usage] | None = None, skew: float = STATE_SKEW) -> None:
        self.started_at = started_at
        self.skew = skew
        """How much earlier than ``started_at`` a line may be stamped and still be this launch's (0 for a fork)."""
        self._base: dict[str, Usage] = dict(base or {})
        """The session's totals per model at the last ``cost-state`` (none yet: zero)."""
        self._since: dict[str, Usage] = {}
        """What the ``assistant`` lines counted per model since then."""
        self._side = 0
        self._live = started_at is None
        """A line written since the launch started was read: a ``cost-state`` from now on is this launch's."""
        self._pending: dict[str, tuple[Usage, str | None]] = {}
        self._counted = Recent()
        self._refused = Recent()
        self._compactions = Recent(1_000)
        self._texts = Recent()
        """The text blocks already given as ``Text``: (message id, block index or line uuid or digest)."""
        self.calls = 0
        self._tools = Recent()
        """The ids of the tools the calls read so far asked for."""
        self._requests: dict[str, tuple[str, int]] = {}
        """Per query source, the digest of the last API request sent and how many times it was sent in a row."""
        self.version: str | None = None
        """The CLI's version, from this launch's lines (Claude Code 2.1.332 writes it on each prompt and answer)."""

    def asked_for(self, tool_id: str) -> bool:
        """A call read so far asked for the tool ``tool_id`` (its ``tool_use`` block is in the transcript)."""
        return tool_id in self._tools

    def _early(self, line: dict[str, Any]) -> bool:
        stamp = _timestamp(line.get("timestamp"))
        early = self.started_at is not None and stamp is not None and stamp < self.started_at - self.skew
        if stamp is not None and not early:
            self._live = True
        return early

    def lines(self, lines: list[Any]) -> list[Item]:
        """The events of ``lines``, in order."""
        items: list[Item] = []
        for line in lines:
            if isinstance(line, dict):
                items += self.line(line)
        return items

    def line(self, line: dict[str, Any]) -> list[Item]:
        """The events of one transcript line (a call is counted when a line that is not part of it follows)."""
        kind = line.get("type")
        if not self._early(line) and (version := opt_label(line.get("version"))):  # notes whether it is this launch's
            self.version = version
        if kind == "assistant":
            self._requests.clear()  # an answer came: the next request is a new one
            return self._assistant(line)
        if kind == "api-request":
            return [] if self._early(line) else self._request(line)
        items: list[Item] = []
        if kind in ("user", "system", "attachment", "cost-state"):
            items += self.close_calls()
        if kind == "user":
            self._requests.clear()  # a prompt or a tool's result: the next request carries it
        if kind == "cost-state" and not self._early(line):
            items += self._cost_state(untrusted.obj(line.get("modelUsage")))
        if kind == "system" and line.get("subtype") == "compact_boundary" and not self._early(line):
            key = opt_label(line.get("uuid")) or json.dumps(line.get("compactMetadata"), sort_keys=True)[:200]
            if self._compactions.first_time(key):
                meta = untrusted.obj(line.get("compactMetadata"))
                trigger = opt_label(meta.get("trigger"))
                items.append(Compaction(trigger, count(meta.get("preTokens")), count(meta.get("postTokens"))))
        elif kind == "user" and not self._early(line) and self._interrupted(line):
            items.append(StateChanged("waiting", source="transcript"))
        return items

    def _request(self, line: dict[str, Any]) -> list[Item]:
        """An ``api-request`` line: the same request sent again with no answer between is Claude Code retrying it.

        Measured on 2.1.332 (the fake API answering 529): the interface writes one ``api-request`` line per attempt,
        each with the same ``requestDigest``, and nothing else; the cause (``529 overloaded``) is on its screen only.
        """
        digest = opt_label(line.get("requestDigest"))
        if digest is None:
            return []
        source = opt_label(line.get("querySource")) or ""
        last, sent = self._requests.get(source, ("", 0))
        sent = sent + 1 if digest == last else 1
        self._requests[source] = (digest, sent)
        if sent < 2:
            return []
        return [StateChanged("retrying", reason=f"the same API request sent {sent} times; {RETRY_CAUSE}", source="transcript")]

    @staticmethod
    def _interrupted(line: dict[str, Any]) -> bool:
        content = untrusted.obj(line.get("message")).get("content")
        if isinstance(content, str):
            return content.startswith(INTERRUPTED)
        for block in untrusted.items(content):
            if isinstance(block, dict) and block.get("type") == "text" and string(block.get("text")).startswith(INTERRUPTED):
                return True
        return False

    def _assistant(self, line: dict[str, Any]) -> list[Item]:
        msg = untrusted.obj(line.get("message"))
        call_id = opt_label(msg.get("id"))
        items: list[Item] = []
        if call_id is None or line.get("isApiErrorMessage") or msg.get("model") == "<synthetic>":
            # No id to count it by, or the CLI's own stand-in for a failed call (no tokens).
            return items
        for block in untrusted.items(msg.get("content")):
            if isinstance(block, dict) and block.get("type") == "tool_use" and (tool_id := opt_label(block.get("id"))):
                self._tools.add(tool_id)
        # A line of another call means the calls before it are over.
        for other in [c for c in self._pending if c != call_id]:
            items.append(self._count(other))
        if not self._early(line) and line.get("isSidechain") is not True:
            items += self._answer(line, msg, call_id)
        if call_id in self._counted or call_id in self._refused or self._early(line):
            return items
        try:
            usage = anthropic_usage(msg.get("usage"))
        except BadUsage as why:
            self._pending.pop(call_id, None)
            self._refused.add(call_id)
            items.append(Warning(refused("claude", call_id, why)))
            return items
        # A line whose message has its stop reason holds the call's final figures: count it now.
        # Otherwise the last line read counts (output can only grow as blocks arrive).
        previous = self._pending.get(call_id)
        if previous is None or usage.output >= previous[0].output:
            self._pending[call_id] = (usage, opt_label(msg.get("model")))
        if string(msg.get("stop_reason")):
            items.append(self._count(call_id))
        return items

    def _answer(self, line: dict[str, Any], msg: dict[str, Any], call_id: str) -> list[Item]:
        """A ``Text`` for each ``text`` block of the line not given before (a block is written once, read maybe twice)."""
        items: list[Item] = []
        block = line.get("apiBlockIndex")
        place = block if isinstance(block, int) and not isinstance(block, bool) else opt_label(line.get("uuid"))
        for n, part in enumerate(untrusted.items(msg.get("content"))):
            text = string(part.get("text")) if isinstance(part, dict) and part.get("type") == "text" else ""
            if not text.strip():
                continue
            where = place if place is not None else sha256(text.encode("utf-8", "replace")).hexdigest()
            if self._texts.first_time((call_id, where, n)):
                items.append(Text(text))
        return items

    def _count(self, call_id: str) -> CallUsage:
        usage, model = self._pending.pop(call_id)
        self._counted.add(call_id)
        self.calls += 1
        key = model or ""
        self._since[key] = self._since.get(key, Usage()) + usage
        return CallUsage(usage, model, call_id)

    def _cost_state(self, model_usage: dict[str, Any]) -> list[Item]:
        totals = {model: usage for model, raw in model_usage.items() if (usage := model_totals(raw)) is not None}
        if len(totals) != len(model_usage) or not totals:
            return []  # a figure that is not a count: nothing to reconcile against
        if not self._live:
            # History (a resumed session's file read from its start): its totals are the base, not this launch's calls.
            self.rebase(totals)
            return []
        items: list[Item] = []
        went_down = False
        extra: dict[str, Usage] = {}
        for model, total in totals.items():
            side = total - self._base.get(model, Usage()) - self._since.pop(model, Usage())
            fields = (side.input, side.cache_write, side.cache_read, side.output)
            if min(fields) < 0:
                went_down = True
            elif max(fields) > 0:
                extra[model] = side
        unmatched = {m for m in self._since if m and m not in totals}
        if not went_down and not unmatched:
            for model, side in extra.items():
                self._side += 1
                items.append(CallUsage(side, model, f"side-calls-{self._side}"))
        self._base, self._since = totals, {}
        return items

    def rebase(self, base: dict[str, Usage]) -> None:
        """Start the per-model totals again from ``base``: the CLI moved to another session's file, whose
        ``cost-state`` counts from zero (measured after ``/clear``) or from that session's history."""
        self._base, self._since = dict(base), {}
        self._live = self.started_at is None

    @property
    def open_calls(self) -> int:
        """Calls read but not counted yet (their last line may still come)."""
        return len(self._pending)

    def close_calls(self) -> list[Item]:
        """Count every call read so far: the launch knows they are over (a hook between calls, the end)."""
        return [self._count(call_id) for call_id in list(self._pending)]


def model_totals(raw: Any) -> Usage | None:
    """One model's session totals in a ``cost-state`` line (``inputTokens``, ...), or None when not counts."""
    entry = untrusted.obj(raw)
    found = [count(entry.get(k, 0)) for k in ("inputTokens", "cacheCreationInputTokens", "cacheReadInputTokens", "outputTokens")]
    if any(v is None for v in found):
        return None
    return Usage(*(v or 0 for v in found))


COST_STATE_SCAN = 4 << 20
"""How much of a resumed transcript's end is searched for its last ``cost-state`` line."""


def last_cost_state(path: Any) -> dict[str, Usage]:
    """The per-model totals of the last ``cost-state`` line in the last few MiB of ``path`` ({} when none)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(size - COST_STATE_SCAN, 0))
            data = f.read(COST_STATE_SCAN)
    except OSError:
        return {}
    for raw in reversed(data.split(b"\n")):
        if b'"cost-state"' not in raw:
            continue
        try:
            line = untrusted.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            continue
        if isinstance(line, dict) and line.get("type") == "cost-state":
            usage = untrusted.obj(line.get("modelUsage"))
            totals = {m: u for m, r in usage.items() if (u := model_totals(r)) is not None}
            return totals if len(totals) == len(usage) else {}
    return {}


_ID = re.compile(rb'"message"\s*:\s*\{.{0,2000}?"id"\s*:\s*"([^"\\]{1,256})"', re.DOTALL)
_MODEL = re.compile(rb'"model"\s*:\s*"([^"\\]{1,256})"')
_STOP = re.compile(rb'"stop_reason"\s*:\s*"([^"\\]{1,64})"')
_STAMP = re.compile(rb'"timestamp"\s*:\s*"([^"\\]{1,64})"')


def _usage_in(part: bytes) -> Any:
    """The last ``"usage": {...}`` object that parses whole in ``part``, or None."""
    text = part.decode("utf-8", "replace")
    for match in reversed(list(re.finditer(r'"usage"\s*:\s*\{', text))):
        try:
            value, _ = json.JSONDecoder().raw_decode(text, match.end() - 1)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def salvage_line(head: bytes, tail: bytes) -> dict[str, Any] | None:
    """What an over-long transcript line still tells: for an ``assistant`` line, its call id, model and usage.

    A line of many megabytes is an assistant reply holding a huge tool input
    (a whole file to write). Its ``message.id`` and ``model`` come first in the
    line, ``stop_reason`` and ``usage`` after the content (2.1.332 writes them in
    that order), so the line's head and tail hold them.
    Anything else is skipped (None).
    """
    if b'"type":"assistant"' not in head.replace(b" ", b"") and b'"type":"assistant"' not in tail.replace(b" ", b""):
        return None
    found = _ID.search(head)
    usage = _usage_in(tail) or _usage_in(head)
    if found is None or usage is None:
        return None
    message: dict[str, Any] = {"id": found.group(1).decode("utf-8", "replace"), "usage": usage}
    for key, pattern, parts in (("model", _MODEL, (head,)), ("stop_reason", _STOP, (tail, head))):
        for part in parts:
            if hit := pattern.search(part):
                message[key] = hit.group(1).decode("utf-8", "replace")
                break
    line: dict[str, Any] = {"type": "assistant", "message": message}
    if stamp := _STAMP.search(tail) or _STAMP.search(head):
        line["timestamp"] = stamp.group(1).decode("utf-8", "replace")
    return line
