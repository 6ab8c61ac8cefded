"""How a launch runs, chosen before it is wired: one headless turn, the line chat, or the CLI's own interface.

:func:`choose_mode` looks at what the command line asked for and where
agentlaunch runs (a prompt or none, ``--line``, ``TERM``, whether stdout is a
terminal, whether the provider has an interface to relay) and returns the
mode; the mode names its views (the sinks that show the launch), so
:func:`~agentlaunch.launch.build.build_launch` wires the right ones from the
start. :func:`run_mode` starts the launch, runs the mode, and closes the
launch however it ended; each mode's ``run`` returns its exit code or raises
the error that is one.
"""

from __future__ import annotations

import os
import sys
import termios
from typing import TYPE_CHECKING, Protocol

from agentlaunch import paths
from agentlaunch.datarecord import datarecord, replace
from agentlaunch.definitions.spec import load_agent
from agentlaunch.errors import AgentlaunchError, BudgetExceeded, Interrupted, UsageError
from agentlaunch.launch.turn import turn_failed
from agentlaunch.live.lazy_console import LazyConsole
from agentlaunch.live.view import HeadlessView, InteractiveView
from agentlaunch.providers import get_adapter
from agentlaunch.providers.descriptors import describe
from agentlaunch.visible import for_markup, visible

if TYPE_CHECKING:  # the ports for annotations only: a headless turn imports neither the chat nor the native room
    from agentlaunch.launch.budget_pause import HeadlessPaused
    from agentlaunch.launch.chat.chat import ChattingLaunch
    from agentlaunch.launch.native.native_launch import NativeLaunch
    from agentlaunch.launch.options import LaunchOptions
    from agentlaunch.launch.permissions import PermissionPrompt
    from agentlaunch.live.interface_view import InterfaceView
    from agentlaunch.sinks import Sink
    from agentlaunch.usage.meter import Meter

    class ModeLaunch(NativeLaunch, ChattingLaunch, HeadlessPaused, Protocol):
        """What a mode hands its launch to (the native run, the line chat, a headless launch's pause), and what
        :func:`run_mode` asks of it: to start, and to close with an exit status."""

        def start(self) -> None: ...
        def close(self, exit_status: int) -> int | None: ...


err = LazyConsole(stderr=True, highlight=False)  # rich only once something is said


@datarecord(frozen=True)
class RunRequest:
    """What the command line asked of ``agentlaunch run`` beyond the launch's options."""

    text: str | None  # the prompt of a headless turn; None: a chat or the interface
    line: bool = False  # --line: the line chat even where the interface could run
    as_json: bool = False
    quiet: bool = False
    timeout: float | None = None
    ask_fd: int | None = None  # headless: permission questions asked on this pipe (`agentlaunch acp`), not denied


class Mode(Protocol):
    options: LaunchOptions
    notice: str | None  # one line said before the launch starts (why the line chat, say)

    def views(self, meter: Meter) -> list[Sink]: ...

    def run(self, launch: ModeLaunch) -> int: ...


@datarecord
class Headless:
    """One turn for a script: the answer on stdout, the footer on stderr."""

    options: LaunchOptions
    request: RunRequest
    notice: str | None = None

    def views(self, meter: Meter) -> list[Sink]:
        return [HeadlessView(meter, json_lines=self.request.as_json, quiet=self.request.quiet)]

    def run(self, launch: ModeLaunch) -> int:
        assert self.request.text is not None
        text = self.request.text
        while True:
            launch.gates.check(launch)  # a budget spent before the turn (agents beside this one): paused here too
            if launch.paused is not None:
                # Paused: wait for the person, then go on in the same session (agentlaunch.launch.budget_pause).
                from agentlaunch.launch.budget_pause import wait_paused

                ended = wait_paused(launch)
                if ended is not None:
                    return 128 + ended
                if launch.paused is not None:  # the CLI ended while paused
                    raise launch.paused
            outcome = launch.run_turn(text, timeout=self.request.timeout, ask_permission=self._asker())
            if outcome.terminated is not None:
                return 128 + outcome.terminated
            if launch.stopped is not None:
                raise launch.stopped
            if launch.paused is None:
                if (error := turn_failed(outcome)) is not None:
                    raise error
                return 0
            from agentlaunch.launch.budget_pause import CONTINUE_PROMPT

            text = CONTINUE_PROMPT  # the turn the pause cut goes on once it is over

    def _asker(self) -> PermissionPrompt | None:
        """Who answers the turn's permission questions: no one (denied, as the CLI's own headless mode does), or
        the program at the other end of ``ask_fd`` (``agentlaunch acp``: the editor), one line each (y, a or n; the
        question itself goes to stderr). The pipe's end answers deny."""
        if self.request.ask_fd is None:
            return None
        from agentlaunch.launch.line_input import LineInput
        from agentlaunch.launch.permissions import PermissionPrompt

        return PermissionPrompt(LineInput(self.request.ask_fd, sys.stderr))


@datarecord
class Chat:
    """agentlaunch's own line chat (:mod:`agentlaunch.launch.chat.chat`)."""

    options: LaunchOptions
    request: RunRequest
    notice: str | None = None

    def views(self, meter: Meter) -> list[Sink]:
        return [InteractiveView(meter)]

    def run(self, launch: ModeLaunch) -> int:
        from agentlaunch.launch.chat.chat import LineChat  # a headless turn never needs it

        return LineChat(launch, self.request.timeout).run()


