"""One turn on the launch's loop: the CLI's output, its exit, signals and deadlines, until the turn ends.

A turn ends when the CLI reports its end (a TurnEnd), when the CLI is gone
(its output ended, or the CLI itself exited: then its PTY is drained for
:data:`EXIT_DRAIN` seconds, because a helper it started may hold the PTY
open for ever), or when agentlaunch is told to stop (SIGTERM, SIGHUP).
Ctrl-C and ``--timeout`` interrupt the turn; a CLI that does not end it
within :data:`INTERRUPT_GRACE` seconds (or a second Ctrl-C) gets SIGKILL.
A per-turn CLI is also waited for after its TurnEnd, so that its files are
complete when the launch reads them.

A question to the person (a permission, :meth:`Turn.ask`) is one more
reader on the same loop: while the person decides, the CLI's output is read
and ``--timeout`` counts; Ctrl-C answers the question (as its default) instead
of interrupting the turn.

Everything here is a callback of :class:`~agentlaunch.launch.loop.Loop`;
nothing blocks and nothing polls.
"""

from __future__ import annotations

import signal
from collections import deque
from collections.abc import Callable
from typing import Protocol

from agentlaunch.datarecord import datarecord
from agentlaunch.errors import AgentlaunchError, Interrupted, TurnFailed
from agentlaunch.events import TurnEnd
from agentlaunch.launch.line_input import Question
from agentlaunch.launch.loop import Loop, Timer
from agentlaunch.launch.output_lines import Line, LongLineDropped
from agentlaunch.launch.signals import ENDING, Signals
from agentlaunch.launch.transport import window_size

INTERRUPT_GRACE = 10.0  # seconds a CLI gets to end a turn after an interrupt
EXIT_DRAIN = 0.5  # seconds of output still read after the CLI's exit (a helper may hold the PTY)
EXIT_WAIT = 10.0  # seconds a CLI gets to exit after its output ended (or a per-turn CLI after its turn)
KILL_WAIT = 3.0  # seconds between SIGTERM and SIGKILL for a CLI that does not exit


class ChildLike(Protocol):
    """What a turn needs of the CLI process (:class:`~agentlaunch.launch.transport.Child`, or a test's fake)."""

    master: int
    pidfd: int | None
    stdin_fd: int | None
    eof: bool

    @property
    def pid(self) -> int: ...

    @property
    def wants_write(self) -> bool: ...

    def read_available(self) -> list[Line]: ...

    def unread(self, items: list[Line]) -> None: ...

    def flush_stdin(self) -> None: ...

    def send_json(self, obj: object) -> None: ...

    def send_bytes(self, data: bytes) -> None: ...

    def close_stdin(self, *, after_flush: bool = False) -> None: ...

    def resize(self, cols: int, rows: int) -> None: ...

    def signal_group(self, sig: int) -> None: ...

    def poll(self) -> int | None: ...

    def stop(self, grace: float = 3.0) -> int: ...

    def close(self) -> None: ...


class TurnHost(Protocol):
    """What the turn hands back to the launch."""

    def on_line(self, line: str) -> TurnEnd | None:
        """Parse and handle one output line; the TurnEnd among its events, if any."""
        ...

    def notice(self, message: str) -> None: ...

    def interrupt(self) -> None:
        """Ask the CLI to end the turn (a control message, or SIGINT to a per-turn CLI's group)."""
        ...

    def on_child_signal(self) -> None:
        """SIGCHLD came: collect orphans that exited."""
        ...


@datarecord
class TurnResult:
    end: TurnEnd | None  # None: the turn ended without the CLI finishing it
    cli_gone: bool = False  # the CLI's output ended or the CLI exited
    interrupted: bool = False
    timed_out: bool = False
    terminated: int | None = None  # SIGTERM/SIGHUP ended it


