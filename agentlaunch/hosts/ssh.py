"""Every ssh command line agentlaunch runs, on one multiplexed connection per host; why a connection failed, in words.

Each command is ``ssh [-F FILE] -o ControlMaster=auto -o ControlPath=... -o ControlPersist=600 -o BatchMode=yes
... -- DESTINATION 'COMMAND'``: the first one opens the host's connection (OpenSSH's master, which stays 10
minutes after the last use) and every other one reuses it. Its control socket is in ``agentlaunch-ssh-UID`` under
``$XDG_RUNTIME_DIR`` (else ``/tmp``), a folder of this user's, 0700, named by a short digest of the host (a Unix
socket path is at most 104 bytes on macOS, 108 on Linux, and ssh adds 17 while it makes it).

What does not travel: no environment variable (ssh runs with :func:`ssh_env`, the few variables ssh itself
needs, so a ``SendEnv`` of the user's ssh config finds nothing to send: ssh options cannot clear a config's
``SendEnv``, since the config is read after them), no agent or X11 forwarding, no port forwarding
(``ClearAllForwardings``). Host keys are checked as the user's ssh config says (never
``StrictHostKeyChecking=no``): a changed key is refused and :func:`why` says so. The remote command is one string
for the host's shell, each word quoted by :func:`remote_command`.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import stat
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from agentlaunch.errors import HostNotReady, HostUnreachable, StateError
from agentlaunch.platform_support import SOCKET_PATH_MAX

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentlaunch.hosts.config import Host

PERSIST = 600  # seconds the host's connection stays open after its last command
CONNECT_TIMEOUT = 10  # seconds to reach a host (ssh's ConnectTimeout)
SSH_FAILED = 255  # ssh's own exit status for a connection that failed (the remote command's is passed on)
SOCKET_LIMIT = SOCKET_PATH_MAX  # bytes of a Unix socket path on macOS (104 with its NUL), the smaller of the two


def control_dir() -> Path:
    """This user's folder of control sockets (made 0700; one that is not this user's private folder is refused)."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if not base or len(base) > 40 or not os.path.isdir(base) or not os.access(base, os.W_OK):
        base = "/tmp"
    path = Path(base) / f"agentlaunch-ssh-{os.geteuid()}"
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise StateError(f"{path}: cannot make the folder of ssh connections ({exc.strerror or exc})") from None
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise StateError(f"{path}: not a folder of this user's: agentlaunch keeps its ssh connections there; remove it")
    if info.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def control_path(host: Host) -> str:
    """The host's control socket: a digest of its name, destination and ssh config (16 hex digits)."""
    key = "\0".join((host.name, host.ssh, host.ssh_config or "")).encode()
    path = str(control_dir() / hashlib.sha256(key).hexdigest()[:16])
    if len(path.encode()) + 17 > SOCKET_LIMIT:  # ssh makes it as PATH.XXXXXXXXXXXXXXXX first
        raise StateError(f"{path}: too long for a socket; set XDG_RUNTIME_DIR to a shorter folder")
    return path


SSH_VARIABLES = ("HOME", "USER", "LOGNAME", "PATH", "SSH_AUTH_SOCK", "KRB5CCNAME", "TMPDIR", "XDG_RUNTIME_DIR", "TERM")
"""The variables ssh is started with (its config and keys, the user's ssh agent, Kerberos): no other one exists for a
``SendEnv`` to send (API keys, tokens, LANG and LC_*: nothing of this machine's environment reaches a host)."""


def ssh_env() -> dict[str, str]:
    """The environment of every ssh agentlaunch starts: :data:`SSH_VARIABLES` only, where set."""
    return {name: os.environ[name] for name in SSH_VARIABLES if name in os.environ}


def ssh_options(host: Host) -> list[str]:
    """ssh's options for ``host``: its shared connection, no question asked, nothing forwarded."""
    options = ["-F", str(Path(host.ssh_config).expanduser())] if host.ssh_config else []
    for option in (
        "ControlMaster=auto",
        f"ControlPath={control_path(host)}",
        f"ControlPersist={PERSIST}",
        "BatchMode=yes",
        f"ConnectTimeout={CONNECT_TIMEOUT}",
        "ServerAliveInterval=15",
        "ServerAliveCountMax=2",
        "ForwardAgent=no",
        "ForwardX11=no",
        "ClearAllForwardings=yes",
        "PermitLocalCommand=no",
    ):
        options += ["-o", option]
    return options


def remote_word(path: str) -> str:
    """A path for the host's shell: quoted, with a leading ``~/`` (or ``~``) its HOME there."""
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


class HomePath(str):
    """An argument that is a path on the host: a leading ``~/`` is its HOME there (:func:`remote_word`)."""

    __slots__ = ()


