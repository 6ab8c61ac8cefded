"""Provider adapters, one per CLI, looked up by the agent's ``provider``."""

from __future__ import annotations

from typing import Any

from agentlaunch.providers.claude import ClaudeAdapter
from agentlaunch.providers.codex import CodexAdapter
from agentlaunch.providers.fake import FakeAdapter
from agentlaunch.providers.gemini import GeminiAdapter

ADAPTERS: dict[str, type[Any]] = {"claude": ClaudeAdapter, "fake": FakeAdapter, "codex": CodexAdapter, "gemini": GeminiAdapter}


def get_adapter(name: str) -> Any:
    """The adapter for ``name``."""
    from agentlaunch.errors import DefinitionError

    try:
        return ADAPTERS[name]()
    except KeyError:
        raise DefinitionError(f"provider {name!r} is not supported by this version of agentlaunch") from None
