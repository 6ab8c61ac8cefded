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

The server lives on the launch's loop (:class:`~agentlaunch.launch.loop.Loop`):
the listening socket and each connection are readers, each connection with
its own deadline, so a request is bounded in size and time and a client that
never writes holds up neither the launch nor another client. A request read
whole is handed to the launch through a callback (the chat's prompt, the
interface's typing); replies are written without blocking, what a client does
not read waits for it on the loop for a bounded time.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import weakref
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentlaunch.launch.loop import Loop, Timer

if TYPE_CHECKING:
    from agentlaunch.launch.session import Launch

SOCKET_NAME = "control.sock"
MAX_PROMPT = 1 << 20
"""The longest prompt, in UTF-8 bytes, a session takes from ``send``."""
MAX_REQUEST = MAX_PROMPT * 6 + 4096  # a JSON line: the prompt with every character escaped, and its fields
REQUEST_WAIT = 2.0  # seconds a client has to write its request once connected
REPLY_WAIT = 2.0  # seconds a reply may wait for a client that does not read
MAX_QUEUED = 16  # requests waiting for the launch to take them; more are refused at once
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
    """Bind ``launch``'s socket at ``path`` on its loop and name it in its status record; None (and a notice) when it
    cannot be."""
    try:
        control = ControlServer(path, launch.loop, **server)
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


class SendRequest:
    """One accepted connection's prompt; the launch replies through it, on its loop (a reply never raises).

    A reply is written at once when the socket takes it (the usual case: a few hundred bytes); what the
    socket does not take waits for it on the loop, for :data:`REPLY_WAIT` seconds, so a client that does
    not read never holds up the launch.
    """

    def __init__(self, prompt: str, wait: bool, conn: socket.socket | None = None, loop: Loop | None = None) -> None:
        self.prompt, self.wait = prompt, wait
        self.conn, self.loop = conn, loop
        self._out = bytearray()  # reply bytes the socket has not taken yet
        self._hang_up = False  # close once they are written
        self._deadline: Timer | None = None

    def __repr__(self) -> str:
        return f"SendRequest(prompt={self.prompt!r}, wait={self.wait!r})"

    def _send(self, message: dict[str, Any]) -> None:
        if self.conn is None:
            return
        self._out += json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n"
        self._flush()

    def _flush(self) -> None:
        conn = self.conn
        if conn is None:
            return
        try:
            while self._out:
                sent = conn.send(self._out)
                del self._out[:sent]
        except BlockingIOError:
            self._await_writable()
            return
        except OSError:  # the client went away: the session goes on
            self.close()
            return
        self._stop_waiting()
        if self._hang_up:
            self.close()

    def _await_writable(self) -> None:
        if self.loop is None or self.conn is None:
            self.close()  # nowhere to wait: the reply is dropped rather than block
            return
        if self._deadline is None:
            self.loop.add_writer(self.conn.fileno(), self._flush)
            self._deadline = self.loop.call_later(REPLY_WAIT, self.close)

    def _stop_waiting(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
            if self.loop is not None and self.conn is not None:
                self.loop.remove_writer(self.conn.fileno())

    def finish(self) -> None:
        """Write what waits now, blocking for at most :data:`REPLY_WAIT` seconds (the session is closing)."""
        if self.conn is not None and self._out:
            self._stop_waiting()
            with contextlib.suppress(OSError):
                self.conn.settimeout(REPLY_WAIT)
                self.conn.sendall(self._out)
            self._out.clear()
            if self._hang_up:
                self.close()

    def _end(self) -> None:
        """Hang up once what is written has gone out."""
        self._hang_up = True
        if not self._out:
            self.close()

    def refuse(self, error: str, state: str | None, *, retry: bool = False) -> None:
        """The session cannot take the prompt now: say why (``retry``: it is starting, ask again soon), and hang up."""
        self._send({"ok": False, "error": error, "state": state, **({"retry": True} if retry else {})})
        self._end()

    def accept(self, session_id: str) -> None:
        """The prompt is on its way; without ``wait`` that is all the client hears."""
        self._send({"ok": True, "session_id": session_id})
        if not self.wait:
            self._end()

    def answer(
        self, *, exit_code: int, answer: str, error: str | None = None, usage: dict[str, int] | None = None,
        cost_usd: float | None = None,
    ) -> None:  # fmt: skip
        """The turn is over: its answer and exit code (as a headless turn's), then hang up."""
        self._send({"done": True, "exit_code": exit_code, "answer": answer, "error": error, "usage": usage,
                    "cost_usd": cost_usd})  # fmt: skip
        self._end()

    def close(self) -> None:
        """Hang up now (what is not written yet is dropped)."""
        self._stop_waiting()
        self._out.clear()
        if self.conn is not None:
            with contextlib.suppress(OSError):
                self.conn.close()
            self.conn = None


class _Incoming:
    """A connection whose request line is still being read: a loop reader with its own deadline."""

    def __init__(self, server: ControlServer, conn: socket.socket) -> None:
        self.server, self.conn = server, conn
        self.data = bytearray()
        conn.setblocking(False)
        server.loop.add_reader(conn.fileno(), self._on_readable)
        self.deadline = server.loop.call_later(REQUEST_WAIT, self._on_deadline)

    def _on_readable(self) -> None:
        try:
            chunk = self.conn.recv(65536)
        except BlockingIOError:
            return
        except OSError as exc:
            self._done(f"the request could not be read ({exc.strerror or exc})")
            return
        self.data += chunk
        if len(self.data) > MAX_REQUEST:
            self._done(f"the request is over {MAX_REQUEST:,} bytes")
        elif b"\n" in self.data or not chunk:  # a line, or the client's end of writing
            line, _, rest = bytes(self.data).partition(b"\n")
            self._done("one request per connection" if rest.strip() else parse_request(line))

    def _on_deadline(self) -> None:
        self._done(f"no request within {REQUEST_WAIT:g}s")

    def _done(self, parsed: tuple[str, bool] | str) -> None:
        self.drop()
        self.server._received(self.conn, parsed)

    def drop(self) -> None:
        """Stop reading (the connection itself is the caller's now)."""
        self.deadline.cancel()
        self.server.loop.remove_reader(self.conn.fileno())
        self.server._incoming.discard(self)


class ControlServer:
    """The bound socket at ``path``, served on the launch's loop; :meth:`take` hands the requests over.

    The listening socket and each connection are loop readers, each connection with its own deadline
    (:data:`REQUEST_WAIT`), as supervisor joins its sockets to its poll map: a client that never writes
    holds up neither the launch nor the next client.
    """

    def __init__(
        self, path: Path, loop: Loop, on_request: Callable[[], None] | None = None,
        gate: Callable[[], str | None] | None = None,
    ) -> None:  # fmt: skip
        """``on_request`` runs once a request is queued; ``gate`` refuses a request at once when it says why
        (a chat in a turn, say)."""
        self.path, self.loop = path, loop
        self.on_request = on_request
        self.gate = gate
        self._queue: deque[SendRequest] = deque()
        self._incoming: set[_Incoming] = set()
        self._requests: weakref.WeakSet[SendRequest] = weakref.WeakSet()  # to finish their replies at close
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.bind(str(path))
            os.chmod(path, 0o600)
            self._sock.listen(8)
            self._sock.setblocking(False)
        except OSError:
            self._sock.close()
            raise
        loop.add_reader(self._sock.fileno(), self._on_accept)

    def pending(self) -> bool:
        return bool(self._queue)

    def take(self) -> list[SendRequest]:
        """The requests that arrived, in order."""
        taken: list[SendRequest] = []
        while self._queue:
            taken.append(self._queue.popleft())
        return taken

    def close(self) -> None:
        """Stop taking requests; those not taken yet are told the session ended, those half read are hung up on."""
        self.loop.remove_reader(self._sock.fileno())
        self._sock.close()
        with contextlib.suppress(OSError):
            self.path.unlink()
        for incoming in list(self._incoming):
            incoming.drop()
            with contextlib.suppress(OSError):
                incoming.conn.close()
        for request in self.take():
            request.refuse("the session ended", "exited")
        for request in list(self._requests):
            request.finish()  # an answer its client has not read yet gets its last, bounded wait here

    # -- on the loop ------------------------------------------------------------------------
    def _on_accept(self) -> None:
        while True:  # every connection waiting, not one per wakeup
            try:
                conn, _ = self._sock.accept()
            except OSError:  # BlockingIOError: none left
                return
            self._incoming.add(_Incoming(self, conn))

    def _received(self, conn: socket.socket, parsed: tuple[str, bool] | str) -> None:
        if isinstance(parsed, str):
            SendRequest("", False, conn, self.loop).refuse(parsed, None)
            return
        request = SendRequest(parsed[0], parsed[1], conn, self.loop)
        self._requests.add(request)
        why = self.gate() if self.gate is not None else None
        if why is not None:
            request.refuse(why, None)
            return
        if len(self._queue) >= MAX_QUEUED:
            request.refuse("too many prompts are waiting for this session", None)
            return
        self._queue.append(request)
        if self.on_request is not None:
            self.on_request()


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
