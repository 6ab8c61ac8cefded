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
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from agentlaunch.clock import Clock
from agentlaunch.datarecord import datarecord
from agentlaunch.definitions.deliver import release
from agentlaunch.definitions.spec import AgentSpec
from agentlaunch.errors import AgentlaunchError, ProviderMissing
from agentlaunch.events import (
    CallUsage,
    Diagnostic,
    Event,
    PermissionRequest,
    SessionStarted,
    Text,
    TextDelta,
    ToolGate,
    ToolResult,
    ToolUse,
    Unknown,
)
from agentlaunch.launch import prespawn
from agentlaunch.launch.budget_pause import PAUSED_BY, BudgetPause
from agentlaunch.launch.cli_output import CliOutput
from agentlaunch.launch.drivers import driver_for
from agentlaunch.launch.identity import SessionChoice, new_session
from agentlaunch.launch.liveness import DEFAULT_STALL_TIMEOUT, Liveness
from agentlaunch.launch.loop import Loop, Timer
from agentlaunch.launch.permissions import AskPermission, PermissionPrompt, Permissions
from agentlaunch.launch.reaper import Reaper
from agentlaunch.launch.resumed import resume_figures, say_held
from agentlaunch.launch.signals import Signals
from agentlaunch.launch.start import StartPlan, start_launch
from agentlaunch.launch.tool_gates import ToolGates
from agentlaunch.launch.transport import Child, window_size
from agentlaunch.launch.turn import ChildLike, Turn, TurnOutcome
from agentlaunch.launch.turn_cycle import run_turn
from agentlaunch.providers.base import Adapter, Parser
from agentlaunch.sinks import (
    CompactionWarned,
    Notice,
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

DEFAULT_READY_TIMEOUT = 20.0
"""Seconds a native CLI may take to report that it is up before it counts as waiting on its own screen (``asking``):
below ``tmux up``'s default wait (30 s), so a CLI stopped on a dialog is reported, not "not started"."""

ChildFactory = Callable[[Sequence[str], Mapping[str, str], Path, tuple[int, int]], ChildLike]


def spawn_child(argv: Sequence[str], env: Mapping[str, str], cwd: Path, size: tuple[int, int]) -> ChildLike:
    """The real child: the CLI on a PTY."""
    return Child(argv, env, cwd, size=size)


@datarecord(frozen=True)
class LaunchOptions:
    agent: str
    agents_dir: Path
    templates_dir: Path | None = None
    working_dir: Path | None = None
    resume: str | None = None
    continue_last: bool = False
    fork: str | None = None  # --fork ID: a new session starting from that session's conversation (the CLI's interface)
    force: bool = False
    interactive: bool = False
    native: bool = False  # the CLI's own interface, relayed (agentlaunch.launch.native); else the line chat or headless
    plan_key: str | None = None  # names this launch's plan for the next launch's early start (prespawn)
    worktree: bool = False  # run in the agent's own git worktree (agent.yaml's worktree: true asks too)
    budget_usd: float | None = None  # --budget-usd: the session's USD limit for this launch
    ready_timeout: float = DEFAULT_READY_TIMEOUT  # seconds a native CLI may stay "starting" before it is "asking"
    stall_timeout: float | None = DEFAULT_STALL_TIMEOUT  # seconds a turn may go without a report before it is "stalled"


class Launch:
    """A session of one agent on its provider CLI: its identity, its state, its sinks, and its closing.

    The session is chosen before (:func:`~agentlaunch.launch.build.build_launch`
    reads the store; without ``session``, a new one), so the constructor reads
    nothing from disk. How the CLI starts is :func:`~agentlaunch.launch.start.plan_start`,
    how a turn reaches it the driver of its shape (:mod:`agentlaunch.launch.drivers`),
    and what a call costs the call meter (:mod:`agentlaunch.usage.call_meter`).
    """

    def __init__(
        self, options: LaunchOptions, *, spec: AgentSpec, adapter: Adapter, store: Store, pricer: Pricer, meter: Meter,
        sinks: Sequence[Sink], state_dir: Path, working_dir: Path, clock: Clock, session: SessionChoice | None = None,
        child_factory: ChildFactory = spawn_child, prespawned: prespawn.Prespawned | None = None,
        signals: Signals | None = None, reaper: Reaper | None = None,
    ) -> None:  # fmt: skip
        self.options, self.spec, self.adapter, self.store, self.pricer = options, spec, adapter, store, pricer
        self.liveness = Liveness(self, options.stall_timeout)  # stalled, retrying: first, so a state it restores is told
        self.meter, self.sinks, self.state_dir, self.working_dir = meter, [self.liveness, *sinks], state_dir, working_dir
        self.clock, self.child_factory, self.prespawned = clock, child_factory, prespawned
        self.signals, self.reaper = signals or Signals(), reaper or Reaper(subreaper=False)
        self.loop = Loop(clock)
        self.calls = CallMeter(meter, pricer, agent=spec.name, provider=spec.provider, model=spec.model)
        self.driver = driver_for(adapter, spec, native=options.native, chat=options.interactive)
        self.persistent = self.driver.persistent
        self.state = "starting"
        self.state_reason: str | None = None  # why, as told with the state (an asking CLI's question)
        new_id = prespawned.session_id if prespawned else None
        self.session_id, self.resumed, self.turns, self.provider_state, self.fork = session or new_session(adapter, new_id)
        self.startup_pending, self.first_prompt = not self.resumed and self.fork is None, ""  # not a fork's; turn_cycle
        self.child: ChildLike | None = None
        self.parser: Parser = self.driver.parser(self.provider_state)
        self.plan: StartPlan | None = None  # how the CLI was started (set by :meth:`start`)
        self.output = CliOutput()
        self.permissions = Permissions(self.set_state)
        self._session_seen = False
        self.running: Turn | None = None  # the turn under way
        self.ask_permission: AskPermission | PermissionPrompt | None = None
        """Who is asked the running turn's permission questions (None: they are denied)."""
        self.stopped: AgentlaunchError | None = None
        """Set by :meth:`stop`: the session takes no new turn and ends with this error."""
        self.control_path: str | None = None
        """The socket ``agentlaunch send`` reaches this session through, while a chat or an interface runs."""
        self.gates = ToolGates(next((sink for sink in self.sinks if isinstance(sink, BudgetGuard)), None))
        """The budget's hold on tools: asked again before each turn and each tool."""
        self.paused: AgentlaunchError | None = None  # a budget's on_spent: pause holds it (budget_pause.py)
        self.budget_pause = BudgetPause(self)
        self.pause = self.budget_pause.pause  # what the budget guard asks instead of stop (LaunchView.pause)

    # -- what sinks see ----------------------------------------------------------------
    @property
    def cli_pid(self) -> int | None:
        return self.child.pid if self.child is not None else None

    def emit(self, event: SinkEvent) -> None:
        """``event`` to every sink."""
        fan_out(self.sinks, event, self)

    def notice(self, message: str) -> None:
        self.emit(Notice(message))

    def set_state(self, state: str, *, always: bool = False, reason: str | None = None) -> None:
        """starting, waiting (for input), thinking, tool (running one), asking, paused, exited; ``reason``: why. A new
        question while asking is news (Codex's approval request follows its thread's status; a second permission)."""
        if self.paused is not None and state != "exited":  # the turn a pause cut ends meanwhile: still paused
            state, reason = "paused", PAUSED_BY
        if state != self.state or always or (state == "asking" and reason not in (None, self.state_reason)):
            self.state, self.state_reason = state, reason
            self.emit(StateChanged(state, reason))

    @property
    def env(self) -> dict[str, str]:
        """The CLI's environment (set by :meth:`start`)."""
        return self.plan.env if self.plan else {}

    @property
    def command(self) -> str | None:
        """The CLI's resolved path (set by :meth:`start`)."""
        return self.plan.command if self.plan else None

    @property
    def placement_argv(self) -> list[str]:
        """The arguments that carry or point at the instructions (set by :meth:`start`)."""
        return self.plan.placement_argv if self.plan else []

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
        start_launch(self)
        self.calls.warm_up()
        if self.resumed:
            resume_figures(self)
        say_held(self)  # a resumed or forked session's CLI may re-send a recorded prompt
        self.set_state("starting" if self.options.native else "waiting")  # an interface: until its CLI reports (native.py)

    def spawn(self, argv: list[str], stdin: bytes | None = None) -> ChildLike:
        """Start the CLI with ``argv``; a per-turn CLI reads ``stdin`` (its prompt, if any) and then sees EOF."""
        try:
            child = self.child_factory(argv, self.env, self.working_dir, window_size())
        except ProviderMissing as exc:
            raise ProviderMissing(exc.message, hint=self.adapter.install_hint) from None
        self.reaper.watch(child.pid)
        self.child = child
        if stdin is not None:
            if stdin:
                child.send_bytes(stdin)
            child.close_stdin(after_flush=True)
        return child

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
        """Meter and price one event, then hand it to the sinks."""
        if isinstance(event, ToolGate):
            self.gates.hold(event, self)
            return
        warning = self.calls.count(event)
        if isinstance(event, Diagnostic):
            self.output.keep(event.line)
        if isinstance(event, Unknown):
            if self.output.first_unknown(event.type):
                self.emit(event)
            return
        if isinstance(event, CallUsage):
            self.emit(self.calls.price(event, session_id=self.session_id, turn=self.turns, now=self.clock.now()))
        if isinstance(event, ToolUse):
            self.set_state("tool")
        elif isinstance(event, ToolResult | TextDelta | Text):
            self.set_state("thinking")
        self.emit(event)
        if isinstance(event, SessionStarted) and not self._session_seen:
            # The CLI confirmed the session (the recorder registers it now): a per-turn one's thread is known.
            self._session_seen = True
            self.driver.session_confirmed(self)
        if warning is not None:
            self.emit(CompactionWarned(warning))
        if isinstance(event, PermissionRequest):
            child = self.child  # the CLI that asked: a person's answer comes later, on the turn's loop
            assert child is not None
            self.permissions.decide(event, self.ask_permission, lambda d: self.driver.answer(child, event, d), self.running)
        self.gates.after(event, self)
