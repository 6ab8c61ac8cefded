"""``hosts:`` in config.yaml: the hosts agentlaunch reaches over SSH, each a name and an SSH destination.

```yaml
hosts:
  devbox: me@devbox.example.com          # short form: the SSH destination only
  build:
    ssh: build                           # anything ssh accepts: a ~/.ssh/config alias, user@host, ssh://user@host:2222
    agents_dir: ~/agents                 # the agents directory there (--agents-dir; default: agentlaunch's own rule there)
    socket: agentlaunch                  # the tmux server there (tmux -L; default: the one agentlaunch uses there)
    agentlaunch: ~/.local/bin/agentlaunch  # the command there (default: agentlaunch on its PATH)
    ssh_config: ~/.ssh/config-work       # an ssh configuration file here (ssh -F FILE; default: ssh's own)
    timeout: 5                           # seconds a read of it may take before it is "host unreachable" (5)
```

A host is checked when config.yaml is read: a bad name or value is a definition error (exit 3) naming the file,
the host and the key. Standard library only: every launch reads config.yaml.
"""

from __future__ import annotations

import re
from typing import Any

from agentlaunch.datarecord import datarecord
from agentlaunch.errors import DefinitionError

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
SOCKET = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
KEYS = ("ssh", "agents_dir", "socket", "agentlaunch", "ssh_config", "timeout")
TIMEOUT = 5.0
"""Seconds a read of the host (``fleet``, ``status``, ``hosts``) may take before it is "host unreachable"."""
UNSAFE = re.compile(r"[\x00-\x20\x7f]")
"""Whitespace and control characters: never in a destination, a path or a command given to ssh."""


@datarecord(frozen=True)
class Host:
    name: str
    """How agentlaunch names it (``status``'s host column, ``--host NAME``)."""
    ssh: str
    """Its SSH destination, given to ssh as written (after ``--``)."""
    agents_dir: str | None = None
    socket: str | None = None
    agentlaunch: str = "agentlaunch"
    ssh_config: str | None = None
    timeout: float = TIMEOUT


def parse_hosts(value: object, where: str) -> tuple[Host, ...]:
    """``hosts:`` as Host records in the file's order; a DefinitionError listing every problem."""
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise DefinitionError(f"{where}: hosts: expected a mapping of host names to SSH destinations")
    problems: list[str] = []
    hosts: list[Host] = []
    for name, entry in value.items():
        found = _host(name, entry, f"{where}: hosts.{name}", problems)
        if found is not None:
            hosts.append(found)
    if problems:
        raise DefinitionError(problems)
    return tuple(hosts)


def _host(name: object, entry: object, where: str, problems: list[str]) -> Host | None:
    if not isinstance(name, str) or not NAME.match(name):
        problems.append(f"{where}: a host name is letters, digits, '.', '_' or '-' (at most 64, not first '.-_')")
        return None
    fields: dict[str, Any] = {"ssh": entry} if isinstance(entry, str) else entry if isinstance(entry, dict) else {}
    if not isinstance(entry, str | dict):
        problems.append(f"{where}: expected an SSH destination, or a mapping with ssh: and optional keys")
        return None
    before = len(problems)
    for key in fields:
        if key not in KEYS:
            problems.append(f"{where}.{key}: unknown key (allowed: {', '.join(KEYS)})")
    ssh = fields.get("ssh")
    if not isinstance(ssh, str) or not ssh or ssh.startswith("-") or UNSAFE.search(ssh):
        problems.append(f"{where}.ssh: expected an SSH destination (user@host, an alias, ssh://host:port), got {ssh!r}")
    for key in ("agents_dir", "agentlaunch", "ssh_config"):
        text = fields.get(key)
        if text is not None and (not isinstance(text, str) or not text or text.startswith("-") or UNSAFE.search(text)):
            problems.append(f"{where}.{key}: expected a path without spaces or control characters, got {text!r}")
    socket = fields.get("socket")
    if socket is not None and (not isinstance(socket, str) or not SOCKET.match(socket)):
        problems.append(f"{where}.socket: expected a tmux server name (letters, digits, '_', '-'), got {socket!r}")
    timeout = fields.get("timeout", TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 600:
        problems.append(f"{where}.timeout: expected seconds, a number above 0 and at most 600, got {timeout!r}")
    if len(problems) > before:
        return None
    return Host(
        name=name,
        ssh=str(ssh),
        agents_dir=fields.get("agents_dir"),
        socket=socket,
        agentlaunch=fields.get("agentlaunch") or "agentlaunch",
        ssh_config=fields.get("ssh_config"),
        timeout=float(timeout),
    )


def find_host(hosts: tuple[Host, ...], name: str) -> Host:
    """The host called ``name``; a usage error naming the hosts configured otherwise."""
    for host in hosts:
        if host.name == name:
            return host
    from agentlaunch.errors import UsageError

    known = ", ".join(h.name for h in hosts) or "none: add hosts: to config.yaml (docs/hosts.md)"
    raise UsageError(f"no host {name!r} in config.yaml (hosts: {known})")
