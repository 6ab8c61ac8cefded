"""The line chat (``agentlaunch run AGENT --line``): a ``›`` prompt, one turn per line, on the launch's one loop.

At the prompt the loop waits on the person's terminal (canonical mode: the
kernel edits the line; :class:`~agentlaunch.launch.line_input.LineInput`), the
signal pipe, the CLI's pidfd and the socket ``agentlaunch send`` talks to
(:class:`~agentlaunch.launch.chat.chat_door.ChatDoor`), so whichever comes first is
taken: a line runs as a turn, Ctrl-C or Ctrl-D ends the chat (exit 0), a sent
prompt runs as the next turn (what the person had begun to type stays typed),
the CLI's exit ends the chat with its last words (exit 1), SIGTERM or SIGHUP
end it with 128 + the signal. Permission questions are asked on the turn's
loop (:class:`~agentlaunch.launch.permissions.PermissionPrompt`).
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING, Protocol

from agentlaunch.errors import AgentlaunchError, ExitCode
from agentlaunch.launch.chat.chat_door import ChatDoor
from agentlaunch.launch.control import SendRequest
from agentlaunch.launch.control_door import ControlledLaunch, launch_busy
from agentlaunch.launch.line_input import LineInput
from agentlaunch.launch.permissions import PermissionPrompt
from agentlaunch.launch.signals import ENDING
from agentlaunch.launch.tool_gates import GatedLaunch
from agentlaunch.launch.transport import window_size
from agentlaunch.launch.turn import TurnOutcome, turn_failed
from agentlaunch.launch.turn_answer import MeterTotals
from agentlaunch.live.lazy_console import LazyConsole
from agentlaunch.visible import for_markup, visible

if TYPE_CHECKING:
    from agentlaunch.launch.loop import Loop
    from agentlaunch.launch.permissions import AskPermission
    from agentlaunch.launch.signals import Signals
    from agentlaunch.launch.tool_gates import ToolGates
    from agentlaunch.launch.turn import ChildLike
    from agentlaunch.providers.base import Adapter
    from agentlaunch.sinks import Sink

err = LazyConsole(stderr=True, highlight=False)
PROMPT = "› "

LINE, END, SENT, CLI_EXITED, TERMINATED = "line", "end", "sent", "cli exited", "terminated"


class ChattingLaunch(ControlledLaunch, GatedLaunch, Protocol):
    """What the line chat reads of the launch (its CLI, loop, signals, provider, sinks, budget gates) and asks of it:
    a turn, and the orphans reaped when SIGCHLD comes."""

    @property
    def loop(self) -> Loop: ...
    @property
    def signals(self) -> Signals: ...
    @property
    def child(self) -> ChildLike | None: ...
    @property
    def persistent(self) -> bool: ...
    @property
    def adapter(self) -> Adapter: ...
    @property
    def sinks(self) -> list[Sink]: ...
    @property
    def gates(self) -> ToolGates: ...

    def run_turn(
        self, prompt: str, *, timeout: float | None = None, ask_permission: AskPermission | PermissionPrompt | None = None
    ) -> TurnOutcome: ...
    def on_child_signal(self) -> None: ...


class ChatPrompt:
    """One wait at the chat's prompt, on the launch's loop, for whichever comes first."""

    def __init__(self, launch: ChattingLaunch, person: LineInput, door: ChatDoor) -> None:
        self.launch, self.person, self.door = launch, person, door
        self.result: tuple[str, bytes | int | None] | None = None

    @property
    def _watches_cli(self) -> bool:
        """A CLI that lives for the session: its exit at the prompt ends the chat (a per-turn one is not there)."""
        child = self.launch.child
        return self.launch.persistent and child is not None and child.pid > 0

    def wait(self) -> tuple[str, bytes | int | None]:
        """(LINE, the line's bytes), (END, None), (SENT, None), (CLI_EXITED, None) or (TERMINATED, signal)."""
        launch, loop = self.launch, self.launch.loop
        signals, child = launch.signals, launch.child
        if signals.termination is not None:
            return TERMINATED, signals.termination
        if self._watches_cli and child is not None and child.poll() is not None:
            return CLI_EXITED, None  # it ended before the prompt came up
        if self.door.pending():
            return SENT, None
        self.result = None
        self.person.write(PROMPT)
        self.person.next_line(loop, self._on_line)
        pidfd = child.pidfd if self._watches_cli and child is not None else None
        readers = [fd for fd in (signals.fd, pidfd) if fd is not None]
        if signals.fd is not None:
            loop.add_reader(signals.fd, self._on_signals)
        if pidfd is not None:
            loop.add_reader(pidfd, lambda: self._end(CLI_EXITED))
        self.door.on_arrival = lambda: self._end(SENT, newline=True)
        try:
            with signals.turn():  # every signal is recorded, and read here from the pipe
                self._on_signals()
                if self.result is None:
                    loop.run()
        finally:
            self.door.on_arrival = None
            self.person.cancel()
            for fd in readers:
                loop.remove_reader(fd)
        assert self.result is not None
        return self.result

    def _end(self, kind: str, value: bytes | int | None = None, *, newline: bool = False) -> None:
        if self.result is not None:
            return
        if newline:
            self.person.write("\n")  # what follows starts on a line of its own, not after the prompt
        self.result = (kind, value)
        self.launch.loop.stop()

    def _on_line(self, line: bytes | None) -> None:
        if line is None:
            self._end(END, newline=True)  # Ctrl-D
        else:
            self._end(LINE, line)

    def _on_signals(self) -> None:
        launch = self.launch
        for sig in launch.signals.take():
            if sig == signal.SIGINT:
                self._end(END, newline=True)
            elif sig in ENDING:
                self._end(TERMINATED, sig)
            elif sig == signal.SIGWINCH and launch.child is not None:
                launch.child.resize(*window_size())
            elif sig == signal.SIGCHLD:
                child = launch.child
                if self._watches_cli and child is not None and child.pidfd is None and child.poll() is not None:
                    self._end(CLI_EXITED)
                launch.on_child_signal()


class LineChat:
    """The line chat of one launch; :meth:`run` is its exit code."""

    def __init__(self, launch: ChattingLaunch, timeout: float | None, person: LineInput | None = None) -> None:
        self.launch, self.timeout = launch, timeout
        self.person = person or LineInput()
        self.permissions = PermissionPrompt(self.person)

    def run(self) -> int:
        launch = self.launch
        state = "resumed" if launch.resumed else "new"
        model = " · " + launch.spec.model if launch.spec.model else ""
        err.print(
            f"[bold]{launch.spec.display}[/] · {launch.spec.provider}{model} · {state} session {launch.session_id}",
            markup=True,
            highlight=False,
        )
        err.print("[dim]Enter sends · Ctrl-C interrupts a turn · Ctrl-C at the prompt or Ctrl-D ends the session[/]", markup=True)
        with ChatDoor(launch, launch.sinks) as door:
            prompt = ChatPrompt(launch, self.person, door)
            while True:
                for request in door.take():
                    if (code := self.sent_turn(request, door)) is not None:
                        return code
                kind, value = prompt.wait()
                if kind == END:
                    return 0
                if kind == TERMINATED:
                    assert isinstance(value, int)
                    return 128 + value
                if kind == CLI_EXITED:
                    return self.report_cli_exit()
                if kind == LINE and isinstance(value, bytes) and (code := self.typed_turn(value)) is not None:
                    return code

    def typed_turn(self, raw: bytes) -> int | None:
        """A line the person typed, as one turn; the chat's exit code when the turn ended the session."""
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            err.print("[yellow]that line was not valid UTF-8; not sent[/]", markup=True)
            return None
        if not line.strip():
            return None
        self.launch.gates.check(self.launch)  # a budget spent meanwhile: paused (or stopped) before the turn
        if self.launch.paused is not None:
            err.print(f"[yellow]{for_markup(launch_busy(self.launch) or '')}; not sent[/]", markup=True, highlight=False)
            return None
        outcome = self.launch.run_turn(line, timeout=self.timeout, ask_permission=self.permissions)
        return after_turn(self.launch, outcome)

    def sent_turn(self, request: SendRequest, door: ChatDoor) -> int | None:
        """A prompt from agentlaunch send, as one turn of the chat; its answer and exit code go back with --wait."""
        launch = self.launch
        cli = launch.adapter.descriptor
        if request.command and not cli.line_input.runs_commands:
            request.refuse(
                f"{cli.name} runs no slash command in the line chat (the text would reach the model); send it without --command",
                launch.state,
                bad_input=True,
            )
            return None
        hint = "put a word first, or send a slash command with --command"
        why = None if request.command else cli.line_input.refusal(cli.name, request.prompt, "in the line chat", hint)
        if why is not None:
            request.refuse(why, launch.state, bad_input=True)
            return None
        launch.gates.check(launch)  # a budget spent meanwhile: paused (or stopped) before the turn
        if why := launch_busy(launch):
            request.refuse(why, launch.state)
            return None
        err.print(f"› {for_markup(visible(request.prompt))} [dim](from agentlaunch send)[/]", markup=True, highlight=False)
        request.accept(launch.session_id)
        before = MeterTotals.of(launch.meter)
        try:
            outcome = launch.run_turn(request.prompt, timeout=self.timeout, ask_permission=self.permissions)
        except AgentlaunchError as exc:  # the turn timed out, or the session was stopped
            usage, cost = before.since(launch.meter)
            request.answer(exit_code=int(exc.exit_code), answer=door.answer.text, error=exc.message, usage=usage, cost_usd=cost)
            raise
        usage, cost = before.since(launch.meter)
        failure = launch.stopped or turn_failed(outcome)
        code = 128 + outcome.terminated if outcome.terminated is not None else (int(failure.exit_code) if failure else 0)
        error = failure.message if failure else None
        request.answer(exit_code=code, answer=door.answer.text, error=error, usage=usage, cost_usd=cost)
        return after_turn(launch, outcome)

    def report_cli_exit(self) -> int:
        """Say that the CLI ended at the prompt, with the last lines it printed, and end the chat (exit 1)."""
        child = self.launch.child
        assert child is not None
        said = [line.strip() for line in child.read_available() if isinstance(line, str) and line.strip()]
        self.person.write("\n")
        err.print(
            f"[bold red]error:[/] the provider CLI exited (code {child.poll()}) while waiting for you; the session ended",
            markup=True,
            highlight=False,
            soft_wrap=True,
        )
        for line in said[-5:]:
            err.print(f"  {for_markup(visible(line))}", markup=True, highlight=False, soft_wrap=True)
        return int(ExitCode.TURN_FAILED)


def after_turn(launch: ChattingLaunch, outcome: TurnOutcome) -> int | None:
    """What the chat says after a turn; the chat's exit code when the turn ended the session, else None."""
    if launch.stopped is not None:
        raise launch.stopped  # a budget ended the session
    if outcome.terminated is not None:
        return 128 + outcome.terminated
    if outcome.end is None and not launch.persistent:
        # One process per turn: its end is the turn's, not the session's.
        if outcome.interrupted:
            err.print("[dim](turn interrupted; the session goes on)[/]", markup=True)
        else:
            failure = turn_failed(outcome)
            said = for_markup(failure.message) if failure else ""
            err.print(f"[bold red]turn failed:[/] {said}", markup=True, highlight=False)
        return None
    if outcome.end is None and not outcome.interrupted:
        err.print(
            f"[bold red]error:[/] the provider CLI exited (code {outcome.exit_code}); the session ended. "
            f"Resume it with: agentlaunch run {launch.spec.name} -r {launch.session_id}",
            markup=True,
        )
        return int(ExitCode.TURN_FAILED)
    if outcome.end is None:
        return int(ExitCode.INTERRUPTED)
    if outcome.interrupted:
        err.print("[dim](turn interrupted; the session goes on)[/]", markup=True)
    elif outcome.end.is_error:
        err.print(f"[bold red]turn failed:[/] {for_markup(outcome.end.error or '')}", markup=True, highlight=False)
    return None
