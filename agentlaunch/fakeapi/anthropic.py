"""A scripted fake of the Anthropic Messages API, for running the real ``claude``.

A :class:`FakeAnthropic` holds a queue of planned replies. Each streamed
``POST /v1/messages`` takes the next one (a text reply, a tool call or an HTTP
error); when the queue is empty it answers :data:`DEFAULT_TEXT`. Every request
is recorded by the underlying :class:`FakeServer`, so tests can read the exact
body the provider would have received::

    api = FakeAnthropic([text_reply("hello", usage=ApiUsage(12, 5000, 9000, 7))])
    with api.serve() as server:
        env = claude_env(server.url, home=tmp_path)
        ...
    body = api.message_requests()[0].body
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentlaunch import datarecord as records
from agentlaunch.fakeapi.server import FakeServer, Recorded, Reply, sse

DEFAULT_TEXT = "ok"
DEFAULT_MODEL = "claude-sonnet-4-5"


@dataclass(frozen=True)
class ApiUsage:
    """Usage figures of one API call, as Anthropic reports them.

    ``input_tokens`` excludes cache reads and writes. ``output_tokens`` is the
    final count sent in ``message_delta``; ``message_start`` carries
    ``start_output_tokens`` (Anthropic sends 1 there).
    """

    input_tokens: int = 10
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    output_tokens: int = 5
    start_output_tokens: int = 1
    cache_creation_1h: int = 0
    """Of ``cache_creation_input_tokens``, those written with the 1-hour lifetime (sent as ``cache_creation``)."""


@dataclass(frozen=True)
class TextReply:
    """The model answers with one text block."""

    text: str
    usage: ApiUsage = ApiUsage()
    delay: float = 0.0
    """Seconds to wait before the first chunk and between chunks."""
    thinking: str = ""  # a thinking block before the text (extended thinking): thinking_delta parts, then a signature


@dataclass(frozen=True)
class ToolUseReply:
    """The model calls a tool (``stop_reason`` ``tool_use``), optionally after some text, and ``more`` tools in the
    same message (the CLI runs the read-only ones together)."""

    name: str
    input: Mapping[str, Any]
    usage: ApiUsage = ApiUsage()
    text: str = ""
    tool_id: str | None = None
    delay: float = 0.0
    more: tuple[tuple[str, Mapping[str, Any]], ...] = ()


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error with an Anthropic JSON error body."""

    status: int = 500
    error_type: str = "api_error"
    message: str = "scripted failure"
    delay: float = 0.0


Planned = TextReply | ToolUseReply | ErrorReply

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def text_reply(text: str, usage: ApiUsage | None = None, delay: float = 0.0, thinking: str = "") -> TextReply:
    return TextReply(text, usage or ApiUsage(), delay, thinking)


def tool_reply(
    name: str,
    input: Mapping[str, Any],
    usage: ApiUsage | None = None,
    text: str = "",
    delay: float = 0.0,
    more: tuple[tuple[str, Mapping[str, Any]], ...] = (),
) -> ToolUseReply:
    return ToolUseReply(name, dict(input), usage or ApiUsage(), text, None, delay, more)


def error_reply(status: int, message: str = "scripted failure", delay: float = 0.0) -> ErrorReply:
    return ErrorReply(status, _ERROR_TYPES.get(status, "api_error"), message, delay)


def error_body(error_type: str, message: str) -> dict[str, Any]:
    """The JSON body Anthropic sends with an HTTP error."""
    return {"type": "error", "error": {"type": error_type, "message": message}}


