"""One launch of an agent: its session's identity and state, its sinks, and its closing.

The launch is given its collaborators (the agent's spec, the session chosen
for it, the usage store, the pricer, the meter, a clock, a child factory, the
sinks, the signal router and the reaper); :func:`agentlaunch.launch.build.build_launch`
wires them as ``agentlaunch run`` does, and a test can pass a fake child and a
temporary store instead. The parts: how the CLI starts (:mod:`agentlaunch.launch.start`),
how a turn reaches it (the driver of its shape, :mod:`agentlaunch.launch.drivers`),
one turn around its loop (:mod:`agentlaunch.launch.turn_cycle`), what a call
costs (:mod:`agentlaunch.usage.call_meter`); whatever shows, stores or reports
events is a sink (:mod:`agentlaunch.sinks`).

The helpers get a narrow port of the launch (a Protocol in their own module: ``DrivenLaunch``, ``StartingLaunch``,
``TurningLaunch``, ``TakingLaunch``, ``WatchedLaunch``, ``PausedLaunch``, ``ControlledLaunch``, ``GatedLaunch``...),
never :class:`Launch`; the session's identity, turns and state are one
:class:`~agentlaunch.launch.session_state.SessionState` changed only through its methods (read through
:class:`~agentlaunch.launch.facts.LaunchFacts`), and the CLI, the early-started CLI and the socket only through
:class:`Launch`'s mutators (:meth:`~Launch.adopt`, :meth:`~Launch.take_prespawned`, :meth:`~Launch.release_child`,
:meth:`~Launch.name_control`...).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from agentlaunch.clock import Clock
from agentlaunch.definitions.deliver import release
from agentlaunch.definitions.spec import AgentSpec
from agentlaunch.errors import AgentlaunchError
from agentlaunch.events import (
    Event,
)
from agentlaunch.launch.budget_pause import PAUSED_BY, BudgetPause
from agentlaunch.launch.cli_output import CliOutput
from agentlaunch.launch.driver_choice import driver_for
from agentlaunch.launch.early import prespawn
from agentlaunch.launch.facts import LaunchFacts
from agentlaunch.launch.identity import SessionChoice, new_session
from agentlaunch.launch.intake import Intake
from agentlaunch.launch.liveness import Liveness
from agentlaunch.launch.loop import Loop, Timer
from agentlaunch.launch.options import LaunchOptions
from agentlaunch.launch.permissions import AskPermission, PermissionPrompt, Permissions
from agentlaunch.launch.reaper import Reaper
from agentlaunch.launch.resumed import resume_figures, say_held
from agentlaunch.launch.session_state import SessionState
from agentlaunch.launch.signals import Signals
from agentlaunch.launch.start import StartPlan, plan_launch, start_launch, start_turn
from agentlaunch.launch.tool_gates import ToolGates
from agentlaunch.launch.transport import Child, window_size
from agentlaunch.launch.turn import ChildLike, Turn, TurnOutcome, TurnResult
from agentlaunch.launch.turn_cycle import run_turn
from agentlaunch.providers.base import Adapter, Parser, ProviderState
from agentlaunch.sinks import (
    Notice,
    ProviderStateKept,
    SessionClosed,
    Sink,
    SinkEvent,
    StateChanged,
    fan_out,
)
from agentlaunch.usage.budget import BudgetGuard
from agentlaunch.usage.call_meter import CallMeter
from agentlaunch.usage.meter import Meter
from agentlaunch.usage.pricing import Pricer
from agentlaunch.usage.store import Store

ChildFactory = Callable[[Sequence[str], Mapping[str, str], Path, tuple[int, int]], ChildLike]


def spawn_child(argv: Sequence[str], env: Mapping[str, str], cwd: Path, size: tuple[int, int]) -> ChildLike:
    """The real child: the CLI on a PTY."""
    return Child(argv, env, cwd, size=size)


class Launch(LaunchFacts):
    """A session of one agent on its provider CLI: its identity, its state, its sinks, and its closing.

    The session is chosen before (:func:`~agentlaunch.launch.build.build_launch`
    reads the store; without ``session``, a new one), so the constructor reads
    nothing from disk. How the CLI starts is :func:`~agentlaunch.launch.start.plan_start`,
    how a turn reaches it the driver of its shape (:mod:`agentlaunch.launch.drivers`),
    and what a call costs the call meter (:mod:`agentlaunch.usage.call_meter`).
    """

    def __init__(
        self,
        options: LaunchOptions,
        *,
        spec: AgentSpec,
        adapter: Adapter,
        store: Store,
        pricer: Pricer,
        meter: Meter,
        sinks: Sequence[Sink],
        state_dir: Path,
        working_dir: Path,
        clock: Clock,
        session: SessionChoice | None = None,
        child_factory: ChildFactory = spawn_child,
        prespawned: prespawn.Prespawned | None = None,
        signals: Signals | None = None,
        reaper: Reaper | None = None,
    ) -> None:
        self.options, self.spec, self.adapter, self.store, self.pricer = options, spec, adapter, store, pricer
        self.liveness = Liveness(self, options.stall_timeout)  # stalled, retrying: first, so a state it restores is told
        self.meter, self.sinks, self.state_dir, self.working_dir = meter, [self.liveness, *sinks], state_dir, working_dir
        self.clock, self.child_factory, self.prespawned = clock, child_factory, prespawned
        self.signals, self.reaper = signals or Signals(), reaper or Reaper(subreaper=False)
        self.loop = Loop(clock)
        self.calls = CallMeter(meter, pricer, agent=spec.name, provider=spec.provider, model=spec.model)
        self.driver = driver_for(adapter, spec, native=options.native, chat=options.interactive)
        self.persistent = self.driver.persistent
        new_id = prespawned.session_id if prespawned else None
        self.session_state = SessionState(*(session or new_session(adapter, new_id)))
        """The session's identity, turns and state: changed only through its own methods."""
        self.child: ChildLike | None = None  # changed only by adopt, release_child and close
        self.parser: Parser = self.driver.parser(self.provider_state)
        self.plan: StartPlan | None = None  # how the CLI was started (set by :meth:`start`)
        self.output = CliOutput()
        self.permissions = Permissions(self.set_state)
        self.intake = Intake(self)
        self.running: Turn | None = None  # the turn under way (set only by :meth:`run_running`)
        self.ask_permission: AskPermission | PermissionPrompt | None = None
        """Who is asked the running turn's permission questions (None: they are denied; set only by :meth:`run_running`)."""
        self.stopped: AgentlaunchError | None = None
        """Set by :meth:`stop`: the session takes no new turn and ends with this error."""
        self.control_path: str | None = None
        """The socket ``agentlaunch send`` reaches this session through, while a chat or an interface runs."""
        self.gates = ToolGates(next((sink for sink in self.sinks if isinstance(sink, BudgetGuard)), None), self.calls)
        """The budget's hold on tools: asked again before each turn and each tool."""
        self.budget_pause = BudgetPause(self)  # a budget's on_spent: pause, and its way out
        self.pause = self.budget_pause.pause  # what the budget guard asks instead of stop (LaunchView.pause)

    # -- what sinks see ----------------------------------------------------------------
    @property
    def cli_pid(self) -> int | None:
        return self.child.pid if self.child is not None else None

    @property
    def paused(self) -> AgentlaunchError | None:
        """The error a budget's pause holds the session with (:mod:`agentlaunch.launch.budget_pause`), else None."""
        return self.budget_pause.paused

    def emit(self, event: SinkEvent) -> None:
        """``event`` to every sink."""
        fan_out(self.sinks, event, self)

    def notice(self, message: str) -> None:
        self.emit(Notice(message))

    def set_state(self, state: str, *, always: bool = False, reason: str | None = None, source: str = "agentlaunch") -> None:
        """starting, waiting, thinking, tool, asking, paused, exited; ``reason``: why, ``source``: who said it. A new
        question while asking is news (Codex's approval request follows its thread's status; a second permission)."""
        if self.paused is not None and state != "exited":  # the turn a pause cut ends meanwhile: still paused
            state, reason, source = "paused", PAUSED_BY, "agentlaunch"
        if self.session_state.change_state(state, reason, always=always, source=source):
            self.emit(StateChanged(state, reason, source))

    def keep_provider_state(self, state: ProviderState) -> None:
        """What the next turn (or a later launch) needs of the provider, kept and told to the sinks (the store)."""
        self.session_state.keep(state)
        self.emit(ProviderStateKept(state))

    def name_control(self, path: str | None) -> None:
        """The socket ``agentlaunch send`` reaches this session through (None: no longer); the status record names it."""
        self.control_path = path
        if path is not None:
            self.set_state(self.state, always=True)

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        """Call ``callback`` on the launch's loop in ``delay`` seconds (the next time it runs, when it does not now)."""
        return self.loop.call_later(delay, callback)

    def request_interrupt(self, reason: str) -> None:
        """Interrupt the running turn as Ctrl-C does (for a sink: a budget guard, say)."""
        if self.running is not None:
            self.running.interrupt(reason)

    def stop(self, error: AgentlaunchError) -> None:
        """End the session with ``error``: the running turn is interrupted and no new turn starts (a budget guard)."""
        if self.stopped is None:
            self.stopped = error
            self.request_interrupt("stopping the turn: a budget is spent")

    # -- start and stop -------------------------------------------------------------------
    def start(self) -> None:
        """Place the instructions, plan the CLI's start and (a persistent CLI, unless native) start it."""
        self.signals.install()
        self.signals.on_resize = lambda: self.child.resize(*window_size()) if self.child is not None else None
        self.set_state("starting", always=True)
        self.plan = plan = plan_launch(self)
        start_launch(self, plan)
        self.calls.warm_up()
        if self.resumed:
            resume_figures(self)
        say_held(self)  # a resumed or forked session's CLI may re-send a recorded prompt
        self.set_state("starting" if self.options.native else "waiting")  # an interface: until its CLI reports (native.py)

    def take_prespawned(self) -> prespawn.Prespawned | None:
        """The CLI the entry point started early, handed over once (to be adopted or discarded)."""
        pending, self.prespawned = self.prespawned, None
        return pending

    def adopt(self, child: ChildLike) -> None:
        """``child`` is the launch's CLI from now on (started early, or by a mode); what it starts is watched."""
        self.reaper.watch(child.pid)
        self.child = child

    def release_child(self) -> ChildLike:
        """The CLI, no longer the launch's (a per-turn CLI after its turn: the caller ends it)."""
        child, self.child = self.child, None
        assert child is not None
        return child

    def start_turn(self, argv: list[str], stdin: bytes, text: str) -> None:
        """A per-turn CLI's turn with ``argv`` (:func:`agentlaunch.launch.start.start_turn`)."""
        start_turn(self, argv, stdin, text)

    def close(self, exit_status: int) -> int | None:
        """End the CLI and everything it started, free the instructions file, record how the session ended."""
        code = None
        with self.signals.turn():  # nothing raises while closing; a SIGTERM now changes nothing
            prespawn.discard(self.prespawned)  # a launch that failed before adopting it
            self.prespawned = None
            doomed = self.reaper.leftovers()  # before the CLI goes: its descendants are still its own
            if self.child is not None:
                code = self.child.stop()
                self.child.close()
                self.child = None
            self.reaper.end_all(doomed)
            if self.plan is not None:
                with contextlib.suppress(AgentlaunchError):
                    release(self.plan.placement.path, self.state_dir)
            try:
                self.set_state("exited")
                self.emit(SessionClosed(exit_status))
            finally:
                self.store.close()
                self.loop.close()
        self.signals.uninstall()
        return code

    # -- one turn ----------------------------------------------------------------------
    def run_turn(
        self, prompt: str, *, timeout: float | None = None, ask_permission: AskPermission | PermissionPrompt | None = None
    ) -> TurnOutcome:
        """Send one user turn and run the loop until its end (:func:`agentlaunch.launch.turn_cycle.run_turn`)."""
        return run_turn(self, prompt, timeout=timeout, ask_permission=ask_permission)

    def run_running(self, turn: Turn, ask: AskPermission | PermissionPrompt | None) -> TurnResult:
        """Run ``turn`` as the turn under way (a sink's :meth:`request_interrupt` reaches it), ``ask`` asked its
        permission questions (None: they are denied)."""
        self.running, self.ask_permission = turn, ask
        try:
            return turn.run()
        finally:
            self.running = None

    def on_child_signal(self) -> None:
        """SIGCHLD came: collect the orphans that exited (the CLI itself stays)."""
        self.reaper.reap_orphans(keep=[self.child.pid] if self.child is not None else [])

    def last_words(self) -> tuple[str, ...]:
        """The CLI's last lines that were not events (those that say "error" first): why it ended, likely."""
        return self.output.last_words()

    def cold_cache_notice(self) -> str | None:
        """One line when a turn starts after the cache went cold (see :class:`~agentlaunch.usage.call_meter.CallMeter`)."""
        return self.calls.cold_cache_notice(self.clock.now())

    def handle(self, event: Event) -> None:
        """Meter and price one event, then hand it to the sinks (:mod:`agentlaunch.launch.intake`)."""
        self.intake.handle(event)
