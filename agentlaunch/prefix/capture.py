"""The doctor's capture endpoint: a fake provider API on 127.0.0.1 that records what the CLI sends.

One per live check, speaking the API family of the provider's descriptor
(Anthropic messages, OpenAI responses, Gemini); every request is kept, so the
doctor can compare the model calls and name any other connection attempt.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from agentlaunch.fakeapi.anthropic import FakeAnthropic
from agentlaunch.fakeapi.gemini import GeminiFake
from agentlaunch.fakeapi.responses import ResponsesFake
from agentlaunch.fakeapi.server import FakeServer, Recorded
from agentlaunch.providers.descriptors import ANTHROPIC_API, GEMINI_API, RESPONSES_API

__all__ = ["CAPTURE_ENV", "Capture", "CaptureEnv", "Recorded", "bind", "make_capture"]

CaptureEnv = Callable[[str, Path, Mapping[str, str], str | None], dict[str, str]]
"""``(base_url, home, base_env, model) -> env``: the environment that points the CLI at a capture endpoint
on ``base_url`` with a throwaway ``home`` (``base_env`` plus the provider's own settings)."""


@dataclass
class Capture:
    """A running capture endpoint and what every request to it was."""

    server: FakeServer
    is_model_call: Callable[[Recorded], bool]
    base_url: str
    port_note: str | None = None

    def model_calls(self) -> list[Recorded]:
        return [r for r in self.server.requests if self.is_model_call(r) and isinstance(r.body, dict)]

    def other_calls(self) -> list[str]:
        proxied = {id(r) for r in self.server.proxy_attempts}
        return [f"{r.method} {r.path}" for r in self.server.requests if not self.is_model_call(r) and id(r) not in proxied]


def bind(make: Callable[[int], Capture], port: int) -> Capture:
    """The capture endpoint on ``port``; when that port is busy, on another one (and say so)."""
    if port:
        try:
            return make(port)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            capture = make(0)
            capture.port_note = f"port {port} is busy; the capture endpoint took port {capture.server.port}"
            return capture
    return make(0)


def make_capture(api: str, port: int) -> Capture:
    """A fake server speaking the API family ``api`` (a provider descriptor's ``api``)."""
    if api == ANTHROPIC_API:
        anthropic = FakeAnthropic()
        server = anthropic.serve(port)
        return Capture(server, lambda r: r.method == "POST" and r.path.split("?")[0].rstrip("/") == "/v1/messages", server.url)
    if api == RESPONSES_API:
        responses = ResponsesFake(port=port)
        from agentlaunch.fakeapi.responses import is_responses_call

        return Capture(responses.server, is_responses_call, responses.base_url)
    if api == GEMINI_API:
        gem = GeminiFake(port=port)
        from agentlaunch.fakeapi.gemini import is_stream_call

        return Capture(gem.server, is_stream_call, gem.base_url)
    raise ValueError(f"no capture endpoint speaks the {api!r} API")


# -- how each CLI is pointed at the capture endpoint, by the API family it speaks


def _claude_capture_env(base_url: str, home: Path, base_env: Mapping[str, str], model: str | None) -> dict[str, str]:
    """Claude Code on the capture endpoint, one attempt per call (a capture needs no retries)."""
    from agentlaunch.fakeapi.anthropic import claude_env

    return {**base_env, **claude_env(base_url, home, {"CLAUDE_CODE_MAX_RETRIES": "0"})}


# Codex's plugin subsystem syncs a curated plugin list from github.com and chatgpt.com at
# startup (seen as CONNECTs by the capture endpoint); the quiet flags do not stop it, this does.
CODEX_CAPTURE_CONFIG = "[features]\nplugins = false"


def _codex_capture_env(base_url: str, home: Path, base_env: Mapping[str, str], model: str | None) -> dict[str, str]:
    """Codex on the capture endpoint: a CODEX_HOME of its own, no retries, no plugin sync."""
    from agentlaunch.fakeapi.responses import DEFAULT_MODEL, prepare_codex_home

    return prepare_codex_home(
        home,
        base_url,
        model=model or DEFAULT_MODEL,
        request_max_retries=0,
        stream_max_retries=0,
        extra_config=CODEX_CAPTURE_CONFIG,
        base_env=base_env,
    )


def _gemini_capture_env(base_url: str, home: Path, base_env: Mapping[str, str], model: str | None) -> dict[str, str]:
    """Gemini CLI on the capture endpoint, one attempt per call."""
    from agentlaunch.fakeapi.gemini import prepare_gemini_home

    return prepare_gemini_home(home, base_url, base_env=base_env, max_attempts=1)


CAPTURE_ENV: dict[str, CaptureEnv] = {
    ANTHROPIC_API: _claude_capture_env,
    RESPONSES_API: _codex_capture_env,
    GEMINI_API: _gemini_capture_env,
}
"""How a CLI speaking each API family (a descriptor's ``api``) is pointed at the capture endpoint."""
