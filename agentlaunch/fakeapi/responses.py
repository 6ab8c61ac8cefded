"""A scripted fake of the OpenAI Responses API, as the Codex CLI calls it.

``POST /v1/responses`` (``"stream": true``) is answered from a queue of planned
replies; when the queue is empty the default reply is used. Every request is
recorded by the underlying :class:`FakeServer`. Other endpoints (``GET
/v1/models`` and anything else) get a harmless answer.

Typical use::

    script = ResponsesScript([TextReply("hi", ResponsesUsage(9000, 8000, 7))])
    with ResponsesFake(script) as fake:
        env = prepare_codex_home(tmp_path / "home", fake.base_url)
        subprocess.run([codex, *codex_quiet_args(), "exec", "--json", ...], env=env)
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentlaunch.fakeapi.server import Recorded, Reply, ReplyScript, ScriptedFake, sse

FAKE_ENV_KEY = "AGENTLAUNCH_FAKE_OPENAI_KEY"
"""The environment variable the ``fake`` model provider reads its API key from."""

DEFAULT_MODEL = "gpt-5.5"
"""A model Codex 0.169 has metadata for (unknown ids add an `error` item warning)."""


@dataclass(frozen=True)
class ResponsesUsage:
    """``response.usage`` of one call; ``input_tokens`` includes the cached tokens."""

    input_tokens: int = 100
    cached_tokens: int = 0
    output_tokens: int = 5
    reasoning_tokens: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": self.cached_tokens},
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            "total_tokens": self.input_tokens + self.output_tokens,
        }


@dataclass(frozen=True)
class TextReply:
    """An assistant message, streamed as a few text deltas."""

    text: str = "ok"
    usage: ResponsesUsage = field(default_factory=ResponsesUsage)
    delay: float = 0.0
    """Seconds to wait before answering (interrupted when the fake stops)."""
    stall: float = 0.0
    """Seconds to wait after the first delta, mid-stream (for interrupt tests)."""
    thinking: str = ""  # a reasoning item with this summary before the message, its summary streamed in pieces


@dataclass(frozen=True)
class ShellCallReply:
    """A function call of Codex's shell tool: 0.169 offers ``exec_command`` taking ``{"cmd": "..."}``."""

    command: str = "echo hello"
    usage: ResponsesUsage = field(default_factory=ResponsesUsage)
    name: str = "exec_command"
    arguments: Mapping[str, Any] | None = None
    """The full arguments object; overrides ``command`` when given."""
    delay: float = 0.0


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error with an OpenAI-style JSON error body."""

    status: int = 500
    message: str = "fake internal error"
    error_type: str = "server_error"
    code: str | None = None
    delay: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)


Planned = TextReply | ShellCallReply | ErrorReply


class ResponsesScript(ReplyScript[Planned]):
    """A thread-safe queue of planned replies to ``POST /v1/responses``."""

    def fallback(self) -> Planned:
        return TextReply()


class ResponsesFake(ScriptedFake):
    """A :class:`FakeServer` answering like the Responses API from a script."""

    def __init__(self, script: ResponsesScript | None = None, port: int = 0) -> None:
        self.script = script if script is not None else ResponsesScript()
        self._ids = itertools.count(1)
        super().__init__(self._respond, port)

    @property
    def base_url(self) -> str:
        """What goes in ``model_providers.fake.base_url`` (ends in ``/v1``)."""
        return f"{self.server.url}/v1"

    @property
    def model_requests(self) -> list[Recorded]:
        """The recorded ``POST .../responses`` calls, in order."""
        return [r for r in self.server.requests if is_responses_call(r)]

    # -- answering -------------------------------------------------------
    def _respond(self, rec: Recorded) -> Reply:
        if not is_responses_call(rec):
            return _harmless(rec)
        planned = self.script.next()
        self._wait(planned.delay)
        if isinstance(planned, ErrorReply):
            body: dict[str, Any] = {
                "error": {"message": planned.message, "type": planned.error_type, "code": planned.code, "param": None}
            }
            headers = {"content-type": "application/json", **planned.headers}
            return Reply(status=planned.status, headers=headers, chunks=[json.dumps(body).encode()])
        n = next(self._ids)
        model = _model_of(rec)
        if isinstance(planned, TextReply):
            return Reply(chunks=self._text_stream(n, model, planned))
        return Reply(chunks=self._call_stream(n, model, planned))

    def _text_stream(self, n: int, model: str, planned: TextReply) -> Iterator[bytes]:
        resp_id, item_id = f"resp_fake_{n}", f"msg_fake_{n}"
        yield from _created(resp_id, model)
        output = list(_reasoning(f"rs_fake_{n}", planned.thinking)) if planned.thinking else []
        yield from output[:-1]
        yield _event(
            "response.output_item.added",
            output_index=len(output),
            item={"type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": []},
        )
        for i, piece in enumerate(_pieces(planned.text)):
            yield _event("response.output_text.delta", item_id=item_id, output_index=len(output), content_index=0, delta=piece)
            if i == 0 and planned.stall > 0:
                self._stall(planned.stall)
        item = {
            "type": "message",
            "id": item_id,
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": planned.text, "annotations": []}],
        }
        yield _event("response.output_item.done", output_index=len(output), item=item)
        yield _completed(resp_id, model, [*output[-1:], item] if output else [item], planned.usage)

    def _call_stream(self, n: int, model: str, planned: ShellCallReply) -> Iterator[bytes]:
        resp_id, item_id, call_id = f"resp_fake_{n}", f"fc_fake_{n}", f"call_fake_{n}"
        args = dict(planned.arguments) if planned.arguments is not None else {"cmd": planned.command}
        item = {
            "type": "function_call",
            "id": item_id,
            "call_id": call_id,
            "name": planned.name,
            "arguments": json.dumps(args),
            "status": "completed",
        }
        yield from _created(resp_id, model)
        yield _event("response.output_item.added", output_index=0, item={**item, "status": "in_progress"})
        yield _event("response.output_item.done", output_index=0, item=item)
        yield _completed(resp_id, model, [item], planned.usage)


def _reasoning(item_id: str, summary: str) -> Iterator[Any]:
    """A reasoning item at output index 0 whose summary streams in pieces: its SSE events, then the item itself."""
    part, where = {"type": "summary_text", "text": ""}, {"item_id": item_id, "output_index": 0, "summary_index": 0}
    yield _event("response.output_item.added", output_index=0, item={"type": "reasoning", "id": item_id, "summary": []})
    yield _event("response.reasoning_summary_part.added", **where, part=part)
    for piece in _pieces(summary):
        yield _event("response.reasoning_summary_text.delta", **where, delta=piece)
    yield _event("response.reasoning_summary_text.done", **where, text=summary)
    yield _event("response.reasoning_summary_part.done", **where, part={**part, "text": summary})
    item = {"type": "reasoning", "id": item_id, "summary": [{"type": "summary_text", "text": summary}]}
    yield _event("response.output_item.done", output_index=0, item=item)
    yield item


def _event(kind: str, **fields: Any) -> bytes:
    return sse(kind, {"type": kind, **fields})


def _created(resp_id: str, model: str) -> Iterator[bytes]:
    yield _event(
        "response.created",
        response={"id": resp_id, "object": "response", "status": "in_progress", "model": model, "output": []},
    )


def _completed(resp_id: str, model: str, output: list[dict[str, Any]], usage: ResponsesUsage) -> bytes:
    return _event(
        "response.completed",
        response={
            "id": resp_id,
            "object": "response",
            "status": "completed",
            "model": model,
            "output": output,
            "usage": usage.as_json(),
        },
    )


def _pieces(text: str, parts: int = 3) -> list[str]:
    if not text:
        return [""]
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _model_of(rec: Recorded) -> str:
    body = rec.body
    if isinstance(body, dict) and isinstance(body.get("model"), str):
        return str(body["model"])
    return DEFAULT_MODEL


def _harmless(rec: Recorded) -> Reply:
    path = rec.path.split("?", 1)[0]
    if path.rstrip("/").endswith("/models"):
        body: dict[str, Any] = {
            "object": "list",
            "data": [{"id": DEFAULT_MODEL, "object": "model", "created": int(time.time()), "owned_by": "fake"}],
            "models": [],
        }
    else:
        body = {}
    return Reply(headers={"content-type": "application/json"}, chunks=[json.dumps(body).encode()])


def is_responses_call(rec: Recorded) -> bool:
    return rec.method == "POST" and rec.path.split("?", 1)[0].rstrip("/").endswith("/responses")


# -- reading recorded request bodies -------------------------------------------


def _content_texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    texts: list[str] = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
    return texts


def message_texts(body: Any, role: str) -> list[str]:
    """Texts of every ``input`` message with ``role``, in request order."""
    texts: list[str] = []
    if not isinstance(body, dict):
        return texts
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type", "message") == "message" and item.get("role") == role:
            texts.extend(_content_texts(item.get("content")))
    return texts


def user_texts(body: Any) -> list[str]:
    """Texts of the user messages (Codex puts AGENTS.md and its environment context here too)."""
    return message_texts(body, "user")


def instruction_texts(body: Any) -> list[str]:
    """The top-level ``instructions`` plus every developer/system message text."""
    texts: list[str] = []
    if isinstance(body, dict) and isinstance(body.get("instructions"), str):
        texts.append(body["instructions"])
    texts += message_texts(body, "developer")
    texts += message_texts(body, "system")
    return texts


def agents_md_texts(body: Any) -> list[str]:
    """The user messages that carry AGENTS.md (``# AGENTS.md instructions for DIR``)."""
    return [t for t in user_texts(body) if t.lstrip().startswith("# AGENTS.md instructions")]


# -- pointing the Codex CLI at the fake ----------------------------------------

_SCRUBBED_PREFIXES = ("OPENAI_", "CODEX_", "AZURE_OPENAI")


def codex_quiet_args() -> list[str]:
    """Global flags that stop Codex's update check and analytics."""
    return ["-c", "check_for_update_on_startup=false", "-c", "analytics.enabled=false"]


def codex_config_toml(
    base_url: str,
    model: str = DEFAULT_MODEL,
    request_max_retries: int | None = None,
    stream_max_retries: int | None = None,
    extra: str = "",
) -> str:
    lines = [
        f'model = "{model}"',
        'model_provider = "fake"',
        "",
        "[model_providers.fake]",
        'name = "fake"',
        f'base_url = "{base_url}"',
        'wire_api = "responses"',
        f'env_key = "{FAKE_ENV_KEY}"',
    ]
    if request_max_retries is not None:
        lines.append(f"request_max_retries = {request_max_retries}")
    if stream_max_retries is not None:
        lines.append(f"stream_max_retries = {stream_max_retries}")
    return "\n".join(lines) + "\n" + (extra + "\n" if extra else "")


def prepare_codex_home(
    home: Path,
    base_url: str,
    model: str = DEFAULT_MODEL,
    request_max_retries: int | None = None,
    stream_max_retries: int | None = None,
    extra_config: str = "",
    base_env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Write ``home/.codex/config.toml`` for the fake and return the full env to run codex with.

    The env is ``base_env`` (default ``os.environ``) minus any real OpenAI/Codex
    settings, with ``HOME``, ``CODEX_HOME`` and the fake API key set.
    """
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        codex_config_toml(base_url, model, request_max_retries, stream_max_retries, extra_config)
    )
    source = os.environ if base_env is None else base_env
    env = {k: v for k, v in source.items() if not k.startswith(_SCRUBBED_PREFIXES)}
    env.update(
        {
            "HOME": str(home),
            "CODEX_HOME": str(codex_home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            FAKE_ENV_KEY: "dummy",
        }
    )
    return env


def rollout_files(home: Path) -> list[Path]:
    """Codex's rollout (session) files under ``home/.codex/sessions``, sorted."""
    return sorted((home / ".codex" / "sessions").rglob("rollout-*.jsonl"))
