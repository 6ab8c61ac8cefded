"""Prompts from scripts: the socket through which ``agentlaunch send`` hands a prompt to a running session.

A chat or a native interface binds one Unix stream socket (mode 0600, in its
private runtime folder) and names it in its status record (``control``).
``agentlaunch send`` connects, writes one JSON line ``{"prompt": ..., "wait":
bool, "command": bool}`` (``command`` may be left out: false) and reads JSON
lines back:

1. at once, ``{"ok": true, "session_id": ...}`` when the session took the
   prompt, or ``{"ok": false, "error": ..., "state": ...}`` when it cannot
   (it is asking, in a turn, ending; ``"retry": true`` when it is still
   starting and will take one soon; ``"bad_input": true`` when the text itself
   cannot be typed as a message there, a leading ``!`` say: ``send`` exits 2);
   A line ``{"resume_budget": true}`` instead asks a session a budget paused to go on
   (``agentlaunch resume-budget``): ``{"ok": true, "resumed": ...}`` or ``{"ok": false, "error": ...}``.
2. with ``wait``, once the turn is over, ``{"done": true, "exit_code": N,
   "answer": ..., "error": ..., "usage": {...}, "cost_usd": ...}``. A
   connection closed without it means the session ended first.

Taken or refused, never both: a client that gives up waiting for the first
reply shuts its writing end. The session looks at that end right before it
types a request (:meth:`SendRequest.cancelled`), in the same callback that
then writes the ``ok``, so either the client reads ``ok`` (typed, once) or
the connection ends without one (never typed).

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
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from agentlaunch.launch.loop import Loop, Timer

if TYPE_CHECKING:
    from agentlaunch.definitions.spec import AgentSpec
    from agentlaunch.errors import AgentlaunchError

SOCKET_NAME = "control.sock"
MAX_PROMPT = 1 << 20
"""The longest prompt, in UTF-8 bytes, a session takes from ``send``."""
MAX_REQUEST = MAX_PROMPT * 6 + 4096  # a JSON line: the prompt with every character escaped, and its fields
REQUEST_WAIT = 2.0  # seconds a client has to write its request once connected (the whole request, however it trickles)
FIRST_REPLY_WAIT = REQUEST_WAIT * 2  # seconds send waits for the session to take or refuse its request before cancelling
CANCEL_WAIT = 10.0  # seconds send then waits for the session to confirm: typed already, or dropped
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


class ResumeConfirm(Protocol):
    """A budget's pause, as far as ``resume-budget`` goes: (resumed, what to tell the person)."""

    def confirm(self) -> tuple[bool, str]: ...


class ControlledLaunch(Protocol):
    """What the socket reads of the launch (its agent, state, whether it is ending or paused, its loop) and asks of
    it: a notice, the socket named in its status record, a budget's pause confirmed."""

    @property
    def spec(self) -> AgentSpec: ...
    @property
    def state(self) -> str: ...
    @property
    def stopped(self) -> AgentlaunchError | None: ...
    @property
    def paused(self) -> AgentlaunchError | None: ...
    @property
    def loop(self) -> Loop: ...
    @property
    def budget_pause(self) -> ResumeConfirm: ...

    def notice(self, message: str) -> None: ...
    def name_control(self, path: str | None) -> None: ...


def busy_reason(agent: str, state: str, stopped: str | None = None) -> str | None:
    """Why a session in ``state`` cannot take a sent prompt, or None when it can (it is ``waiting``)."""
    if stopped is not None:
        return f"{agent} is ending: {stopped}"
    if state == "paused":
        return (f"{agent} is paused: its budget is spent; it takes no prompt until the limit is raised or "
                f"agentlaunch resume-budget {agent} confirms")  # fmt: skip
    if state == "waiting":
        return None
    if state == "asking":
        return f"{agent} is asking: a permission or a question waits for a person; answer it first"
    if state in ("thinking", "tool", "retrying"):
        return f"{agent} is in a turn ({state}); send again once it is waiting"
    if state == "stalled":
        return f"{agent} is stalled: its turn has heard nothing from the CLI for a long time; look at its pane"
    if state == "starting":
        return f"{agent} is still starting; send again in a few seconds"
    return f"{agent} is {state}"