def agentlaunch_args(host: Host, command: Sequence[str], *, agents: bool = False, socket: bool = False) -> list[str]:
    """``command`` with the host's ``--agents-dir`` (``agents``) and ``--socket`` (``socket``) added when set."""
    args = list(command)
    if socket and host.socket:
        args += ["--socket", host.socket]
    if agents and host.agents_dir:
        args += ["--agents-dir", HomePath(host.agents_dir)]
    return args


def remote_command(host: Host, args: Sequence[str], program: str | None = None) -> str:
    """``agentlaunch ARGS`` as the host's shell must read it: each word quoted (a :class:`HomePath`'s ``~`` its HOME);
    ``program``: the first word as the shell must read it, instead of the host's agentlaunch."""
    words = (remote_word(a) if isinstance(a, HomePath) else shlex.quote(a) for a in args)
    return " ".join([program or remote_word(host.agentlaunch), *words])


def ssh_argv(host: Host, command: str, *, tty: bool = False) -> list[str]:
    """The whole ssh command line running ``command`` (one string for the host's shell) on ``host``."""
    return ["ssh", *ssh_options(host), "-t" if tty else "-T", "--", host.ssh, command]


def why(stderr: str, host: Host) -> str:
    """Why ssh could not run the command, in words (the connection's failure, from what ssh wrote)."""
    text = stderr.strip()
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("@@@")]
    if "HOST IDENTIFICATION HAS CHANGED" in text or "Host key for" in text and "has changed" in text:
        return (
            f"its host key has changed since known_hosts recorded it: refused (the host was reinstalled, or someone "
            f"is in the middle); check it, then `ssh-keygen -R` the old key and connect once with `ssh {host.ssh}`"
        )
    if "Host key verification failed" in text or "No ED25519 host key is known" in text or "host key is known" in text:
        return f"its host key is not known here (known_hosts): connect once with `ssh {host.ssh}` to check and keep it"
    if "Permission denied" in text:
        return f"authentication refused ({lines[-1] if lines else 'permission denied'}): check your key or agent for it"
    if "Connection refused" in text:
        return "connection refused (no ssh server listens there)"
    if "Could not resolve hostname" in text:
        return f"unknown host name ({lines[-1]})"
    if "timed out" in text:
        return "connection timed out"
    return lines[-1] if lines else "ssh failed and said nothing"


def run(host: Host, args: Sequence[str], *, timeout: float, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``agentlaunch ARGS`` on ``host`` and wait (at most ``timeout`` seconds); its output and exit status.

    HostUnreachable when no connection was made or the host took too long (the ssh process is killed; the host's
    connection stays for the next command), HostNotReady when agentlaunch is not there."""
    return run_shell(host, guarded(host, remote_command(host, args)), timeout=timeout, stdin=stdin)


MISSING = "@@agentlaunch-missing"
"""What the host's shell writes on stderr (then exit 127) when it does not find agentlaunch: :func:`guarded`."""


def guarded(host: Host, command: str) -> str:
    """``command`` after a check that the host's shell finds its agentlaunch (else :data:`MISSING`, exit 127): an exit
    127 of agentlaunch itself (a CLI or tmux missing there) is then never taken for agentlaunch missing."""
    return f"command -v {remote_word(host.agentlaunch)} >/dev/null 2>&1 || {{ echo {MISSING} >&2; exit 127; }}; {command}"


def run_shell(host: Host, command: str, *, timeout: float, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """:func:`run` for a whole command line for the host's shell, already quoted."""
    try:
        done = subprocess.run(
            ssh_argv(host, command),
            input=stdin.decode("utf-8", "surrogateescape") if stdin is not None else None,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            env=ssh_env(),
        )
    except subprocess.TimeoutExpired:
        raise HostUnreachable(f"host unreachable: {host.name}: no answer within {timeout:g}s") from None
    except FileNotFoundError:
        raise HostUnreachable("host unreachable: ssh is not installed here (OpenSSH's client)") from None
    if done.returncode == SSH_FAILED:
        raise HostUnreachable(f"host unreachable: {host.name}: {why(done.stderr, host)}")
    missing(host, done.returncode, done.stderr)
    return done


def missing(host: Host, code: int, stderr: str) -> None:
    """HostNotReady when the host's shell did not find agentlaunch (exit 127 after :data:`MISSING`)."""
    if code == 127 and MISSING in stderr:
        raise HostNotReady(
            f"{host.name}: agentlaunch is not installed there (`{host.agentlaunch}` not found by a non-interactive ssh command)",
            hint=f"install it there (pipx install agentlaunch), or set hosts.{host.name}.agentlaunch to its path",
        )
