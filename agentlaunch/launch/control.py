"""Prompts from scripts: the socket through which ``agentlaunch send`` hands a prompt to a running session.

What is said on it is :mod:`agentlaunch.launch.control_request`; how a launch opens and names it,
:mod:`agentlaunch.launch.control_door`. The server lives on the launch's loop (:class:`~agentlaunch.launch.loop.Loop`):
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
from typing import Any

from agentlaunch.launch.control_request import MAX_PROMPT, REQUEST_WAIT, Parsed, parse_request
from agentlaunch.launch.loop import Loop, Timer
from agentlaunch.providers.native.source import Pending

SOCKET_NAME = "control.sock"
MAX_REQUEST = MAX_PROMPT * 6 + 4096  # a JSON line: the prompt with every character escaped, and its fields
REPLY_WAIT = 2.0  # seconds a reply may wait for a client that does not read
NO_QUESTIONS = {
    "ok": False,
    "no_question": True,
    "error": "this session's questions are answered in its own window (agentlaunch answer reaches a native interface)",
}
MAX_QUEUED = 16  # requests waiting for the launch to take them; more are refused at once


class SendRequest:
    """One accepted connection's prompt; the launch replies through it, on its loop (a reply never raises).

    A reply is written at once when the socket takes it (the usual case: a few hundred bytes); what the
    socket does not take waits for it on the loop, for :data:`REPLY_WAIT` seconds, so a client that does
    not read never holds up the launch.
    """

    def __init__(
        self,
        prompt: str,
        wait: bool,
        conn: socket.socket | None = None,
        loop: Loop | None = None,
        *,
        command: bool = False,
    ) -> None:
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

    def reply(self, message: dict[str, Any]) -> None:
        """One reply (a question, an answer's outcome), and hang up."""
        self._send(message)
        self._end()

    def accept_resume(self, said: str) -> None:
        """A budget's pause is over (``said``: how), and hang up."""
        self._send({"ok": True, "resumed": said})
        self._end()

    def answer(
        self,
        *,
        exit_code: int,
        answer: str,
        error: str | None = None,
        usage: dict[str, int] | None = None,
        cost_usd: float | None = None,
    ) -> None:
        """The turn is over: its answer and exit code (as a headless turn's), then hang up."""
        self._send({"done": True, "exit_code": exit_code, "answer": answer, "error": error, "usage": usage, "cost_usd": cost_usd})
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
        self,
        path: Path,
        loop: Loop,
        on_request: Callable[[], None] | None = None,
        gate: Callable[[], str | None] | None = None,
    ) -> None:
        """``on_request`` runs once a request is queued; ``gate`` refuses a request at once when it says why
        (a chat in a turn, say)."""
        self.path, self.loop = path, loop
        self.on_request = on_request
        self.gate = gate
        self.on_resume: Callable[[], tuple[bool, str]] | None = None
        """Answers a ``resume_budget`` request: (resumed, what to tell the person)."""
        self.on_question: Callable[[dict[str, Any]], dict[str, Any] | Pending[dict[str, Any]]] | None = None
        """Answers a ``question`` or ``answer`` request (:meth:`agentlaunch.launch.questions.OpenQuestions.handle`)."""
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
        if parsed.asked is not None:
            replied = self.on_question(parsed.asked) if self.on_question is not None else NO_QUESTIONS
            if isinstance(replied, Pending):
                replied.then(request.reply)  # a reply typed: said once the screen shows it submitted, or not
            else:
                request.reply(replied)
            return
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