@dataclass
class FakeAnthropic:
    """Scripted Anthropic Messages API. Thread-safe; pops one plan per streamed call."""

    script: Iterable[Planned] = ()
    default: Planned = field(default_factory=lambda: TextReply(DEFAULT_TEXT))
    model: str | None = None
    """Model id to report; None echoes the request's ``model``."""
    headers: dict[str, str] = field(default_factory=dict)
    """Headers added to every model call's reply (:func:`rate_limit_headers`); tests may replace them between calls."""

    def __post_init__(self) -> None:
        self._queue: deque[Planned] = deque(self.script)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.server: FakeServer | None = None

    # -- scripting -----------------------------------------------------------

    def push(self, *plans: Planned) -> None:
        """Append planned replies to the queue."""
        with self._lock:
            self._queue.extend(plans)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def _next(self) -> tuple[Planned, int]:
        with self._lock:
            plan = self._queue.popleft() if self._queue else self.default
            return plan, next(self._ids)

    # -- serving ---------------------------------------------------------------

    def serve(self, port: int = 0) -> FakeServer:
        """A (not yet started) loopback server answering with this script."""
        self.server = FakeServer(self.respond, port)
        return self.server

    @property
    def requests(self) -> list[Recorded]:
        return list(self.server.requests) if self.server else []

    def message_requests(self) -> list[Recorded]:
        """Recorded streamed model calls (``POST /v1/messages``), in order."""
        return [r for r in self.requests if _is_messages(r) and isinstance(r.body, dict)]

    def respond(self, req: Recorded) -> Reply:
        """The :data:`Responder` for :class:`FakeServer`."""
        if req.method == "POST" and _is_messages(req):
            body = req.body if isinstance(req.body, dict) else {}
            plan, n = self._next()
            model = self.model or str(body.get("model") or DEFAULT_MODEL)
            if isinstance(plan, ErrorReply):
                payload = json.dumps(error_body(plan.error_type, plan.message)).encode()
                return Reply(plan.status, {"content-type": "application/json"}, _delayed([payload], plan.delay))
            plan = _with_lifetime(plan, body)
            chunks = _message_events(plan, f"msg_fake_{n:04d}", model, n)
            extra = dict(self.headers)
            if not body.get("stream"):
                return Reply(200, {"content-type": "application/json", **extra}, [_collapse(plan, f"msg_fake_{n:04d}", model, n)])
            return Reply(200, {"content-type": "text/event-stream", **extra}, _delayed(chunks, plan.delay))
        if req.path.split("?")[0].endswith("/count_tokens"):
            return _json({"input_tokens": len(req.raw) // 4})
        if req.method == "GET" and "/v1/models" in req.path:
            return _json({"data": [], "has_more": False, "first_id": None, "last_id": None})
        return _json({})


def rate_limit_headers(
    five_hour: float | None, seven_day: float | None = None, *, five_hour_reset: int = 0, seven_day_reset: int = 0
) -> dict[str, str]:
    """The ``anthropic-ratelimit-unified-*`` headers of a subscription's reply: each window's used fraction (0.42
    is 42 %) and its reset (unix seconds; 0: an hour, or a week, from now). Claude Code reads them only for a
    claude.ai login or a Claude gateway (:func:`gateway_token`), and only with ``-status`` present."""
    now = int(time.time())
    headers = {"anthropic-ratelimit-unified-status": "allowed"}
    for short, used, reset, span in (("5h", five_hour, five_hour_reset, 3600), ("7d", seven_day, seven_day_reset, 7 * 86400)):
        if used is not None:
            headers[f"anthropic-ratelimit-unified-{short}-utilization"] = str(used)
            headers[f"anthropic-ratelimit-unified-{short}-reset"] = str(reset or now + span)
            headers[f"anthropic-ratelimit-unified-{short}-status"] = "allowed"
    return headers


def gateway_token() -> str:
    """An unsigned token whose audience is ``claude-gateway``: as ``ANTHROPIC_AUTH_TOKEN`` with a non-Anthropic
    ``ANTHROPIC_BASE_URL``, Claude Code 2.1.332 reads the plan's limits from the replies as for a subscription
    (measured; with ``ANTHROPIC_API_KEY`` alone it reads none)."""
    import base64

    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return part({"alg": "none", "typ": "JWT"}) + "." + part({"aud": "claude-gateway", "sub": "agentlaunch-tests"}) + ".fake"


def asks_one_hour(body: Mapping[str, Any]) -> bool:
    """The request asks for the 1-hour cache lifetime (a ``cache_control`` with ``ttl: "1h"`` anywhere in it)."""
    return '"ttl": "1h"' in json.dumps(body)


def _with_lifetime(plan: TextReply | ToolUseReply, body: Mapping[str, Any]) -> TextReply | ToolUseReply:
    """As the API does: the cache writes of a request that asks for 1 hour are 1-hour writes (unless scripted)."""
    if plan.usage.cache_creation_1h or not plan.usage.cache_creation_input_tokens:
        return plan
    if not asks_one_hour(body):
        return plan
    usage = records.replace(plan.usage, cache_creation_1h=plan.usage.cache_creation_input_tokens)
    return records.replace(plan, usage=usage)


def _is_messages(req: Recorded) -> bool:
    return req.path.split("?")[0].rstrip("/") == "/v1/messages"


def _json(data: Any, status: int = 200) -> Reply:
    return Reply(status, {"content-type": "application/json"}, [json.dumps(data).encode()])


def _delayed(chunks: Iterable[bytes], delay: float) -> Iterator[bytes]:
    for chunk in chunks:
        if delay:
            time.sleep(delay)
        yield chunk


def _usage_dict(u: ApiUsage, output: int) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "input_tokens": u.input_tokens,
        "cache_creation_input_tokens": u.cache_creation_input_tokens,
        "cache_read_input_tokens": u.cache_read_input_tokens,
        "output_tokens": output,
    }
    if u.cache_creation_1h:
        usage["cache_creation"] = {
            "ephemeral_5m_input_tokens": u.cache_creation_input_tokens - u.cache_creation_1h,
            "ephemeral_1h_input_tokens": u.cache_creation_1h,
        }
    return usage


def _blocks(plan: TextReply | ToolUseReply, n: int) -> list[dict[str, Any]]:
    if isinstance(plan, TextReply):
        thought = [{"type": "thinking", "thinking": plan.thinking, "signature": "fake-signature"}] if plan.thinking else []
        return [*thought, {"type": "text", "text": plan.text}]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": plan.text}] if plan.text else []
    tool_id = plan.tool_id or f"toolu_fake_{n:04d}"
    blocks.append({"type": "tool_use", "id": tool_id, "name": plan.name, "input": dict(plan.input)})
    for k, (name, tool_input) in enumerate(plan.more, 1):
        blocks.append({"type": "tool_use", "id": f"{tool_id}_{k}", "name": name, "input": dict(tool_input)})
    return blocks


def _stop_reason(plan: TextReply | ToolUseReply) -> str:
    return "tool_use" if isinstance(plan, ToolUseReply) else "end_turn"


def _message_events(plan: TextReply | ToolUseReply, msg_id: str, model: str, n: int) -> list[bytes]:
    """The SSE event sequence of one streamed message."""
    u = plan.usage
    out = [
        sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": _usage_dict(u, u.start_output_tokens),
                },
            },
        )
    ]
    for index, block in enumerate(_blocks(plan, n)):
        if (kind := block["type"]) in ("text", "thinking"):  # a thinking block ends with its signature
            start: dict[str, Any] = {"type": kind, kind: ""}
            deltas = [{"type": f"{kind}_delta", kind: part} for part in _split(block[kind])]
            deltas += [{"type": "signature_delta", "signature": block["signature"]}] if kind == "thinking" else []
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        out.append(sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
        for delta in deltas:
            out.append(sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    out.append(
        sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": _stop_reason(plan), "stop_sequence": None},
                "usage": {"output_tokens": u.output_tokens},
            },
        )
    )
    out.append(sse("message_stop", {"type": "message_stop"}))
    return out


