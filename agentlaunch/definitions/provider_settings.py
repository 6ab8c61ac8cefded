"""agent.yaml's settings a provider CLI takes itself: where it compacts (``compaction_at``) and its cache's lifetime
(``cache_ttl``), checked against what the provider's CLI accepts (its :class:`ProviderDescriptor`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentlaunch.providers.descriptors import DESCRIPTORS, ProviderDescriptor


def _n(value: int) -> str:
    return f"{value:,}"


def _not_taken(where: str, provider: ProviderDescriptor, what: str, able: list[str]) -> str:
    who = f"provider {able[0]} does" if len(able) == 1 else f"providers {', '.join(able[:-1])} and {able[-1]} do"
    return f"{where}: provider {provider.name} {what} ({who})"


def compaction_problems(conf: Mapping[str, Any], provider: ProviderDescriptor, yaml_path: Path) -> list[str]:
    """What is wrong with ``compaction_at`` for this provider and window (none when it is not set)."""
    at = conf.get("compaction_at")
    if at is None:
        return []
    where = f"{yaml_path}: compaction_at"
    if provider.compaction_flag is None:
        able = [d.name for d in DESCRIPTORS.values() if d.compaction_flag]
        return [_not_taken(where, provider, "takes no compaction point", able)]
    lowest = max(provider.compaction_flag_min - provider.compaction_reserve, 1)
    if at < lowest:
        return [
            f"{where}: {_n(at)} is below the CLI's minimum: {provider.compaction_flag} takes at least "
            f"{_n(provider.compaction_flag_min)} and compacts {_n(provider.compaction_reserve)} tokens before it, "
            f"so compaction_at is at least {_n(lowest)}"
        ]
    window = conf.get("context_window") or provider.known_window(conf.get("model"))
    if window is not None and at > window - provider.compaction_reserve:
        return [
            f"{where}: {_n(at)} is above where the model's {_n(window)}-token window lets the CLI compact "
            f"({_n(window - provider.compaction_reserve)}: it keeps {_n(provider.compaction_reserve)} tokens for the summary)"
        ]
    return []


def compaction_argv(provider: ProviderDescriptor, compaction_at: int | None) -> list[str]:
    """The flag that makes the CLI compact at ``compaction_at`` (none when it is not set)."""
    if compaction_at is None or provider.compaction_flag is None:
        return []
    return [provider.compaction_flag, provider.compaction_value.format(tokens=compaction_at + provider.compaction_reserve)]


def cache_ttl_problems(conf: Mapping[str, Any], provider: ProviderDescriptor, yaml_path: Path) -> list[str]:
    """What is wrong with ``cache_ttl`` (its values are the schema's: ``5m``, ``1h``)."""
    ttl = conf.get("cache_ttl")
    if ttl is None:
        return []
    where = f"{yaml_path}: cache_ttl"
    if provider.cache_ttl_env is None:
        able = [d.name for d in DESCRIPTORS.values() if d.cache_ttl_env]
        return [_not_taken(where, provider, "does not let the prompt cache's lifetime be set", able)]
    own = (conf.get("env") or {}).get(provider.cache_ttl_env)
    if own is not None and own != ttl:
        return [f"{where}: {ttl!r} disagrees with env.{provider.cache_ttl_env} ({own!r}): keep one of them"]
    return []


def cache_ttl_env(provider: ProviderDescriptor, ttl: str | None) -> dict[str, str]:
    """The environment that sets the CLI's prompt-cache lifetime to ``ttl`` (none when it is not set)."""
    if ttl is None or provider.cache_ttl_env is None:
        return {}
    return {provider.cache_ttl_env: ttl}
