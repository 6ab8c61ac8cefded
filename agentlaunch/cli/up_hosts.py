"""`tmux up` of a team on several hosts in one command: ``agentlaunch tmux up planner cx@devbox rv@build``.

An agent written ``AGENT@HOST`` starts on that host of config.yaml, as ``tmux up AGENT --host HOST`` would start it
(the host's agents directory and tmux server; never attached); the others start here. Each host's agents are
started by one ``agentlaunch tmux up`` there, every host at once on a thread of its own, while this machine's start;
each line a host's command writes begins with its name. The exit status is the first that is not 0: this machine's,
then each host's in the order the command named them (11, 12, 13 for a host that could not run it:
docs/hosts.md).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from agentlaunch.cli.user_io import report
from agentlaunch.errors import AgentlaunchError, UsageError

if TYPE_CHECKING:
    from collections.abc import Callable


def split_agents(agents: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """This machine's agents, and each host's (``AGENT@HOST``), in the order given."""
    here: list[str] = []
    there: dict[str, list[str]] = {}
    for word in agents:
        name, at, host = word.partition("@")
        if not at:
            here.append(word)
        elif not name or not host or "@" in host:
            raise UsageError(f"{word!r}: expected AGENT, or AGENT@HOST for an agent on a host of config.yaml")
        else:
            there.setdefault(host, []).append(name)
    return here, there


def team_on_hosts(agents: list[str], up: Callable[[str, list[str]], int]) -> tuple[list[str], HostsUp]:
    """The agents to start here, and each host's (``AGENT@HOST``) started with ``up`` meanwhile; a host config.yaml
    does not name is refused before anything starts."""
    from agentlaunch.cli.on_host import host_named

    here, there = split_agents(agents)
    for name in there:
        host_named(name)
    return here, HostsUp(there, up)


class HostsUp:
    """Each host's ``tmux up``, under way on a thread of its own."""

    def __init__(self, there: dict[str, list[str]], up: Callable[[str, list[str]], int]) -> None:
        self.codes: dict[str, int] = {}
        self.errors: dict[str, AgentlaunchError] = {}
        self.order = list(there)
        self.threads = [threading.Thread(target=self._up, args=(h, names, up), daemon=True) for h, names in there.items()]
        for thread in self.threads:
            thread.start()

    def _up(self, host: str, names: list[str], up: Callable[[str, list[str]], int]) -> None:
        try:
            self.codes[host] = up(host, names)
        except AgentlaunchError as exc:  # the host not reached, the connection dropped, agentlaunch missing there
            self.errors[host] = exc

    def result(self) -> list[int]:
        """Each host's exit status, in order, once all are done (a host's error said on stderr)."""
        for thread in self.threads:
            thread.join()
        return [report(self.errors[h]) if h in self.errors else self.codes.get(h, 1) for h in self.order]


def first_failed(codes: list[int]) -> int:
    return next((code for code in codes if code != 0), 0)
