"""What a host has: agentlaunch there (its version, its fleet contract), tmux, and the CLI command of each of
its agents (one round trip, and one more for the commands). ``agentlaunch hosts`` shows the first part of each
host; ``hosts check NAME`` all of it, with how to install what is missing.

One POSIX shell script runs on the host (:func:`script`): each of its sections starts with a line ``@@NAME`` and
ends with ``@@exit N``; every value in it is quoted. An agentlaunch there that is older, or missing, still answers
the other sections.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agentlaunch.datarecord import datarecord, field
from agentlaunch.errors import AgentlaunchError
from agentlaunch.fleet.contract import VERSION
from agentlaunch.hosts import ssh
from agentlaunch.providers.descriptors import DESCRIPTORS

if TYPE_CHECKING:
    from agentlaunch.hosts.config import Host

INSTALL_AGENTLAUNCH = "pipx install agentlaunch (the same version as here)"
AL = '"$al"'
"""The script's agentlaunch: a shell variable holding the host's command."""
INSTALL_TMUX = "install tmux there (apt-get install tmux, brew install tmux)"


def script(host: Host, full: bool) -> str:
    """The host's shell script: agentlaunch's version and fleet contract; with ``full``, its agents and tmux."""
    fleet = ssh.remote_command(host, ssh.agentlaunch_args(host, ["fleet", "--json", "--local"], agents=True, socket=True), AL)
    lines = [
        f"al={ssh.remote_word(host.agentlaunch)}",
        'printf \'@@version\\n\'; "$al" --version 2>&1; echo "@@exit $?"',
        f"printf '@@fleet\\n'; {fleet} 2>/dev/null; echo \"@@exit $?\"",
    ]
    if full:
        listing = ssh.remote_command(host, ssh.agentlaunch_args(host, ["list", "--json"], agents=True), AL)
        lines += [
            f"printf '@@list\\n'; {listing} 2>/dev/null; echo \"@@exit $?\"",
            "printf '@@tmux\\n'; tmux -V 2>&1; echo \"@@exit $?\"",
        ]
    return "\n".join(lines)


def sections(text: str) -> dict[str, tuple[str, int | None]]:
    """``@@NAME`` ... ``@@exit N`` sections of the script's output: NAME -> (its text, its exit status)."""
    found: dict[str, tuple[str, int | None]] = {}
    name, body = None, []
    for line in text.splitlines():
        if line.startswith("@@exit ") and name is not None:
            code = line.removeprefix("@@exit ").strip()
            found[name] = ("\n".join(body), int(code) if code.isdigit() else None)
            name, body = None, []
        elif line.startswith("@@") and name is None:
            name = line[2:].strip()
        elif name is not None:
            body.append(line)
    return found


@datarecord(frozen=True)
class HostState:
    """What one host answered (``reachable`` False: ``problem`` says why)."""

    host: str
    destination: str
    reachable: bool
    problem: str | None = None
    agentlaunch: str | None = None
    """agentlaunch's version there (None: missing)."""
    contract: int | None = None
    """The fleet contract version it speaks (None: unknown)."""
    tmux: str | None = None
    clis: dict[str, str] = field(default_factory=dict)
    """Each agent's CLI command -> where the host finds it."""
    agents: dict[str, str] = field(default_factory=dict)
    """Each agent defined there -> its provider."""
    missing: list[dict[str, str]] = field(default_factory=list)
    """What the host lacks: ``{"what": ..., "why": ..., "install": ...}``."""

    def as_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "ssh": self.destination,
            "reachable": self.reachable,
            "problem": self.problem,
            "agentlaunch": self.agentlaunch,
            "fleet_contract": self.contract,
            "tmux": self.tmux,
            "clis": self.clis,
            "agents": self.agents,
            "missing": self.missing,
        }


