"""Prompts from scripts: the socket through which ``agentlaunch send`` hands a prompt to a running session.

A chat or a native interface binds one Unix stream socket (mode 0600, in its
private runtime folder) and names it in its status record (``control``).
``agentlaunch send`` connects, writes one JSON line ``{"prompt": ..., "wait":
bool}`` and reads JSON lines back:

1. at once, ``{"ok": true, "session_id": ...}`` when the session took the
   prompt, or ``{"ok": false, "error": ..., "state": ...}`` when it cannot
   (it is asking, in a turn, ending; ``"retry": true`` when it is still
   starting and will take one soon);
2. with ``wait``, once the turn is over, ``{"done": true, "exit_code": N,
   "answer": ..., "error": ..., "usage": {...}, "cost_usd": ...}``. A
   connection closed without it means the session ended first.

A thread accepts connections and reads their requests (bounded in size and
time, so a client that never writes cannot hold anything up), then wakes the
launch's thread through a pipe (:meth:`ControlServer.fileno`, for the relay's
loop) and, if given, a callback (the line chat's prompt). The launch's thread
decides and replies; nothing of the session is touched from the thread.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentlaunch.launch.session import Launch

SOCKET_NAME = "control.sock"
MAX_PROMPT = 1 << 20
"""The longest prompt, in UTF-8 bytes, a session takes from ``send``."""
MAX_REQUEST = MAX_PROMPT * 6 + 4096  # a JSON line: the prompt with every character escaped, and its fields
REQUEST_WAIT = 2.0  # seconds a client has to write its request once connected
REPLY_WAIT = 2.0  # seconds a reply may wait for a client that does not read
MAX_QUEUED = 16  # requests waiting for the launch's thread; more are refused at once
ALLOWED_CONTROLS = "\n\t"


def prompt_problem(prompt: str) -> str | None:
    """Why ``prompt`` cannot be typed into a session, or None: empty, too long, or holding control characters.

    A control character (ESC, say) would reach the CLI's interface as a key, not as text: ``\\x1b[201~``
    would end the paste it is sent in, and what follows would be keys.
    """
    if not prompt.strip():
        return "the prompt is empty"
    try:
        size = len(prompt.encode("utf-8"))
    except UnicodeEncodeError as exc:
        return f"the prompt is not valid UTF-8 (at character {exc.start})"
    if size > MAX_PROMPT:
        return f"the prompt is {size:,} bytes; a session takes at most {MAX_PROMPT:,}"
    for index, char in enumerate(prompt):
        if (char < " " and char not in ALLOWED_CONTROLS) or char == "\x7f" or "\x80" <= char <= "\x9f":
            return f"the prompt holds a control character ({char!r} at character {index}); the interface would take it as a key"
    return None


def busy_reason(agent: str, state: str, stopped: str | None = None) -> str | None:
    """Why a session in ``state`` cannot take a sent prompt, or None when it can (it is ``waiting``)."""
    if stopped is not None:
        return f"{agent} is ending: {stopped}"
    if state == "waiting":
        return None
    if state == "asking":
        return f"{agent} is asking: a permission or a question waits for a person; answer it first"
    if state in ("thinking", "tool"):
        return f"{agent} is in a turn ({state}); send again once it is waiting"
    if state == "starting":
        return f"{agent} is still starting; send again in a few seconds"
    return f"{agent} is {state}"


def launch_busy(launch: Launch, state: str | None = None) -> str | None:
    """:func:`busy_reason` for ``launch`` (in ``state``, when its own state says less than the caller knows)."""
    stopped = launch.stopped.message if launch.stopped is not None else None
    return busy_reason(launch.spec.name, launch.state if state is None else state, stopped)


def open_control(launch: Launch, path: Path, what: str, **server: Any) -> ControlServer | None:
    """Bind ``launch``'s socket at ``path`` and name it in its status record; None (and a notice) when it cannot be."""
    try:
        control = ControlServer(path, **server)
    except OSError as exc:
        launch.notice(f"agentlaunch send cannot reach this {what}: its socket could not be made ({exc})")
        return None
    launch.control_path = str(control.path)
    launch.set_state(launch.state, always=True)  # the status record names the socket now
    return control


def close_control(launch: Launch, control: ControlServer) -> None:
    """Stop taking prompts: the socket is gone, and the status record no longer names it."""
    launch.control_path = None
    control.close()


