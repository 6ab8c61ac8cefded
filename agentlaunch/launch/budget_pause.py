"""A budget's pause (``on_spent: pause``): how a paused launch learns that it may go on.

:meth:`BudgetPause.pause` (the launch's ``pause``, asked by its budget guard) interrupts the running turn and keeps the
CLI and its session; the launch is ``paused`` (reason ``budget``) until one of two things:

- the person raises the limit: while paused, the launch looks at its agent.yaml and the global
  config.yaml once every :data:`WATCH_EVERY` seconds on its own loop (two ``stat`` calls; no thread, no
  inotify descriptor), and when either file changed it reads the limits again; none of them spent, it
  resumes. A file that no longer loads keeps the pause, said once per change;
- the person confirms (``agentlaunch resume-budget AGENT`` through the control socket, or the deck's key):
  it resumes at once. With a limit still spent, the budget guard lets the calls of one more turn go
  (:meth:`~agentlaunch.usage.budget.BudgetGuard.confirm`) and pauses again at its first check after that
  turn's end.

Cheap by measure: ``bench/bench_budget_pause.py`` times one look (the two ``stat`` calls).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from agentlaunch.errors import AgentlaunchError
from agentlaunch.sinks import LaunchView

if TYPE_CHECKING:
    from agentlaunch.launch.control_door import ControlledLaunch
    from agentlaunch.launch.loop import Loop
    from agentlaunch.launch.options import LaunchOptions
    from agentlaunch.launch.signals import Signals
    from agentlaunch.launch.tool_gates import ToolGates
    from agentlaunch.launch.turn import ChildLike
    from agentlaunch.sinks import Cancellable

PAUSED_BY = "budget"
"""The ``state_reason`` of a launch a budget paused: ``status`` shows ``paused: budget``."""
WATCH_EVERY = 1.0
"""Seconds between two looks at agent.yaml and config.yaml while paused."""
CONTINUE_PROMPT = (
    "(agentlaunch: your turn was paused because a budget was spent; the person has resumed you. Continue where you left off.)"
)
"""What a headless launch sends, in the same session, once its pause is over: the interrupted turn goes on."""

Stamp = tuple[tuple[int, int, int] | None, ...]


def stamp_of(paths: tuple[Path, ...]) -> Stamp:
    """What a change of each file changes (its mtime, size and inode); None for a file that is not there."""
    out: list[tuple[int, int, int] | None] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            out.append(None)
        else:
            out.append((st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(out)


class PausedLaunch(LaunchView, Protocol):
    """What a pause reads of the launch beyond what a sink sees (what was asked, its budget's guard) and asks of it
    (a state)."""

    @property
    def options(self) -> LaunchOptions: ...
    @property
    def gates(self) -> ToolGates: ...

    def set_state(self, state: str, *, always: bool = False, reason: str | None = None) -> None: ...


class BudgetPause:
    """One launch's pause: the watch of its two budget files, and the ways out (:meth:`raised`, :meth:`confirm`).

    It holds whether the launch is paused (:attr:`paused`), set only by :meth:`pause` and :meth:`resume`."""

    def __init__(self, launch: PausedLaunch) -> None:
        self.launch = launch
        self.paused: AgentlaunchError | None = None
        """The error the session is paused with (a budget's ``on_spent: pause``), else None."""
        self._timer: Cancellable | None = None
        self._seen: Stamp = ()
        self.on_end: Callable[[], None] | None = None
        """Called once the pause is over (a headless launch's wait ends)."""

    def files(self) -> tuple[Path, ...]:
        from agentlaunch.definitions.settings import settings_path

        return (self.launch.spec.agent_dir / "agent.yaml", settings_path())

    def how_to_resume(self) -> str:
        name = self.launch.spec.name
        return f"paused, the session kept: raise the limit, or run agentlaunch resume-budget {name}"

    # -- pausing and resuming ---------------------------------------------------------------
    def pause(self, error: AgentlaunchError) -> None:
        """Pause the session with ``error``: the running turn is interrupted, the CLI and its session stay, and no
        new turn starts until :meth:`resume`."""
        launch = self.launch
        if self.paused is None and launch.stopped is None:
            self.paused = error
            launch.request_interrupt("pausing the turn: a budget is spent")
            launch.notice(f"{error.message}; {self.how_to_resume()}")
            launch.set_state("paused", reason=PAUSED_BY)
            self._seen = stamp_of(self.files())
            self._arm()

    def resume(self, how: str) -> None:
        """The pause is over (``how``: the limit raised, or the person confirmed): the session takes turns again."""
        launch = self.launch
        if self.paused is not None:
            self.paused = None
            self.end()
            launch.notice(f"budget: resumed the agent: {how}")
            launch.set_state("waiting", always=True)

    # -- the watch -----------------------------------------------------------------------
    def end(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.on_end is not None:
            self.on_end()

    def _arm(self) -> None:
        self._timer = self.launch.call_later(WATCH_EVERY, self._look)

    def _look(self) -> None:
        self._timer = None
        if self.paused is None:
            return
        stamp = stamp_of(self.files())
        if stamp != self._seen:
            self._seen = stamp
            still = self.raised()
            if still is None:
                self.resume("the limit was raised")
                return
            self.launch.notice(f"budget: still paused: {still}")
        self._arm()

    def raised(self) -> str | None:
        """Read the limits again: None when none is spent, else what still is (or why they cannot be read)."""
        from agentlaunch import paths
        from agentlaunch.definitions.settings import load_settings
        from agentlaunch.definitions.spec import load_agent
        from agentlaunch.usage.budget import limits_for

        launch, guard = self.launch, self.launch.gates.guard
        if guard is None:
            return None
        try:
            spec = load_agent(launch.spec.agents_dir, launch.spec.name, paths.state_dir())
            settings = load_settings()
        except AgentlaunchError as exc:
            return f"the budget cannot be read again ({exc.message})"
        spent = guard.relimit(limits_for(spec.budget, settings.budget, launch.options.budget_usd), launch)
        return None if spent is None else spent.spent

    # -- the person's confirmation ---------------------------------------------------------
    def confirm(self) -> tuple[bool, str]:
        """``agentlaunch resume-budget``: (resumed, what to tell the person)."""
        launch = self.launch
        name = launch.spec.name
        if launch.stopped is not None:
            return False, f"{name} is ending: {launch.stopped.message}"
        if self.paused is None:
            return False, f"{name} is not paused by a budget (it is {launch.state}): nothing to resume"
        guard = launch.gates.guard
        still = self.raised()
        if still is None:
            self.resume("the limit is no longer spent")
            return True, f"resumed {name}: its budget is no longer spent"
        if guard is not None:
            guard.confirm()
        self.resume("the person confirmed (one more turn over the limit)")
        return True, (
            f"resumed {name} for one more turn although {still}; it pauses again after that turn unless the limit is raised"
        )


if TYPE_CHECKING:  # a port for annotations only: control.py (the socket) is imported once a headless launch pauses

    class HeadlessPaused(ControlledLaunch, Protocol):
        """What a headless launch's wait reads and asks of it: its loop, signals and CLI, the pause itself."""

        @property
        def loop(self) -> Loop: ...
        @property
        def signals(self) -> Signals: ...
        @property
        def child(self) -> ChildLike | None: ...
        @property
        def persistent(self) -> bool: ...
        @property
        def budget_pause(self) -> BudgetPause: ...

        def on_child_signal(self) -> None: ...


def wait_paused(launch: HeadlessPaused) -> int | None:
    """A headless launch's pause: the loop runs (the watch, the control socket for ``resume-budget``) until the
    pause is over (None) or a signal ends the wait (SIGINT, SIGTERM, SIGHUP: its number)."""
    import shutil
    import signal

    from agentlaunch import runtime_dirs
    from agentlaunch.launch.control import SOCKET_NAME
    from agentlaunch.launch.control_door import close_control, launch_busy, open_control

    ending: list[int] = []
    loop, signals = launch.loop, launch.signals

    def on_signals() -> None:
        for sig in signals.take():
            if sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                ending.append(sig)
                loop.stop()
            elif sig == signal.SIGCHLD:
                launch.on_child_signal()

    runtime = runtime_dirs.make_for_launch()
    control = open_control(launch, runtime / SOCKET_NAME, "paused session", gate=lambda: launch_busy(launch))
    launch.budget_pause.on_end = loop.stop
    if signals.fd is not None:
        loop.add_reader(signals.fd, on_signals)
    child = launch.child
    pidfd = child.pidfd if launch.persistent and child is not None else None
    if pidfd is not None:
        loop.add_reader(pidfd, loop.stop)  # the CLI ended while paused: there is no session left to resume
    try:
        with signals.turn():
            on_signals()
            if not ending and launch.paused is not None:
                loop.run()
    finally:
        launch.budget_pause.on_end = None
        for fd in (signals.fd, pidfd):
            if fd is not None:
                loop.remove_reader(fd)
        if control is not None:
            close_control(launch, control)
        shutil.rmtree(runtime, ignore_errors=True)
    return ending[0] if ending else None
