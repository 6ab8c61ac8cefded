"""A scripted fake of the Gemini API (``generativelanguage``), as the Gemini CLI calls it.

``POST /v1beta/models/MODEL:streamGenerateContent?alt=sse`` is answered from a
queue of planned replies; when the queue is empty the default reply is used.
Every request is recorded by the underlying :class:`FakeServer`. Other calls
get a harmless answer: ``:countTokens`` a token count, ``:generateContent`` (the
CLI's side questions such as its next-speaker check) a small JSON text, ``GET
/v1beta/models`` an empty list.

Typical use::

    script = GeminiScript([TextReply("hi", GeminiUsage(9000, 7, cached=6000))])
    with GeminiFake(script) as fake:
        env = prepare_gemini_home(tmp_path / "home", fake.base_url)
        subprocess.run([gemini, "-p", "hi", "--output-format", "stream-json", "-m", MODEL], env=env)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentlaunch.fakeapi.server import Recorded, Reply, ReplyScript, ScriptedFake, sse

DEFAULT_MODEL = "gemini-2.5-pro"

_ERROR_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


@dataclass(frozen=True)
class GeminiUsage:
    """``usageMetadata`` of one call; ``prompt`` includes ``cached``, ``output`` excludes ``thoughts``."""

    prompt: int = 100
    output: int = 5
    cached: int = 0
    thoughts: int = 0

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "promptTokenCount": self.prompt,
            "candidatesTokenCount": self.output,
            "totalTokenCount": self.prompt + self.output + self.thoughts,
        }
        if self.cached:
            data["cachedContentTokenCount"] = self.cached
        if self.thoughts:
            data["thoughtsTokenCount"] = self.thoughts
        return data


@dataclass(frozen=True)
class TextReply:
    """A model answer streamed as a few chunks; usage rides on the last chunk."""

    text: str = "ok"
    usage: GeminiUsage = field(default_factory=GeminiUsage)
    model_version: str | None = None
    """``modelVersion`` to report (default: the model named in the URL)."""
    delay: float = 0.0
    """Seconds to wait before answering (interrupted when the fake stops)."""
    stall: float = 0.0
    """Seconds to wait after the first chunk, mid-stream (for interrupt tests)."""


@dataclass(frozen=True)
class FunctionCallReply:
    """A ``functionCall`` part.

    The default ``read_file`` runs in ``-p`` mode without approval; 0.61's
    ``run_shell_command`` is only registered with ``--yolo`` (otherwise the CLI
    answers the model with ``tool_not_registered``).
    """

    name: str = "read_file"
    args: Mapping[str, Any] = field(default_factory=lambda: {"file_path": "GEMINI.md"})
    usage: GeminiUsage = field(default_factory=GeminiUsage)
    model_version: str | None = None
    delay: float = 0.0


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error with a Google-style JSON error body."""

    status: int = 500
    message: str = "fake internal error"
    delay: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)


Planned = TextReply | FunctionCallReply | ErrorReply


class GeminiScript(ReplyScript[Planned]):
    """A thread-safe queue of planned replies to ``:streamGenerateContent``."""

    def fallback(self) -> Planned:
        return TextReply()


class GeminiFake(ScriptedFake):
    """A :class:`FakeServer` answering like the Gemini API from a script."""

    def __init__(self, script: GeminiScript | None = None, port: int = 0) -> None:
        self.script = script if script is not None else GeminiScript()
        super().__init__(self._respond, port)

    @property
    def base_url(self) -> str:
        """What goes in ``GOOGLE_GEMINI_BASE_URL`` (no path)."""
        return self.server.url

    @property
    def model_requests(self) -> list[Recorded]:
        """The recorded ``:streamGenerateContent`` calls, in order."""
        return [r for r in self.server.requests if is_stream_call(r)]

    def _respond(self, rec: Recorded) -> Reply:
        if not is_stream_call(rec):
            return _harmless(rec)
        planned = self.script.next()
        self._wait(planned.delay)
        if isinstance(planned, ErrorReply):
            status = _ERROR_STATUS.get(planned.status, "UNKNOWN")
            body = {"error": {"code": planned.status, "message": planned.message, "status": status}}
            headers = {"content-type": "application/json", **planned.headers}
            return Reply(status=planned.status, headers=headers, chunks=[json.dumps(body).encode()])
        version = planned.model_version or model_of(rec) or DEFAULT_MODEL
        if isinstance(planned, TextReply):
            return Reply(chunks=self._text_stream(version, planned))
        return Reply(chunks=self._call_stream(version, planned))

    def _text_stream(self, version: str, planned: TextReply) -> Iterator[bytes]:
        pieces = _pieces(planned.text)
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            yield _chunk(version, [{"text": piece}], planned.usage if last else None, last)
            if i == 0 and planned.stall > 0:
                self._stall(planned.stall)

    def _call_stream(self, version: str, planned: FunctionCallReply) -> Iterator[bytes]:
        part = {"functionCall": {"name": planned.name, "args": dict(planned.args)}}
        yield _chunk(version, [part], planned.usage, True)


