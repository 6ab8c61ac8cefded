"""Provider adapters, one per CLI, and their descriptors, looked up by the agent's ``provider``.

Importing this package is cheap: the descriptors (:mod:`.descriptors`) are
standard library only, and an adapter module (with its parser and the event
types) is imported when :func:`get_adapter` first asks for it.
"""

from __future__ import annotations

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
    unknown_provider,
)

if TYPE_CHECKING:
    from agentlaunch.providers.base import Adapter


def get_adapter(name: str) -> Adapter:
    """The adapter for ``name``: persistent or per-turn (``adapter.persistent`` tells, and narrows the type).

    Each adapter module is imported on first use; a test checks every descriptor has its adapter.
    """
    descriptor = describe(name)
    if descriptor is CLAUDE:
        from agentlaunch.providers.claude import ClaudeAdapter

        return ClaudeAdapter()
    if descriptor is CODEX:
        from agentlaunch.providers.codex import CodexAdapter

        return CodexAdapter()
    if descriptor is GEMINI:
        from agentlaunch.providers.gemini import GeminiAdapter

        return GeminiAdapter()
    if descriptor is FAKE:
        from agentlaunch.providers.fake import FakeAdapter

        return FakeAdapter()
    raise unknown_provider(name)


__all__ = ["DESCRIPTORS", "PROVIDERS", "ProviderDescriptor", "describe", "get_adapter"]