def launch_busy(launch: ControlledLaunch, state: str | None = None) -> str | None:
    """:func:`busy_reason` for ``launch`` (in ``state``, when its own state says less than the caller knows)."""
    stopped = launch.stopped.message if launch.stopped is not None else None
    if launch.paused is not None and stopped is None:
        return f"{busy_reason(launch.spec.name, 'paused')} ({launch.paused.message.removeprefix('budget: ')})"
    return busy_reason(launch.spec.name, launch.state if state is None else state, stopped)


def open_control(launch: ControlledLaunch, path: Path, what: str, **server: Any) -> ControlServer | None:
    """Bind ``launch``'s socket at ``path`` on its loop and name it in its status record; None (and a notice) when it
    cannot be."""
    try:
        control = ControlServer(path, launch.loop, **server)
    except OSError as exc:
        launch.notice(f"agentlaunch send cannot reach this {what}: its socket could not be made ({exc})")
        return None
    control.on_resume = launch.budget_pause.confirm
    launch.name_control(str(control.path))  # the status record names the socket now
    return control


def close_control(launch: ControlledLaunch, control: ControlServer) -> None:
    """Stop taking prompts: the socket is gone, and the status record no longer names it."""
    launch.name_control(None)
    control.close()


def command_problem(text: str) -> str | None:
    """Why ``text`` is not a slash command to send with ``--command``, or None."""
    if not text.startswith("/") or len(text) < 2 or text[1].isspace():
        return "a command starts with / and its name (--command sends a slash command, such as /cost)"
    if "\n" in text:
        return "a command is one line"
    return None


class Parsed(NamedTuple):
    """One request line, read: the text, whether the client waits for the turn, whether it is a slash command."""

    prompt: str
    wait: bool
    command: bool = False
    resume_budget: bool = False