def _chunk(version: str, parts: list[dict[str, Any]], usage: GeminiUsage | None, last: bool) -> bytes:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if last:
        candidate["finishReason"] = "STOP"
    data: dict[str, Any] = {"candidates": [candidate], "modelVersion": version, "responseId": "fake-response"}
    if usage is not None:
        data["usageMetadata"] = usage.as_json()
    return sse(None, data)


def _pieces(text: str, parts: int = 3) -> list[str]:
    if not text:
        return [""]
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def model_of(rec: Recorded) -> str | None:
    """The model named in a ``/v1beta/models/MODEL:method`` path."""
    path = rec.path.split("?", 1)[0]
    marker = "/models/"
    if marker not in path:
        return None
    return path.split(marker, 1)[1].split(":", 1)[0] or None


def _method(rec: Recorded) -> str:
    path = rec.path.split("?", 1)[0]
    return path.rsplit(":", 1)[1] if ":" in path.rsplit("/", 1)[-1] else ""


def is_stream_call(rec: Recorded) -> bool:
    return rec.method == "POST" and _method(rec) == "streamGenerateContent"


def _harmless(rec: Recorded) -> Reply:
    method = _method(rec)
    body: dict[str, Any]
    if method == "countTokens":
        body = {"totalTokens": 100}
    elif method == "generateContent":
        # Side questions (next speaker, loop detection, routing) ask for JSON.
        answer = {"reasoning": "fake", "next_speaker": "user", "confidence": 0.0}
        version = model_of(rec) or DEFAULT_MODEL
        body = {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": json.dumps(answer)}]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
            "modelVersion": version,
        }
    elif method == "embedContent":
        body = {"embedding": {"values": [0.0] * 8}}
    elif rec.path.split("?", 1)[0].rstrip("/").endswith("/models"):
        body = {"models": []}
    else:
        body = {}
    return Reply(headers={"content-type": "application/json"}, chunks=[json.dumps(body).encode()])


# -- reading recorded request bodies -------------------------------------------


def _parts_texts(parts: Any) -> list[str]:
    texts: list[str] = []
    if isinstance(parts, list):
        for part in parts:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
    return texts


def user_texts(body: Any) -> list[str]:
    """Text parts of every ``contents`` entry with role ``user``, in request order."""
    texts: list[str] = []
    if not isinstance(body, dict):
        return texts
    for content in body.get("contents") or []:
        if isinstance(content, dict) and content.get("role", "user") == "user":
            texts.extend(_parts_texts(content.get("parts")))
    return texts


def instruction_texts(body: Any) -> list[str]:
    """Text parts of ``systemInstruction`` (a string form is accepted too)."""
    if not isinstance(body, dict):
        return []
    system = body.get("systemInstruction") or body.get("system_instruction")
    if isinstance(system, str):
        return [system]
    if isinstance(system, dict):
        return _parts_texts(system.get("parts"))
    return []


# -- pointing the Gemini CLI at the fake ---------------------------------------

_SCRUBBED_PREFIXES = ("GEMINI_", "GOOGLE_", "VERTEX", "CLOUDSDK_")


def gemini_settings(extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
    }
    for key, value in (extra or {}).items():
        if isinstance(value, dict) and isinstance(settings.get(key), dict):
            settings[key] = {**settings[key], **value}
        else:
            settings[key] = value
    return settings


def prepare_gemini_home(
    home: Path,
    base_url: str,
    api_key: str | None = "dummy",
    extra_settings: Mapping[str, Any] | None = None,
    base_env: Mapping[str, str] | None = None,
    max_attempts: int | None = None,
    no_relaunch: bool = False,
) -> dict[str, str]:
    """Write ``home/.gemini/settings.json`` for the fake and return the full env to run gemini with.

    The env is ``base_env`` (default ``os.environ``) minus any real Gemini/Google
    settings, with ``HOME``, the API key (none when ``api_key`` is None), the
    base URL and workspace trust set, and ``TMPDIR`` inside ``home`` (the CLI
    writes ``gemini-client-error-*.json`` reports there). ``max_attempts``
    sets ``general.maxAttempts`` (1 = no retries; the CLI's default is 10 with
    5 s+ backoff, about 4 minutes on a 500). ``no_relaunch`` sets
    ``GEMINI_CLI_NO_RELAUNCH=true``: one node process instead of a parent that
    ignores SIGINT/SIGTERM and a child that does the work.
    """
    settings: dict[str, Any] = dict(extra_settings or {})
    if max_attempts is not None:
        settings["general"] = {**settings.get("general", {}), "maxAttempts": max_attempts}
    gemini_home = home / ".gemini"
    gemini_home.mkdir(parents=True, exist_ok=True)
    (gemini_home / "settings.json").write_text(json.dumps(gemini_settings(settings), indent=2))
    source = os.environ if base_env is None else base_env
    env = {k: v for k, v in source.items() if not k.startswith(_SCRUBBED_PREFIXES)}
    env.update(
        {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "TMPDIR": str(home / "tmp"),
            "GOOGLE_GEMINI_BASE_URL": base_url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
        }
    )
    (home / "tmp").mkdir(exist_ok=True)
    if api_key is not None:
        env["GEMINI_API_KEY"] = api_key
    if no_relaunch:
        env["GEMINI_CLI_NO_RELAUNCH"] = "true"
    return env
