"""``--host NAME`` of `send`, `stop`, `restart` and `tmux up`: the same command run by agentlaunch on that host.

The host's own agents directory and tmux server are used (``agents_dir`` and ``socket`` of its entry in
config.yaml, else agentlaunch's defaults there); ``--agents-dir``, ``--templates-dir`` and ``--socket`` name things
of this machine and are not passed on. Its output comes back as it is written; its exit status is the command's
(docs/hosts.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentlaunch.definitions.settings import load_settings
from agentlaunch.hosts import remote, ssh
from agentlaunch.hosts.config import Host, find_host

if TYPE_CHECKING:
    from collections.abc import Sequence


def host_named(name: str) -> Host:
    """The host of config.yaml called ``name`` (a usage error naming the others when none is)."""
    return find_host(load_settings().hosts, name)


def run_on(name: str, args: Sequence[str], *, what: str, agents: bool = True, socket: bool = True, label: bool = False) -> int:
    """Run ``agentlaunch ARGS`` on host ``name`` (its agents directory and tmux server added): its exit status;
    ``label``: each line it writes begins with the host's name."""
    host = host_named(name)
    code, seen = remote.run_there(host, ssh.agentlaunch_args(host, args, agents=agents, socket=socket), label=label)
    return remote.finished(host, code, seen, what)


def kept_on(name: str, args: Sequence[str], *, what: str, agents: bool = True, socket: bool = True) -> tuple[int, remote.Seen]:
    """:func:`run_on` with the host's stdout kept (``Seen.out``), not written here: the MCP server's tools."""
    host = host_named(name)
    code, seen = remote.run_there(host, ssh.agentlaunch_args(host, args, agents=agents, socket=socket), capture=True)
    return remote.finished(host, code, seen, what), seen


def send_kept(
    name: str, agent: str, text: str, wait: bool, timeout: float | None, session: str | None
) -> tuple[int, remote.Seen]:
    """:func:`send_on` with ``--json`` and the host's stdout kept: the MCP server's ``send_prompt`` on a host."""
    host = host_named(name)
    given = [*flag(wait, "--wait"), *value(timeout, "--timeout"), *value(session, "--session"), "--json"]
    args = ssh.agentlaunch_args(host, ["send", agent, "-", "--report-taken", *given], agents=True)
    code, seen = remote.run_there(host, args, stdin=text.encode("utf-8"), capture=True)
    return remote.sent(host, agent, code, seen), seen


def send_on(
    name: str, agent: str, text: str, waiting: tuple[bool, float | None, str | None], shown: tuple[bool, bool, bool]
) -> int:
    """``send --host``: the prompt goes on the host command's stdin (never through its shell), ``--wait``,
    ``--timeout``, ``--session`` (``waiting``) and ``-q``, ``--json``, ``--command`` (``shown``) after it; the host's
    agentlaunch writes a line on stderr once the session took it (``--report-taken``)."""
    host = host_named(name)
    (wait, timeout, session), (quiet, as_json, command) = waiting, shown
    given = [*flag(wait, "--wait"), *value(timeout, "--timeout"), *value(session, "--session"), *flag(quiet, "-q")]
    given += [*flag(as_json, "--json"), *flag(command, "--command")]
    args = ssh.agentlaunch_args(host, ["send", agent, "-", "--report-taken", *given], agents=True)
    code, seen = remote.run_there(host, args, stdin=text.encode("utf-8"))
    return remote.sent(host, agent, code, seen)


def flag(on: bool, name: str) -> list[str]:
    return [name] if on else []


def value(given: object, name: str) -> list[str]:
    return (
        []
        if given is None
        else [name, given if isinstance(given, str) else f"{given:g}" if isinstance(given, float) else str(given)]
    )
