"""Whether a name is an agent at all: a command that finds it not running says so only of an agent that exists.

``send adaa`` (a typo) said "adaa is not running" while ``run adaa`` listed the agents. An agent exists when its
agents directory defines it, or agentlaunch has a session of it on record (a definition removed since, an agent
started elsewhere); any other name gets ``run``'s own message (:func:`agentlaunch.definitions.names.not_found`).
"""

from __future__ import annotations

from pathlib import Path

from agentlaunch import paths
from agentlaunch.definitions.names import SHARED_FOLDERS, not_found
from agentlaunch.errors import DefinitionError


def refuse_unknown(agent: str, agents_dir: Path | None = None) -> None:
    """Raise ``run``'s definition error (exit 3) when ``agent`` is no agent; return when it is one."""
    folder = paths.agents_dir(agents_dir)
    if agent not in SHARED_FOLDERS and (folder / agent / "agent.yaml").is_file():
        return
    from agentlaunch.errors import StateError
    from agentlaunch.usage.store import Store

    try:
        with Store.open(paths.store_path()) as store:
            if store.latest_of_agent(agent, with_turns=False) is not None:
                return
    except StateError:
        return  # no store to ask: the caller's own "not running" is all that can be said
    raise DefinitionError(not_found(folder, agent))