def parse_request(data: bytes) -> Parsed | str:
    """The prompt and the flags of one request line, or why it is not one (never raises)."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "the request is not a JSON line"
    if not isinstance(value, dict):
        return "the request is not a JSON object"
    if value.get("resume_budget") is True:
        return Parsed("", False, resume_budget=True)
    prompt, wait, command = value.get("prompt"), value.get("wait", False), value.get("command", False)
    if not isinstance(prompt, str):
        return "the request has no prompt string"
    if not isinstance(wait, bool):
        return "the request's wait is not true or false"
    if not isinstance(command, bool):
        return "the request's command is not true or false"
    problem = prompt_problem(prompt) or (command_problem(prompt) if command else None)
    return problem if problem is not None else Parsed(prompt, wait, command)


class SendRequest:
    """One accepted connection's prompt; the launch replies through it, on its loop (a reply never raises).

    A reply is written at once when the socket takes it (the usual case: a few hundred bytes); what the
    socket does not take waits for it on the loop, for :data:`REPLY_WAIT` seconds, so a client that does
    not read never holds up the launch.
    """

    def __init__(
        self, prompt: str, wait: bool, conn: socket.socket | None = None, loop: Loop | None = None, *,
        command: bool = False,
    ) -> None:  # fmt: skip
        self.prompt, self.wait, self.command = prompt, wait, command
        self.conn, self.loop = conn, loop
        self._out = bytearray()  # reply bytes the socket has not taken yet
        self._hang_up = False  # close once they are written
        self._deadline: Timer | None = None

    def __repr__(self) -> str:
        return f"SendRequest(prompt={self.prompt!r}, wait={self.wait!r}, command={self.command!r})"

    def cancelled(self) -> bool:
        """The client gave up (shut its writing end, or went away): the prompt must not be typed.

        Asked right before typing, in the callback that then accepts: a client that shut its end before this
        never hears ``ok``, one that shut it after reads the ``ok`` already on its way.
        """
        if self.conn is None:
            return self.loop is not None  # a request from a socket whose connection is gone; one made in-process stays
        try:
            data = self.conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return False  # nothing more from the client: it is still waiting
        except OSError:
            return True
        return not data  # end of file: it shut its end; more bytes after the request line are ignored

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

    def refuse(self, error: str, state: str | None, *, retry: bool = False, bad_input: bool = False) -> None:
        """The session cannot take the prompt now: say why (``retry``: it is starting, ask again soon;
        ``bad_input``: never, as it is written), and hang up."""
        extra = {**({"retry": True} if retry else {}), **({"bad_input": True} if bad_input else {})}
        self._send({"ok": False, "error": error, "state": state, **extra})
        self._end()

    def accept(self, session_id: str) -> None:
        """The prompt is on its way; without ``wait`` that is all the client hears."""
        self._send({"ok": True, "session_id": session_id})
        if not self.wait:
            self._end()

    def accept_resume(self, said: str) -> None:
        """A budget's pause is over (``said``: how), and hang up."""
        self._send({"ok": True, "resumed": said})
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
            self._done(f"the request could not be read ({exc.strerror or exc})", bad=False)
            return
        self.data += chunk
        if len(self.data) > MAX_REQUEST:
            self._done(f"the request is over {MAX_REQUEST:,} bytes")
        elif b"\n" in self.data or not chunk:  # a line, or the client's end of writing
            line, _, rest = bytes(self.data).partition(b"\n")
            self._done("one request per connection" if rest.strip() else parse_request(line))

    def _on_deadline(self) -> None:
        self._done(f"no request within {REQUEST_WAIT:g}s", bad=False)

    def _done(self, parsed: Parsed | str, *, bad: bool = True) -> None:
        """The request is read (or never will be: ``bad`` False, the client was too slow or went away)."""
        self.drop()
        self.server._received(self.conn, parsed, bad=bad)

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
        self.on_resume: Callable[[], tuple[bool, str]] | None = None
        """Answers a ``resume_budget`` request: (resumed, what to tell the person)."""
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
        """The requests that arrived, in order, without those whose client gave up meanwhile (they are hung up on).

        The caller types what it takes in the same callback, before the loop runs again: a request taken here was
        not cancelled when it was typed.
        """
        taken: list[SendRequest] = []
        while self._queue:
            request = self._queue.popleft()
            self._unwatch(request)
            if request.cancelled():
                request.close()
            else:
                taken.append(request)
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

    def _received(self, conn: socket.socket, parsed: Parsed | str, *, bad: bool = True) -> None:
        if isinstance(parsed, str):
            SendRequest("", False, conn, self.loop).refuse(parsed, None, bad_input=bad)
            return
        request = SendRequest(parsed.prompt, parsed.wait, conn, self.loop, command=parsed.command)
        self._requests.add(request)
        if parsed.resume_budget:
            resumed, said = self.on_resume() if self.on_resume is not None else (False, "this session has no budget")
            if resumed:
                request.accept_resume(said)
            else:
                request.refuse(said, None)
            return
        why = self.gate() if self.gate is not None else None
        if why is not None:
            request.refuse(why, None)
            return
        if len(self._queue) >= MAX_QUEUED:
            request.refuse("too many prompts are waiting for this session", None)
            return
        self._queue.append(request)
        # A client that gives up while its request waits here is heard at once: its place in the queue is freed.
        self.loop.add_reader(conn.fileno(), lambda: self._queued_readable(request))
        if self.on_request is not None:
            self.on_request()

    def _queued_readable(self, request: SendRequest) -> None:
        if not request.cancelled():
            with contextlib.suppress(OSError):  # bytes after the request line: dropped, so the loop does not spin
                if request.conn is not None:
                    request.conn.recv(65536, socket.MSG_DONTWAIT)
            return
        self._unwatch(request)
        with contextlib.suppress(ValueError):
            self._queue.remove(request)
        request.close()

    def _unwatch(self, request: SendRequest) -> None:
        if request.conn is not None:
            self.loop.remove_reader(request.conn.fileno())


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
