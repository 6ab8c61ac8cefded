"""The launch's end of the reports its CLI's hooks send (see :mod:`agentlaunch.providers.native.hook_report`).

A native launch binds one datagram socket in its private runtime folder; the
hooks, the notify program and the status-line command the provider's
``native_extras`` configures send one JSON datagram each. The socket's
descriptor is what the relay loop waits on, so a hook wakes the launch at
once and nothing polls.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import socket
from pathlib import Path
from typing import Any

from agentlaunch.datarecord import datarecord
from agentlaunch.platform_support import SOCKET_PATH_MAX
from agentlaunch.providers.untrusted import loads

REPORTER = Path(__file__).with_name("hook_report.py")
MAX_DATAGRAM = 1 << 18
MAX_PATH = SOCKET_PATH_MAX
"""The longest socket path bound (macOS's, on every platform): the runtime folder must be short (under /tmp)."""
MAX_PENDING = 1_000
"""At most this many reports are taken per read; the rest wait for the next one (a flood cannot stall the relay)."""


@datarecord(frozen=True)
class HookReport:
    """One report: the event name the command was configured with, and the CLI's JSON object (or {})."""

    event: str
    payload: dict[str, Any]
    truncated: bool = False
    reply: str | None = None
    """A held hook's request, waiting for :meth:`agentlaunch.providers.native.hook_held.HeldHooks.answer`."""


def script_argv(python: str, script: Path, *args: str) -> list[str]:
    """``python -I -S SCRIPT ARGS...`` as a CLI runs it at each event, but importing the script as a module.

    Python compiles a script it is given by path at every run (a module's bytecode is cached in its
    ``__pycache__``): the status line's 330 lines cost about 3 ms of CPU of its 16 ms a run (13 ms imported,
    measured 40 alternating runs). ``-I -S``: no site, no environment, no working directory on the path; the
    script's own folder is put first, as running it by path would, and ``sys.argv[0]`` is its path."""
    folder, module = str(script.parent), script.stem
    code = (
        f"import sys; sys.path.insert(0, {folder!r}); sys.argv[0] = {str(script)!r}; "
        f"from {module} import main; sys.exit(main(sys.argv))"
    )
    return [python, "-I", "-S", "-c", code, *args]


def hook_command(python: str, socket_path: Path, event: str) -> str:
    """The shell command a CLI runs to report ``event`` (its JSON on stdin) to the socket at ``socket_path``."""
    return shlex.join(hook_argv(python, socket_path, event))


def hook_argv(python: str, socket_path: Path, event: str) -> list[str]:
    """The same as an argv, for CLIs that take a program and its arguments (Codex's ``notify``)."""
    return script_argv(python, REPORTER, str(socket_path), event)


class HookSocket:
    """A bound, non-blocking datagram socket at ``path``; :meth:`receive` takes what has arrived."""

    def __init__(self, path: Path, bound: socket.socket | None = None) -> None:
        """Bind ``path``; ``bound``: the socket the early start already bound there (non-blocking, 0600), taken as is."""
        if len(os.fsencode(path)) > MAX_PATH:
            raise OSError(f"socket path too long ({len(os.fsencode(path))} bytes, at most {MAX_PATH}): {path}")
        self.path = path
        if bound is not None:
            self._sock = bound
            return
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            self._sock.setblocking(False)
            self._sock.bind(str(path))
            os.chmod(path, 0o600)
        except OSError:
            self._sock.close()
            raise

    def fileno(self) -> int:
        return self._sock.fileno()

    def receive(self) -> list[HookReport]:
        """The reports that arrived since the last call, in order; datagrams that are not reports are dropped."""
        reports: list[HookReport] = []
        while len(reports) < MAX_PENDING:
            try:
                data = self._sock.recv(MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break
            report = parse_report(data)
            if report is not None:
                reports.append(report)
        return reports

    def close(self) -> None:
        self._sock.close()
        with contextlib.suppress(OSError):
            self.path.unlink()


def parse_report(data: bytes) -> HookReport | None:
    """The report in one datagram, or None when it is not one (never raises).

    Two forms: the reporter's header line and the CLI's bytes as they came (``{"event": …}\\n<JSON>``,
    the payload null when they are not JSON), or one JSON object with the payload inside (a truncated
    report). JSON text never holds a raw newline, so the first newline tells them apart.
    """
    head, newline, body = data.partition(b"\n")
    try:
        value = loads(head.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(value, dict) or not isinstance(value.get("event"), str):
        return None
    if newline:
        try:
            value["payload"] = loads(body.decode("utf-8", "replace")) if body.strip() else None
        except ValueError:
            value["payload"] = None
    payload = value.get("payload")
    return HookReport(value["event"], payload if isinstance(payload, dict) else {}, value.get("truncated") is True)
