"""``agentlaunch send``'s end of the control socket: one request on one connection, and the replies it brings
(:mod:`agentlaunch.launch.control_request` says what they are)."""

from __future__ import annotations

import contextlib
import json
import socket
from typing import Any

from agentlaunch.launch.control_request import ANSWER_WAIT, CANCEL_WAIT, FIRST_REPLY_WAIT, REQUEST_WAIT


class ControlClient:
    """``agentlaunch send``'s end: one request on one connection, and the replies it brings."""

    def __init__(self, path: str, connect_wait: float = REQUEST_WAIT) -> None:
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._buffer = bytearray()
        try:
            self._sock.settimeout(connect_wait)
            self._sock.connect(path)
        except OSError:
            self._sock.close()
            raise

    def request(
        self, prompt: str, wait: bool, command: bool = False, first_wait: float = FIRST_REPLY_WAIT
    ) -> dict[str, Any] | None:
        """Send the request; the session's first reply (None: it hung up without one: the prompt was not typed).

        A session that does not answer within ``first_wait`` seconds is told the client gives up (its writing end
        is shut), and its answer to that is read: the ``ok`` it had already written (typed), or the end of the
        connection (never typed). Raises TimeoutError only when even that answer does not come within
        :data:`CANCEL_WAIT` seconds: the session's loop is stuck, and it will not type a request it looks at later.
        """
        request = {"prompt": prompt, "wait": wait, **({"command": True} if command else {})}
        self._sock.sendall(json.dumps(request, ensure_ascii=False).encode("utf-8") + b"\n")
        try:
            return self.reply(first_wait)
        except TimeoutError:
            pass
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_WR)
        return self.reply(CANCEL_WAIT)

    def resume_budget(self) -> dict[str, Any] | None:
        """Ask the session a budget paused to go on; its reply (None: it hung up without one)."""
        self._sock.sendall(b'{"resume_budget": true}\n')
        return self.reply(FIRST_REPLY_WAIT + CANCEL_WAIT)

    def ask(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """A ``question`` or ``answer`` request (:mod:`agentlaunch.launch.questions`); its reply (None: it hung up)."""
        self._sock.sendall(json.dumps(request, ensure_ascii=False).encode("utf-8") + b"\n")
        return self.reply(ANSWER_WAIT if "answer" in request else FIRST_REPLY_WAIT + CANCEL_WAIT)

    def reply(self, timeout: float | None) -> dict[str, Any] | None:
        """The next reply within ``timeout`` seconds (None: wait as long as it takes); None if the session hung up.

        Raises TimeoutError when ``timeout`` passes first.
        """
        self._sock.settimeout(timeout)
        while b"\n" not in self._buffer:
            try:
                chunk = self._sock.recv(65536)
            except TimeoutError:
                raise
            except OSError:
                return None
            if not chunk:
                return None
            self._buffer += chunk
        line, _, rest = bytes(self._buffer).partition(b"\n")
        self._buffer = bytearray(rest)
        try:
            value = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()
