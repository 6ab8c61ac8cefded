"""A real OpenSSH server on 127.0.0.1 for the hosts tests (docs/development.md, "Hosts over SSH").

:func:`start_sshd` starts Debian's ``sshd`` on a free port with host and user keys it generated in a temporary
folder. The "remote" side is this machine reached only through ssh: each user key's line in ``authorized_keys``
has a ``command=`` (``remote-env VARIANT``) that sets HOME, the XDG folders, AGENTLAUNCH_STATE_DIR,
AGENTLAUNCH_CONFIG_DIR and the tmux server (``AGENTLAUNCH_TMUX_SOCKET``) to the remote side's own, a PATH with
this checkout's agentlaunch (the same Python) on it, sources ``REMOTE/env`` when a test wrote one (a host's own
settings: a fake API's address, the real CLIs' folder), and then runs the command ssh was given
(``$SSH_ORIGINAL_COMMAND``) with ``/bin/sh -c``. Variants: ``full`` (tmux and the usual PATH) and ``bare`` (a PATH
with agentlaunch alone: no tmux, no CLI). Other keys and known_hosts files make the faults: ``stranger`` (a key
the server refuses) and ``known_hosts_changed`` (another host key recorded for the server).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.waits import wait_for

SSHD = shutil.which("sshd", path="/usr/sbin:/usr/local/sbin:/sbin:" + os.environ.get("PATH", ""))

REMOTE_ENV = """#!/bin/sh
R={remote}
export HOME="$R/home" XDG_CONFIG_HOME="$R/home/.config" XDG_STATE_HOME="$R/home/.local/state"
export XDG_CACHE_HOME="$R/home/.cache" XDG_DATA_HOME="$R/home/.local/share"
export AGENTLAUNCH_STATE_DIR="$R/state" AGENTLAUNCH_CONFIG_DIR="$R/config" AGENTLAUNCH_TMUX_SOCKET={socket}
unset TMUX TMUX_PANE AGENTLAUNCH_AGENTS_DIR
case "$1" in
  bare) PATH="$R/barebin" ;;
  *) PATH="$R/bin:/usr/local/bin:/usr/bin:/bin" ;;
esac
export PATH
if [ -f "$R/env" ]; then . "$R/env"; fi
cd "$HOME" || exit 1
exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def keygen(path: Path) -> str:
    """A new ed25519 key at ``path`` (no passphrase); its public line."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", path.name, "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip()


@dataclass
class SshServer:
    folder: Path
    port: int
    remote: Path
    """The remote side's root: ``home/`` (its HOME, ``home/agents`` its agents), ``state/``, ``config/``, ``env``."""
    remote_socket: str
    proc: subprocess.Popen[bytes] | None = None
    configs: dict[str, Path] = field(default_factory=dict)

    def ssh_config(self, key: str = "full", known: str = "known_hosts") -> Path:
        """A client configuration (``ssh -F``) using user key ``key`` and the known_hosts file ``known``."""
        path = self.folder / f"ssh_config-{key}-{known}"
        if not path.exists():
            path.write_text(
                "Host *\n"
                f"  IdentityFile {self.folder / key}\n  IdentitiesOnly yes\n"
                f"  UserKnownHostsFile {self.folder / known}\n  GlobalKnownHostsFile /dev/null\n"
                "  StrictHostKeyChecking yes\n"
            )
        return path

    def host(self, key: str = "full", known: str = "known_hosts", **extra: object) -> dict[str, object]:
        """A ``hosts:`` entry reaching this server (an ``ssh://`` destination with its port), read with a 30 s timeout:
        on a loaded machine the default 5 s made a live host "unreachable" (a test about timeouts passes its own)."""
        entry: dict[str, object] = {"ssh": f"ssh://127.0.0.1:{self.port}", "ssh_config": str(self.ssh_config(key, known))}
        return entry | {"timeout": 30} | extra

    def host_via(self, port: int, **extra: object) -> dict[str, object]:
        """:meth:`host` reached through another port of 127.0.0.1 that leads to this server (a slow proxy's:
        tests/support/slow_proxy.py), its host key known there too."""
        known = f"known_hosts-{port}"
        (self.folder / known).write_text(
            (self.folder / "known_hosts").read_text().replace(f"[127.0.0.1]:{self.port} ", f"[127.0.0.1]:{port} ")
        )
        return self.host(known=known, **extra) | {"ssh": f"ssh://127.0.0.1:{port}"}

    def kill_remote_tmux(self) -> None:
        subprocess.run(["tmux", "-L", self.remote_socket, "kill-server"], capture_output=True)

    def start(self) -> None:
        """Start sshd (again, after :meth:`stop`: the same port, keys and known_hosts), listening when it returns."""
        log = (self.folder / "sshd.log").open("ab")
        self.proc = subprocess.Popen([SSHD or "sshd", "-D", "-e", "-f", str(self.folder / "sshd_config")], stdout=log, stderr=log)
        log.close()  # the server holds its own copy
        proc = self.proc
        wait_for(lambda: listening(self.port) or proc.poll() is not None, what="sshd listening")
        if proc.poll() is not None:
            raise RuntimeError(f"sshd did not start: {(self.folder / 'sshd.log').read_text()}")

    def drop_connections(self) -> None:
        """End every session's sshd: each client's connection (a shared one too) drops, the server listens on."""
        if self.proc is not None:
            for pid in children(self.proc.pid):
                kill(pid)

    def stop(self) -> None:
        """The host goes down: its sessions ended, then the server (nothing listens on its port until :meth:`start`)."""
        if self.proc is not None:
            self.drop_connections()
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None


