"""The doctor's capture endpoint: a fake provider API on 127.0.0.1 that records what the CLI sends.

One per live check, speaking the API family of the provider's descriptor
(Anthropic messages, OpenAI responses, Gemini); every request is kept, so the
doctor can compare the model calls and name any other connection attempt.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from dataclasses import dataclass

from agentlaunch.fakeapi.anthropic import FakeAnthropic
from agentlaunch.fakeapi.gemini import GeminiFake
from agentlaunch.fakeapi.responses import ResponsesFake
from agentlaunch.fakeapi.server import FakeServer, Recorded


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
    if api == "anthropic":
        fake = FakeAnthropic()
        server = fake.serve(port)
        return Capture(server, lambda r: r.method == "POST" and r.path.split("?")[0].rstrip("/") == "/v1/messages", server.url)
    if api == "responses":
        responses = ResponsesFake(port=port)
        from agentlaunch.fakeapi.responses import is_responses_call

        return Capture(responses.server, is_responses_call, responses.base_url)
    if api == "gemini":
        gem = GeminiFake(port=port)
        from agentlaunch.fakeapi.gemini import is_stream_call

        return Capture(gem.server, is_stream_call, gem.base_url)
    raise ValueError(f"no capture endpoint speaks the {api!r} API")