class Turn:
    """The state of one turn while the loop runs it."""

    def __init__(
        self, loop: Loop, signals: Signals, child: ChildLike, host: TurnHost, *, persistent: bool, timeout: float | None
    ) -> None:
        self.loop, self.signals, self.child, self.host = loop, signals, child, host
        self.persistent = persistent
        self.timeout = timeout
        self.result = TurnResult(end=None)
        self._interrupted_at: float | None = None
        self._exited = False
        self._done = False
        self._timers: list[Timer] = []
        self._kill_timer: Timer | None = None
        self._drain_timer: Timer | None = None
        self._writer_fd: int | None = None  # stdin, while the loop waits to write more of it
        self._questions: deque[Question] = deque()  # asked of the person, the first one on screen
        self._asking = False  # the first question is on screen, its answer awaited

    # -- running ---------------------------------------------------------------------------
    def run(self) -> TurnResult:
        """Run the loop until the turn ends."""
        child, loop = self.child, self.loop
        loop.add_reader(child.master, self._on_output)
        if child.pidfd is not None:
            loop.add_reader(child.pidfd, self._on_exit)
        if self.signals.fd is not None:
            loop.add_reader(self.signals.fd, self._on_signals)
        if self.timeout is not None:
            self._timers.append(loop.call_later(self.timeout, self._on_timeout))
        try:
            self._want_write()
            self._on_signals()  # what came before the loop ran: a resize, a SIGTERM while starting
            if not self._done:
                self._on_output()  # lines read (and put back) after the previous turn's end
            if not self._done:
                loop.run()
        finally:
            for fd in (child.master, child.pidfd, self.signals.fd):
                if fd is not None:
                    loop.remove_reader(fd)
            if self._writer_fd is not None:
                loop.remove_writer(self._writer_fd)
            for timer in self._timers:
                timer.cancel()
            self._done = True
            self._drop_questions()
        return self.result

    def _finish(self) -> None:
        self._done = True
        self._drop_questions()
        self.loop.stop()

    def _after(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = self.loop.call_later(delay, callback)
        self._timers.append(timer)
        return timer

    # -- sources ---------------------------------------------------------------------------
    def _on_output(self) -> None:
        items = self.child.read_available()
        for i, item in enumerate(items):
            if self._done or self.result.end is not None:
                # After the turn's end: a persistent CLI's next lines belong to the next turn; a
                # per-turn CLI's are not used (its turn is counted), only read so that it can exit.
                if self.persistent:
                    self.child.unread(items[i:])
                break
            if isinstance(item, LongLineDropped):
                self.host.notice(f"dropped a provider output line of {item.size:,} bytes (too long to parse)")
                continue
            end = self.host.on_line(item)
            self._want_write()  # a permission answer may wait in the stdin queue
            if end is not None:
                self._on_turn_end(end)
        if self.child.eof:
            self.loop.remove_reader(self.child.master)  # a master at EOF stays readable: stop listening
            if not self._done:
                self._on_eof()

    def _on_turn_end(self, end: TurnEnd) -> None:
        self.result.end = end
        if self.persistent or self._exited:
            self._finish()
        else:
            self._await_exit()

    def _on_eof(self) -> None:
        if self.result.end is None:
            self.result.cli_gone = True
        if self._exited or self.child.poll() is not None:
            self._exited = True
            self._finish()
        else:
            self._await_exit()

    def _on_exit(self) -> None:
        """The CLI process exited (its pidfd is readable, or SIGCHLD and :meth:`poll` say so)."""
        if self._exited:
            return
        self._exited = True
        if self.child.pidfd is not None:
            self.loop.remove_reader(self.child.pidfd)
        self.child.poll()  # reap it now: its exit code is the turn's
        if self.persistent or self.result.end is None:
            self.result.cli_gone = True  # a persistent CLI's exit ends its session, whatever it printed
        if self.result.end is not None or self.child.eof:
            self._finish()
            return
        # Read what it printed last; a helper it started may hold the PTY open, so only briefly.
        self._drain_timer = self._after(EXIT_DRAIN, self._finish)
        self._on_output()

    def _await_exit(self) -> None:
        """The turn is over but the CLI still runs: give it time to exit, then make it."""
        if self._kill_timer is None:
            self._kill_timer = self._after(EXIT_WAIT, self._terminate_cli)

    def _terminate_cli(self) -> None:
        self.child.signal_group(signal.SIGTERM)
        self._kill_timer = self._after(KILL_WAIT, lambda: self.child.signal_group(signal.SIGKILL))

    def _want_write(self) -> None:
        """Listen for stdin's writability exactly while bytes wait for it (the fd may have been closed meanwhile)."""
        fd = self.child.stdin_fd if self.child.wants_write else None
        if fd == self._writer_fd:
            return
        if self._writer_fd is not None:
            self.loop.remove_writer(self._writer_fd)
        if fd is not None:
            self.loop.add_writer(fd, self._on_writable)
        self._writer_fd = fd

    def _on_writable(self) -> None:
        self.child.flush_stdin()
        self._want_write()

    # -- questions to the person ------------------------------------------------------------
    def ask(self, question: Question) -> None:
        """Put ``question`` to the person while the turn goes on; questions asked meanwhile wait their turn.

        The turn's loop reads the answer like any other source: the CLI's output is read and ``--timeout``
        counts while the person decides. A turn that has ended answers with the question's default.
        """
        if self._done:
            question.answered(question.default)
            return
        self._questions.append(question)
        self._next_question()

    def _next_question(self) -> None:
        if self._asking or not self._questions or self._done:
            return
        question = self._questions[0]
        self._asking = True
        question.input.write(question.prompt)
        question.input.next_line(self.loop, self._on_answer)

    def _on_answer(self, line: bytes | None) -> None:
        question = self._questions[0]
        self._asking = False
        if line is None:  # the end of input: as Ctrl-C
            question.input.write("\n")
            self._answer(question.default)
            return
        try:
            decision = question.parse(line.decode("utf-8"))
        except UnicodeDecodeError:
            decision = None
        if decision is None:
            self._next_question()  # not an answer: asked again
        else:
            self._answer(decision)

    def _answer(self, decision: str) -> None:
        question = self._questions.popleft()
        question.answered(decision)
        if not self._done:
            self._want_write()  # the answer may wait in the stdin queue
        self._next_question()

    def _dismiss(self) -> None:
        """The person pressed Ctrl-C at the question: its default answers it."""
        question = self._questions[0]
        question.input.cancel()
        question.input.write("\n")
        self._asking = False
        self._answer(question.default)

    def _drop_questions(self) -> None:
        """The turn is interrupted or over: every question still open gets its default (the CLI is not left waiting)."""
        if self._asking:
            self._questions[0].input.cancel()
            self._questions[0].input.write("\n")
            self._asking = False
        while self._questions:
            question = self._questions.popleft()
            question.answered(question.default)

    # -- signals and deadlines ------------------------------------------------------------
    def _on_signals(self) -> None:
        for sig in self.signals.take():
            if self._done:
                return
            if sig == signal.SIGINT and self._asking:
                self._dismiss()
            elif sig == signal.SIGINT:
                self.interrupt("interrupting the turn…")
            elif sig in ENDING:
                self.result.terminated = sig
                self._finish()
            elif sig == signal.SIGWINCH:
                self.child.resize(*window_size())
            elif sig == signal.SIGCHLD:
                if self.child.pidfd is None and self.child.poll() is not None:
                    self._on_exit()
                self.host.on_child_signal()

    def interrupt(self, notice: str | None) -> None:
        """Interrupt the turn (Ctrl-C, a sink's request); a second interrupt kills the CLI's group."""
        if self._done:
            return
        if self._interrupted_at is not None:
            self.child.signal_group(signal.SIGKILL)
            return
        self._interrupted_at = self.loop.clock.monotonic()
        self.result.interrupted = True
        self._drop_questions()
        if notice:
            self.host.notice(notice)
        self.host.interrupt()
        self._want_write()
        self._after(INTERRUPT_GRACE, lambda: self.child.signal_group(signal.SIGKILL))

    def _on_timeout(self) -> None:
        self.result.timed_out = True
        if self._interrupted_at is None:
            self.interrupt(None)


@datarecord
class TurnOutcome:
    end: TurnEnd | None  # None: the CLI ended without finishing the turn
    interrupted: bool = False
    exit_code: int | None = None
    last_output: tuple[str, ...] = ()  # the CLI's last non-JSON lines (why it exited)
    terminated: int | None = None  # SIGTERM or SIGHUP ended it: agentlaunch exits with 128 + this


def turn_failed(outcome: TurnOutcome) -> AgentlaunchError | None:
    """The error a headless run exits with, or None when the turn succeeded."""
    if outcome.end is None:
        if outcome.interrupted:
            return Interrupted("interrupted; the session stays resumable")
        said = "; it said: " + " / ".join(outcome.last_output) if outcome.last_output else ""
        return TurnFailed(f"the provider CLI exited (code {outcome.exit_code}) before finishing the turn{said}")
    if outcome.interrupted:
        return Interrupted("interrupted; the session stays resumable")
    if outcome.end.is_error:
        return TurnFailed(f"the turn failed: {outcome.end.error or 'the provider reported an error'}")
    return None
