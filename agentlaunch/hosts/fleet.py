"""Each host's fleet, read over its connection, all hosts at once: ``fleet`` and ``status`` across hosts.

:func:`start_reads` starts one thread per host running ``agentlaunch fleet --json --local`` (or ``status --json
--local``) there and returns at once, so the local fleet is read meanwhile; :meth:`Reads.result` waits for them at
most the slowest host's ``timeout`` (its ssh is killed then). A host that is down, slow, refuses, lacks agentlaunch
or speaks another fleet contract gives a :class:`HostRead` with its ``problem`` ("host unreachable: <why>"), shown
as one row; no host delays the others. ``--local`` keeps the host from reading its own hosts in turn.
"""

from __future__ import annotations

import json
import threading
import time
from typing import TYPE_CHECKING, Any

from agentlaunch.errors import AgentlaunchError
from agentlaunch.fleet.contract import AGENT_FIELDS, VERSION
from agentlaunch.hosts import ssh

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from agentlaunch.hosts.config import Host

UNREACHABLE = "host-unreachable"
"""The ``state`` of a host's one row when it could not be read (its ``problem`` says why)."""


class HostRead:
    """What one host answered: its parsed output, or why there is none."""

    __slots__ = ("data", "host", "problem")

    def __init__(self, host: Host, data: Any = None, problem: str | None = None) -> None:
        self.host, self.data, self.problem = host, data, problem


def read_output(host: Host, args: Sequence[str], check: Callable[[Any], str | None]) -> HostRead:
    """Run ``agentlaunch ARGS`` on ``host`` and parse its JSON; ``check`` says what is wrong with it (None: fine)."""
    try:
        done = ssh.run(host, args, timeout=host.timeout)
    except AgentlaunchError as exc:
        said = exc.message.removeprefix("host unreachable: ")
        return HostRead(host, problem=f"host unreachable: {said}")
    if done.returncode != 0:
        return HostRead(host, problem=f"host unreachable: {host.name}: {failed(done.returncode, done.stderr)}")
    try:
        data = json.loads(done.stdout)
    except ValueError:
        return HostRead(host, problem=f"host unreachable: {host.name}: agentlaunch there printed no JSON")
    problem = check(data)
    return HostRead(host, data, None if problem is None else f"host unreachable: {host.name}: {problem}")


def failed(code: int, stderr: str) -> str:
    """Why agentlaunch on a host did not answer, from its exit status and what it wrote."""
    if code == 2 and "--local" in stderr:
        return "its agentlaunch is older than this one (no --local): install the same version there"
    last = next((line.strip() for line in reversed(stderr.splitlines()) if line.strip()), "")
    return f"agentlaunch there exited {code}" + (f": {last}" if last else "")


def fleet_check(data: Any) -> str | None:
    """What is wrong with a host's ``fleet --json`` (another contract version, not the contract's shape)."""
    if not isinstance(data, dict) or not isinstance(data.get("agents"), list):
        return "its fleet --json is not the fleet contract"
    if data.get("version") != VERSION:
        return f"its agentlaunch speaks fleet contract {data.get('version')!r}, this one {VERSION}: install the same version"
    return None


def status_check(data: Any) -> str | None:
    return None if isinstance(data, list) and all(isinstance(r, dict) for r in data) else "its status --json is not a list"


class Reads:
    """The reads under way, one thread per host."""

    def __init__(self, hosts: Sequence[Host], args: Callable[[Host], list[str]], check: Callable[[Any], str | None]) -> None:
        self.hosts = list(hosts)
        self.found: dict[str, HostRead] = {}
        self.deadline = time.monotonic() + max((h.timeout for h in self.hosts), default=0) + 1.0
        self.threads = [
            threading.Thread(target=self._read, args=(h, args(h), check), name=f"host-{h.name}", daemon=True) for h in self.hosts
        ]
        for thread in self.threads:
            thread.start()

    def _read(self, host: Host, args: list[str], check: Callable[[Any], str | None]) -> None:
        self.found[host.name] = read_output(host, args, check)

    def result(self) -> list[HostRead]:
        """Each host's read, in the order of config.yaml; one still running at the deadline is "no answer"."""
        for thread in self.threads:
            thread.join(max(self.deadline - time.monotonic(), 0))
        return [
            self.found.get(h.name) or HostRead(h, problem=f"host unreachable: {h.name}: no answer within {h.timeout:g}s")
            for h in self.hosts
        ]


def start_fleet_reads(hosts: Sequence[Host]) -> Reads:
    """``agentlaunch fleet --json --local`` on every host, started now."""
    return Reads(hosts, lambda h: ssh.agentlaunch_args(h, ["fleet", "--json", "--local"], agents=True, socket=True), fleet_check)


def start_status_reads(hosts: Sequence[Host]) -> Reads:
    """``agentlaunch status --json --local`` on every host, started now."""
    return Reads(hosts, lambda h: ssh.agentlaunch_args(h, ["status", "--json", "--local"], socket=True), status_check)


def unreachable_agent(read: HostRead) -> dict[str, Any]:
    """A host that could not be read as the fleet contract's one agent object: its name, ``host-unreachable``, why."""
    row: dict[str, Any] = dict.fromkeys(AGENT_FIELDS)
    row.update(agent=read.host.name, label=read.host.name, state=UNREACHABLE, needs_you=False, running=False)
    row.update(problem=read.problem, host=read.host.name)
    return row


def fleet_agents(reads: Sequence[HostRead]) -> tuple[list[dict[str, Any]], list[str]]:
    """The hosts' agents (each with its ``host``) and problems (``HOST: problem``), host by host."""
    agents: list[dict[str, Any]] = []
    problems: list[str] = []
    for read in reads:
        if read.problem is not None:
            agents.append(unreachable_agent(read))
            continue
        for agent in read.data["agents"]:
            if isinstance(agent, dict):
                agents.append({**agent, "host": read.host.name})
        problems += [f"{read.host.name}: {p}" for p in read.data.get("problems") or [] if isinstance(p, str)]
    return agents, problems


def status_rows(reads: Sequence[HostRead]) -> list[dict[str, Any]]:
    """The hosts' ``status --json`` rows, each with its ``host``; a host not read is one row saying why."""
    rows: list[dict[str, Any]] = []
    for read in reads:
        if read.problem is not None:
            rows.append(
                {"agent": read.host.name, "state": UNREACHABLE, "problem": read.problem, "stale": False, "dead": False}
                | {"host": read.host.name}
            )
            continue
        rows += [{**row, "host": read.host.name} for row in read.data]
    return rows