@datarecord
class Native:
    """The provider CLI's own interface, relayed (:mod:`agentlaunch.launch.native.native`)."""

    options: LaunchOptions
    request: RunRequest
    notice: str | None = None
    view: InterfaceView | None = None

    def views(self, meter: Meter) -> list[Sink]:
        from agentlaunch.live.interface_view import InterfaceView  # a headless turn never needs it

        self.view = InterfaceView(meter)
        return [self.view]

    def run(self, launch: ModeLaunch) -> int:
        from agentlaunch.launch.native.native import NativeRun

        announce(launch)
        code = NativeRun(launch, self.view).run()
        if launch.stopped is not None:
            raise launch.stopped  # a budget ended the interface
        return code


def choose_mode(options: LaunchOptions, request: RunRequest) -> Mode:
    """The mode ``request`` asks for, where it can run: with no interface to relay, the line chat, said why."""
    interactive = replace(options, interactive=request.text is None, native=False)
    if options.fork is not None:
        return fork_mode(interactive, request)
    if request.text is not None:
        spec = load_agent(options.agents_dir, options.agent, paths.state_dir())
        line = describe(spec.provider)
        if (why := line.line_input.refusal(line.name, request.text, "(headless)")) is not None:
            raise UsageError(why)  # before anything starts: no session, no CLI
        return Headless(interactive, request)
    if request.line:
        return Chat(interactive, request)
    spec = load_agent(options.agents_dir, options.agent, paths.state_dir())  # the provider decides: a cached check
    why = line_chat_reason(spec.provider, get_adapter(spec.provider).has_interface)
    if why is not None:
        return Chat(interactive, request, f"{why}: agentlaunch's line chat instead (--line chooses it)")
    return Native(replace(interactive, native=True), request)


def fork_mode(options: LaunchOptions, request: RunRequest) -> Mode:
    """``run --fork ID``: the CLI's own interface, of a provider that can fork, or a usage error saying why not."""
    if request.text is not None or request.line:
        raise UsageError("--fork starts the CLI's own interface: no PROMPT, no --line")
    spec = load_agent(options.agents_dir, options.agent, paths.state_dir())
    describe(spec.provider).refuse_fork(spec.name)
    why = line_chat_reason(spec.provider, get_adapter(spec.provider).has_interface)
    if why is not None:
        raise UsageError(f"--fork starts {spec.provider}'s own interface, and {why}")
    return Native(replace(options, native=True), request)


def line_chat_reason(provider: str, has_interface: bool) -> str | None:
    """Why this terminal or provider gets the line chat rather than the CLI's own interface; None: it gets that."""
    if not has_interface:
        return f"the {provider} provider has no interface of its own"
    term = os.environ.get("TERM", "")
    if term in ("", "dumb"):
        return f"TERM is {term or 'not set'}, which cannot draw {provider}'s interface"
    if not sys.stdout.isatty():
        return f"stdout is not a terminal, so {provider}'s interface cannot be shown"
    return None


def run_mode(mode: Mode, launch: ModeLaunch) -> int:
    """Start ``launch``, run ``mode``, close the launch however it ended; the exit code (an error is raised, after)."""
    if mode.notice:
        err.print(f"[dim]{for_markup(mode.notice)}[/]", markup=True)
    saved = termios.tcgetattr(0) if sys.stdin.isatty() else None
    code = 0
    error: AgentlaunchError | None = None
    try:
        launch.start()
        code = mode.run(launch)
    except AgentlaunchError as exc:
        error = exc
    except KeyboardInterrupt:  # Ctrl-C outside the loop (starting, between a turn and the next prompt)
        error = Interrupted("interrupted")
    finally:
        if launch.signals.termination is not None and error is None:
            code = 128 + launch.signals.termination  # SIGTERM/SIGHUP while starting: recorded, ended here
        launch.close(int(error.exit_code) if error else code)
        if isinstance(error, BudgetExceeded) and launch.options.interactive:  # `send` and `stop` say what happened
            from agentlaunch.live.life import note_budget  # tmux and the store's readers: not on every launch

            note_budget(launch.spec.name, launch.session_id, error.message)
        if saved is not None:
            termios.tcsetattr(0, termios.TCSADRAIN, saved)
    if error is not None:
        raise error
    return code


def announce(launch: ModeLaunch) -> None:
    """One line before the CLI's interface takes the terminal: which agent, which session."""
    state = "resumed" if launch.resumed else "new"
    session = f"session {launch.session_id}" if launch.adapter.chooses_session_id or launch.resumed else "session"
    dim_line(
        f"{visible(launch.spec.display)} · {launch.spec.provider} · {state} {visible(session)} · "
        "agentlaunch status shows its meters"
    )
    for notice in launch.adapter.interface_notices(launch.placement_argv):
        dim_line(visible(notice))


def dim_line(text: str) -> None:
    """One dim line on stderr, written without rich (about 20 ms to import, before the CLI's interface starts);
    plain where stderr is no terminal or NO_COLOR is set."""
    color = sys.stderr.isatty() and "NO_COLOR" not in os.environ
    sys.stderr.write(f"\x1b[2m{text}\x1b[0m\n" if color else text + "\n")
    sys.stderr.flush()