def _collapse(plan: TextReply | ToolUseReply, msg_id: str, model: str, n: int) -> bytes:
    """A non-streamed message (some helper calls do not stream)."""
    message = {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _blocks(plan, n),
        "stop_reason": _stop_reason(plan),
        "stop_sequence": None,
        "usage": _usage_dict(plan.usage, plan.usage.output_tokens),
    }
    return json.dumps(message).encode()


def _split(text: str) -> list[str]:
    """Two deltas when possible, so streaming is visible; one for short text."""
    if len(text) < 2:
        return [text]
    mid = len(text) // 2
    return [text[:mid], text[mid:]]


# -- helpers for tests -----------------------------------------------------------


def claude_env(base_url: str, home: Path | str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment variables that point ``claude`` at a fake API with a throwaway HOME.

    Merge into a copy of ``os.environ`` (for PATH); never into the real one.
    """
    env = {"ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": "dummy", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    env.update({"HOME": str(home), **(extra or {})})
    return env


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def first_user_text(body: Mapping[str, Any]) -> str:
    """All text blocks of the first user message in a Messages request body, joined by newlines."""
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "user":
            return _text_of(message.get("content"))
    return ""


def system_text(body: Mapping[str, Any], include_messages: bool = False) -> str:
    """The system prompt of a Messages request body (string or text blocks), joined by newlines.

    Claude Code 2.1.328 also puts ``{"role": "system"}`` entries inside ``messages``
    for some models (its environment block); ``include_messages`` appends those.
    """
    parts = [_text_of(body.get("system"))]
    if include_messages:
        parts += [
            _text_of(m.get("content")) for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "system"
        ]
    return "\n".join(p for p in parts if p)
