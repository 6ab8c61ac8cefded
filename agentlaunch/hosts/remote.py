"""A command of agentlaunch's run on a host: ``send``, ``stop``, ``restart`` and ``tmux up`` with ``--host NAME``.

:func:`run_there` runs ``agentlaunch ARGS`` on the host over its connection, its stdout passed through as it comes
and its stderr too, but for two lines it writes for this side: ``@@agentlaunch-remote-started`` before the command
(the host was reached) and, from ``send --report-taken``, ``@@agentlaunch-taken SESSION`` the moment the agent's
session took the prompt. The host's exit status is the command's. When ssh itself fails (exit 255) they tell what
happened: not reached (nothing ran there: :class:`~agentlaunch.errors.HostUnreachable`), or reached and the
connection dropped (:class:`~agentlaunch.errors.HostDropped`, saying whether the prompt was typed).
"""

from __future__ import annotations

import subprocess
import sys
import threading
from typing import TYPE_CHECKING

from agentlaunch.errors import HostDropped, HostUnreachable
from agentlaunch.hosts import ssh

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import IO

    from agentlaunch.hosts.config import Host

STARTED = "@@agentlaunch-remote-started"
TAKEN = "@@agentlaunch-taken"


class Seen:
    """What the host's stderr said for this side: reached, the prompt taken (its session), its last lines."""

    __slots__ = ("label", "out", "started", "taken", "tail")

    def __init__(self, label: str | None = None) -> None:
        self.started = False
        self.taken: str | None = None
        self.tail: list[str] = []
        self.label = label  # each line written here begins with it (``box: ``): several hosts at once
        self.out = b""  # the host's stdout, when run_there was asked to keep it (``capture``)

    def line(self, text: str) -> None:
        """One line of the host's stderr: a marker is kept, anything else written to this stderr."""
        bare = text.rstrip("\n")
        if bare == STARTED:
            self.started = True
        elif bare == TAKEN or bare.startswith(TAKEN + " "):
            self.taken = bare.removeprefix(TAKEN).strip()
        elif bare == ssh.MISSING:
            self.tail.append(bare)  # for :func:`finished`: agentlaunch is not there
        else:
            self.tail = [*self.tail[-9:], bare]
            sys.stderr.write(f"{self.label}: {text}" if self.label else text)
            sys.stderr.flush()


def run_there(
    host: Host,
    args: Sequence[str],
    *,
    stdin: bytes | None = None,
    tty: bool = False,
    label: bool = False,
    capture: bool = False,
) -> tuple[int, Seen]:
    """Run ``agentlaunch ARGS`` on ``host``: its exit status (255: ssh failed) and what it said for this side;
    ``label``: each line it writes begins with the host's name (several hosts' commands at once); ``capture``: its
    stdout kept in :attr:`Seen.out` instead of passed through (the MCP server's stdout is its protocol)."""
    command = f"printf '%s\\n' {STARTED} >&2; {ssh.guarded(host, ssh.remote_command(host, args))}"
    try:
        proc = subprocess.Popen(
            ssh.ssh_argv(host, command, tty=tty),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE if label or capture else None,
            stderr=subprocess.PIPE,
            env=ssh.ssh_env(),
        )
    except FileNotFoundError:
        raise HostUnreachable("host unreachable: ssh is not installed here (OpenSSH's client)") from None
    seen = Seen(host.name if label else None)
    copy: threading.Thread | None = None
    if capture:
        copy = threading.Thread(target=_keep_out, args=(proc, seen), daemon=True)
    elif proc.stdout is not None:
        copy = threading.Thread(target=_labelled, args=(proc.stdout, host.name), daemon=True)
    if copy is not None:
        copy.start()
    if stdin is not None and proc.stdin is not None:
        try:
            proc.stdin.write(stdin)
            proc.stdin.close()
        except BrokenPipeError:
            pass  # ssh ended first: its exit status says why
    assert proc.stderr is not None
    for raw in proc.stderr:
        seen.line(raw.decode("utf-8", "replace"))
    code = proc.wait()
    if copy is not None:
        copy.join()
    return code, seen


def _keep_out(proc: subprocess.Popen[bytes], seen: Seen) -> None:
    assert proc.stdout is not None
    seen.out = proc.stdout.read()


def _labelled(stream: IO[bytes], name: str) -> None:
    """The host command's stdout written here line by line, each beginning with ``NAME: ``."""
    for raw in stream:
        sys.stdout.write(f"{name}: {raw.decode('utf-8', 'replace')}")
        sys.stdout.flush()


def finished(host: Host, code: int, seen: Seen, what: str) -> int:
    """The command's exit status once ``run_there`` returned; an error when ssh failed, saying what was done."""
    if code != ssh.SSH_FAILED:
        ssh.missing(host, code, "\n".join(seen.tail))
        return code
    said = ssh.why("\n".join(seen.tail), host)
    if not seen.started:
        raise HostUnreachable(f"host unreachable: {host.name}: {said}; nothing ran there ({what} not done)")
    raise HostDropped(f"the connection to {host.name} dropped while {what} ran there ({said})")


def sent(host: Host, agent: str, code: int, seen: Seen) -> int:
    """``send --host``'s exit status: the host's, or (the connection lost) whether the prompt was typed."""
    if code != ssh.SSH_FAILED or not seen.started:
        return finished(host, code, seen, "send")
    said = ssh.why("\n".join(seen.tail), host)
    if seen.taken is not None:
        raise HostDropped(
            f"the prompt was typed in {agent}'s session{f' {seen.taken[:8]}' if seen.taken else ''} on {host.name}; "
            f"the connection dropped before the answer came back ({said}): the turn goes on there",
            hint="agentlaunch fleet shows it; its answer is in its transcript there",
        )
    raise HostDropped(
        f"the connection to {host.name} dropped before {agent}'s session said it took the prompt ({said}): not known to be typed",
        hint=f"agentlaunch fleet shows whether {agent} is in a turn",
    )