def parse_request(data: bytes) -> tuple[str, bool] | str:
    """The prompt and the wait flag of one request line, or why it is not one (never raises)."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "the request is not a JSON line"
    if not isinstance(value, dict):
        return "the request is not a JSON object"
    prompt, wait = value.get("prompt"), value.get("wait", False)
    if not isinstance(prompt, str):
        return "the request has no prompt string"
    if not isinstance(wait, bool):
        return "the request's wait is not true or false"
    problem = prompt_problem(prompt)
    return problem if problem is not None else (prompt, wait)


@dataclass
class SendRequest:
    """One accepted connection's prompt; the launch's thread replies through it (a reply never raises)."""

    prompt: str
    wait: bool
    conn: socket.socket | None = field(repr=False, default=None)

    def _send(self, message: dict[str, Any]) -> bool:
        if self.conn is None:
            return False
        try:
            self.conn.settimeout(REPLY_WAIT)
            self.conn.sendall(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")
            return True
        except OSError:  # the client went away (or never reads): the session goes on
            self.close()
            return False

    def refuse(self, error: str, state: str | None, *, retry: bool = False) -> None:
        """The session cannot take the prompt now: say why (``retry``: it is starting, ask again soon), and hang up."""
        self._send({"ok": False, "error": error, "state": state, **({"retry": True} if retry else {})})
        self.close()

    def accept(self, session_id: str) -> None:
        """The prompt is on its way; without ``wait`` that is all the client hears."""
        self._send({"ok": True, "session_id": session_id})
        if not self.wait:
            self.close()

    def answer(
        self, *, exit_code: int, answer: str, error: str | None = None, usage: dict[str, int] | None = None,
        cost_usd: float | None = None,
    ) -> None:  # fmt: skip
        """The turn is over: its answer and exit code (as a headless turn's), then hang up."""
        self._send({"done": True, "exit_code": exit_code, "answer": answer, "error": error, "usage": usage,
                    "cost_usd": cost_usd})  # fmt: skip
        self.close()

    def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(OSError):
                self.conn.close()
            self.conn = None


class ControlServer:
    """The bound socket at ``path`` and the thread that takes requests; :meth:`take` hands them over."""

    def __init__(
        self, path: Path, on_request: Callable[[], None] | None = None, gate: Callable[[], str | None] | None = None
    ) -> None:
        """``on_request`` runs on the thread once a request is queued; ``gate`` (on the thread too, reading only)
        refuses a request at once when it says why: a chat in a turn cannot wake its thread to reply."""
        self.path = path
        self.on_request = on_request
        self.gate = gate
        self._queue: deque[SendRequest] = deque()
        self._lock = threading.Lock()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.bind(str(path))
            os.chmod(path, 0o600)
            self._sock.listen(8)
        except OSError:
            self._sock.close()
            raise
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._stop_r, self._stop_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._thread = threading.Thread(target=self._serve, name="agentlaunch-control", daemon=True)
        self._thread.start()

    def fileno(self) -> int:
        """Readable when a request waits for :meth:`take`."""
        return self._wake_r

    def pending(self) -> bool:
        with self._lock:
            return bool(self._queue)

    def take(self) -> list[SendRequest]:
        """The requests that arrived, in order (the wakeup pipe emptied)."""
        with contextlib.suppress(OSError):
            while os.read(self._wake_r, 512):
                pass
        with self._lock:
            taken = list(self._queue)
            self._queue.clear()
        return taken

    def close(self) -> None:
        """Stop taking requests; those not taken yet are told the session ended."""
        with contextlib.suppress(OSError):
            os.write(self._stop_w, b"x")
        self._thread.join(timeout=REQUEST_WAIT + 1)
        self._sock.close()
        with contextlib.suppress(OSError):
            self.path.unlink()
        for request in self.take():
            request.refuse("the session ended", "exited")
        for fd in (self._wake_r, self._wake_w, self._stop_r, self._stop_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    # -- the thread ---------------------------------------------------------------------
    def _serve(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self._sock.fileno(), self._stop_r], [], [])
            except (OSError, ValueError):
                return
            if self._stop_r in ready:
                return
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            self._take_one(conn)

    def _take_one(self, conn: socket.socket) -> None:
        parsed = read_request(conn)
        if isinstance(parsed, str):
            SendRequest("", False, conn).refuse(parsed, None)
            return
        request = SendRequest(parsed[0], parsed[1], conn)
        why = self.gate() if self.gate is not None else None
        if why is not None:
            request.refuse(why, None)
            return
        with self._lock:
            full = len(self._queue) >= MAX_QUEUED
            if not full:
                self._queue.append(request)
        if full:
            request.refuse("too many prompts are waiting for this session", None)
            return
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        if self.on_request is not None:
            self.on_request()


def read_request(conn: socket.socket) -> tuple[str, bool] | str:
    """One request line from ``conn``, within :data:`REQUEST_WAIT` seconds and :data:`MAX_REQUEST` bytes."""
    conn.settimeout(REQUEST_WAIT)
    data = bytearray()
    try:
        while b"\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
            if len(data) > MAX_REQUEST:
                return f"the request is over {MAX_REQUEST:,} bytes"
    except TimeoutError:
        return f"no request within {REQUEST_WAIT:g}s"
    except OSError as exc:
        return f"the request could not be read ({exc.strerror or exc})"
    line, _, rest = bytes(data).partition(b"\n")
    if rest.strip():
        return "one request per connection"
    return parse_request(line)


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

    def request(self, prompt: str, wait: bool) -> dict[str, Any] | None:
        """Send the request; the session's first reply (None: it hung up without one)."""
        self._sock.sendall(json.dumps({"prompt": prompt, "wait": wait}, ensure_ascii=False).encode("utf-8") + b"\n")
        return self.reply(REQUEST_WAIT * 2)

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