def start_sshd(folder: Path) -> Iterator[SshServer]:
    """The server, until the generator is closed (its sessions and the server ended then, by their pids)."""
    if SSHD is None:
        raise RuntimeError("sshd is not installed: apt-get install openssh-server (.ci/run installs it)")
    if os.geteuid() == 0 and not os.path.isdir("/run/sshd"):
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd run by root needs its privilege separation folder
    remote = folder / "remote"
    for sub in ("home/agents", "state", "config", "bin", "barebin"):
        (remote / sub).mkdir(parents=True, exist_ok=True)
    wrapper = f'#!/bin/sh\nexec {sys.executable} -m agentlaunch "$@"\n'
    for bin_dir in ("bin", "barebin"):
        (remote / bin_dir / "agentlaunch").write_text(wrapper)
        (remote / bin_dir / "agentlaunch").chmod(0o755)
    server = SshServer(folder, free_port(), remote, f"al-test-remote-{os.getpid()}-{uuid.uuid4().hex[:6]}")
    env_script = folder / "remote-env"
    env_script.write_text(REMOTE_ENV.format(remote=remote, socket=server.remote_socket))
    env_script.chmod(0o755)
    host_pub = keygen(folder / "hostkey")
    keygen(folder / "otherhostkey")
    lines = [f'command="{env_script} {variant}",no-port-forwarding {keygen(folder / variant)}' for variant in ("full", "bare")]
    keygen(folder / "stranger")
    (folder / "authorized_keys").write_text("\n".join(lines) + "\n")
    (folder / "known_hosts").write_text(f"[127.0.0.1]:{server.port} {host_pub}\n")
    other = (folder / "otherhostkey.pub").read_text().split()
    (folder / "known_hosts_changed").write_text(f"[127.0.0.1]:{server.port} {other[0]} {other[1]}\n")
    config = folder / "sshd_config"
    config.write_text(
        f"Port {server.port}\nListenAddress 127.0.0.1\nHostKey {folder / 'hostkey'}\n"
        f"AuthorizedKeysFile {folder / 'authorized_keys'}\nPidFile {folder / 'sshd.pid'}\n"
        "UsePAM no\nStrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "PermitRootLogin prohibit-password\nAcceptEnv LANG LC_* ANTHROPIC_*\nX11Forwarding no\nAllowAgentForwarding no\n"
    )
    server.start()
    try:
        yield server
    finally:
        server.kill_remote_tmux()
        server.stop()  # a session's sshd first: the clients' shared connections end with it


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (sshd's sessions)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                found.append(int(entry))
    return found


def kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, 15)


def demo_alone(sshd: SshServer) -> Path:
    """The host's ``~/agents``: the bundled examples but planner and reviewer (the demo agent alone, on the offline
    fake provider), made anew."""
    from agentlaunch.paths import bundled_agents_dir

    agents = sshd.remote / "home" / "agents"
    shutil.rmtree(agents, ignore_errors=True)
    shutil.copytree(bundled_agents_dir(), agents)
    for other in ("planner", "reviewer"):
        shutil.rmtree(agents / other)
    return agents