def probe(host: Host, *, full: bool = False, timeout: float | None = None) -> HostState:
    """Ask ``host`` what it has (never raises for the host's sake: an unreachable one says why)."""
    try:
        done = ssh.run_shell(host, script(host, full), timeout=timeout or host.timeout)
    except AgentlaunchError as exc:
        said = exc.message.removeprefix("host unreachable: ").removeprefix(f"{host.name}: ")
        return HostState(host.name, host.ssh, False, problem=said)
    found = sections(done.stdout)
    version_text, version_code = found.get("version", ("", None))
    version = version_text.strip().removeprefix("agentlaunch ").strip() if version_code == 0 else None
    contract = fleet_version(found.get("fleet"))
    missing: list[dict[str, str]] = []
    if version is None:
        why = f"`{host.agentlaunch}` not found" if version_code == 127 else f"`{host.agentlaunch} --version` failed"
        missing.append({"what": "agentlaunch", "why": why, "install": INSTALL_AGENTLAUNCH})
    elif contract != VERSION:
        said = "none (no `fleet --json --local`)" if contract is None else str(contract)
        why = f"agentlaunch {version} there speaks fleet contract {said}, this one {VERSION}"
        missing.append({"what": "agentlaunch", "why": why, "install": INSTALL_AGENTLAUNCH})
    if not full:
        return HostState(host.name, host.ssh, True, agentlaunch=version, contract=contract, missing=missing)
    tmux_text, tmux_code = found.get("tmux", ("", None))
    tmux = tmux_text.strip() if tmux_code == 0 else None
    if tmux is None:
        missing.append({"what": "tmux", "why": "tmux is not on the PATH there", "install": INSTALL_TMUX})
    agents = listed(found.get("list"), "command")
    clis = commands_found(host, sorted({c for c in agents.values()}), timeout or host.timeout)
    for command in sorted(set(agents.values())):
        if not clis.get(command):
            users = ", ".join(a for a, c in sorted(agents.items()) if c == command)
            cli = command.rpartition("/")[2]
            how = DESCRIPTORS[cli].install_hint if cli in DESCRIPTORS else f"install `{command}`"
            missing.append(
                {"what": command, "why": f"`{command}` is not found there (agents {users})", "install": how + " there"}
            )
    clis = {k: v for k, v in clis.items() if v}
    agents = listed(found.get("list"), "provider")
    return HostState(host.name, host.ssh, True, None, version, contract, tmux, clis, agents, missing)


def fleet_version(section: tuple[str, int | None] | None) -> int | None:
    """The contract version a host's ``fleet --json --local`` gave (None: it gave none)."""
    if section is None or section[1] != 0:
        return None
    try:
        data = json.loads(section[0])
    except ValueError:
        return None
    version = data.get("version") if isinstance(data, dict) else None
    return version if isinstance(version, int) and not isinstance(version, bool) else None


def listed(section: tuple[str, int | None] | None, key: str) -> dict[str, str]:
    """Each agent the host's ``list --json`` defines -> its ``key`` (``provider``, ``command``), where it is a string."""
    if section is None or section[1] != 0:
        return {}
    try:
        data = json.loads(section[0])
    except ValueError:
        return {}
    agents = data.get("agents") if isinstance(data, dict) else None
    return {
        str(a["name"]): str(a[key])
        for a in agents or []
        if isinstance(a, dict) and isinstance(a.get("name"), str) and isinstance(a.get(key), str)
    }


def commands_found(host: Host, commands: list[str], timeout: float) -> dict[str, str]:
    """Each command -> where the host's shell finds it ("" when it does not), asked in one more round trip."""
    if not commands:
        return {}
    script = "; ".join(f"printf '%s\\n' \"$(command -v {ssh.remote_word(c)})\"" for c in commands)
    try:
        done = ssh.run_shell(host, script, timeout=timeout)
    except AgentlaunchError:
        return {}
    paths = done.stdout.splitlines()
    return {c: paths[i] if i < len(paths) else "" for i, c in enumerate(commands)}
