"""What a host has, asked in one round trip: agentlaunch there (its version, its fleet contract), tmux, the CLIs of
its agents. ``agentlaunch hosts`` shows the first part of each host; ``hosts check NAME`` all of it, with how to
install what is missing.

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

CLIS = ("claude", "codex", "gemini")
INSTALL_AGENTLAUNCH = "pipx install agentlaunch (the same version as here)"
AL = '"$al"'
"""The script's agentlaunch: a shell variable holding the host's command."""
INSTALL_TMUX = "install tmux there (apt-get install tmux, brew install tmux)"


def script(host: Host, full: bool) -> str:
    """The host's shell script: agentlaunch's version and fleet contract; with ``full``, its agents, tmux, the CLIs."""
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
            "printf '@@clis\\n'; for c in " + " ".join(CLIS) + '; do printf \'%s=%s\\n\' "$c" "$(command -v "$c")"; done; '
            'echo "@@exit 0"',
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
    clis = dict(line.partition("=")[::2] for line in found.get("clis", ("", None))[0].splitlines() if "=" in line)
    agents = agent_providers(found.get("list"))
    for name in sorted({p for p in agents.values() if p in CLIS}):
        if not clis.get(name):
            users = ", ".join(a for a, p in sorted(agents.items()) if p == name)
            why = f"{name} is not on the PATH there (agents {users})"
            missing.append({"what": name, "why": why, "install": DESCRIPTORS[name].install_hint + " (there)"})
    clis = {k: v for k, v in clis.items() if v}
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


def agent_providers(section: tuple[str, int | None] | None) -> dict[str, str]:
    """Each agent the host's ``list --json`` defines -> its provider (none when it gave nothing readable)."""
    if section is None or section[1] != 0:
        return {}
    try:
        data = json.loads(section[0])
    except ValueError:
        return {}
    agents = data.get("agents") if isinstance(data, dict) else None
    return {
        str(a.get("name")): str(a.get("provider")) for a in agents or [] if isinstance(a, dict) and isinstance(a.get("name"), str)
    }
