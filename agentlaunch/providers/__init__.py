"""Provider adapters, one per CLI, looked up by the agent's ``provider``."""

from __future__ import annotations

from agentlaunch.providers.claude import ClaudeAdapter
from agentlaunch.providers.fake import FakeAdapter

ADAPTERS = {"claude": ClaudeAdapter, "fake": FakeAdapter}


def get_adapter(name: str) -> ClaudeAdapter:
    """The adapter for ``name``."""
    from agentlaunch.errors import DefinitionError

    try:
        return ADAPTERS[name]()
    except KeyError:
        raise DefinitionError(f"provider {name!r} is not supported by this version of agentlaunch") from None
