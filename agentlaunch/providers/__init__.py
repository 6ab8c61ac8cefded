"""Provider adapters, one per CLI, and their descriptors, looked up by the agent's ``provider``.

Importing this package is cheap: the descriptors (:mod:`.descriptors`) are
standard library only, and an adapter module (with its parser and the event
types) is imported when :func:`get_adapter` first asks for it. :data:`ADAPTERS`
is the one registry of adapters: a provider's name to the function that
imports its module and makes its adapter (a test checks that every descriptor
has one, and that each adapter carries its own descriptor).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from agentlaunch.providers.descriptors import (
    CLAUDE,
    CODEX,
    DESCRIPTORS,
    FAKE,
    GEMINI,
    PROVIDERS,
    ProviderDescriptor,
    describe,
)

if TYPE_CHECKING:
    from agentlaunch.providers.base import Adapter


def _claude() -> Adapter:
    from agentlaunch.providers.claude import ClaudeAdapter

    return ClaudeAdapter()


def _codex() -> Adapter:
    from agentlaunch.providers.codex import CodexAdapter

    return CodexAdapter()


def _gemini() -> Adapter:
    from agentlaunch.providers.gemini import GeminiAdapter

    return GeminiAdapter()


def _fake() -> Adapter:
    from agentlaunch.providers.fake import FakeAdapter

    return FakeAdapter()


ADAPTERS: dict[str, Callable[[], Adapter]] = {CLAUDE.name: _claude, CODEX.name: _codex, GEMINI.name: _gemini, FAKE.name: _fake}
"""Each provider's adapter, made on first use (its module, with the parser and the event types, imported then)."""


def get_adapter(name: str) -> Adapter:
    """The adapter for ``name``: persistent or per-turn (``adapter.persistent`` tells, and narrows the type)."""
    return ADAPTERS[describe(name).name]()


__all__ = ["ADAPTERS", "DESCRIPTORS", "PROVIDERS", "ProviderDescriptor", "describe", "get_adapter"]
