"""One launch of an agent: deliver its instructions, start its CLI, run turns, hand every event to the sinks.

The launch is given its collaborators (the agent's spec, the usage store, the
pricer, the meter, a clock, a child factory, the sinks, the loop, the signal
router and the reaper); :func:`agentlaunch.launch.build.build_launch` wires
them as ``agentlaunch run`` does, and a test can pass a fake child and a
temporary store instead. The launch keeps the session's identity and state
machine, prices each call, and answers the CLI's questions; the turn's loop
is :class:`~agentlaunch.launch.turn.Turn`, and whatever shows, stores or
reports events is a sink (:mod:`agentlaunch.sinks`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from agentlaunch.clock import Clock
from agentlaunch.definitions.deliver import release
from agentlaunch.definitions.fingerprint import prefix_notice, record_prefix
from agentlaunch.definitions.render import RunFacts, render_startup
from agentlaunch.definitions.spec import AgentSpec
from agentlaunch.errors import AgentlaunchError, ProviderMissing, TurnTimeout
from agentlaunch.events import (
    CallUsage,
    Diagnostic,
    Event,
    PermissionRequest,
    SessionStarted,
    Text,
    TextDelta,
    ToolResult,
    ToolUse,
    TurnEnd,
    Unknown,
)
from agentlaunch.launch import prespawn
from agentlaunch.launch.identity import choose_session
from agentlaunch.launch.loop import Loop
from agentlaunch.launch.permissions import AskPermission, Permissions
from agentlaunch.launch.placement import place_instructions, with_placement_argv
from agentlaunch.launch.reaper import Reaper
from agentlaunch.launch.signals import Signals
from agentlaunch.launch.transport import Child, window_size
from agentlaunch.launch.turn import ChildLike, Turn, TurnOutcome
from agentlaunch.processes import resolve_command
from agentlaunch.providers.base import Adapter, Parser, PersistentAdapter, PerTurnAdapter, child_env
from agentlaunch.sinks import (
    CompactionWarned,
    Notice,
    PrefixChanged,
    PromptSent,
    ProviderStateKept,
    SessionClosed,
    Sink,
    SinkEvent,
    StateChanged,
    TurnDone,
    fan_out,
)
from agentlaunch.usage.call_meter import CallMeter
from agentlaunch.usage.meter import Meter
from agentlaunch.usage.pricing import Pricer
from agentlaunch.usage.store import Store

ChildFactory = Callable[[Sequence[str], Mapping[str, str], Path, tuple[int, int]], ChildLike]


def spawn_child(argv: Sequence[str], env: Mapping[str, str], cwd: Path, size: tuple[int, int]) -> ChildLike:
    """The real child: the CLI on a PTY."""
    return Child(argv, env, cwd, size=size)


@dataclass(frozen=True)
class LaunchOptions:
    agent: str
    agents_dir: Path
    templates_dir: Path | None = None
    working_dir: Path | None = None
    resume: str | None = None
    continue_last: bool = False
    force: bool = False
    interactive: bool = False
    native: bool = False  # the CLI's own interface, relayed (agentlaunch.launch.native); else the line chat or headless
    plan_key: str | None = None  # names this launch's plan for the next launch's early start (prespawn)
    worktree: bool = False  # run in the agent's own git worktree (agent.yaml's worktree: true asks too)
    budget_usd: float | None = None  # --budget-usd: the session's USD limit for this launch


class Launch:
    """A session of one agent on its provider CLI."""

    def __init__(
        self, options: LaunchOptions, *, spec: AgentSpec, adapter: Adapter, store: Store, pricer: Pricer, meter: Meter,
        sinks: Sequence[Sink], state_dir: Path, working_dir: Path, clock: Clock, child_factory: ChildFactory = spawn_child,
        prespawned: prespawn.Prespawned | None = None, signals: Signals | None = None, reaper: Reaper | None = None,
    ) -> None:  # fmt: skip
        self.options, self.spec, self.adapter, self.store, self.pricer = options, spec, adapter, store, pricer
        self.meter, self.sinks, self.state_dir, self.working_dir = meter, list(sinks), state_dir, working_dir
        self.clock, self.child_factory, self.prespawned = clock, child_factory, prespawned
        self.signals = signals or Signals()
        self.reaper = reaper or Reaper(subreaper=False)
        self.loop = Loop(clock)
        self.calls = CallMeter(meter, pricer, agent=spec.name, provider=spec.provider, model=spec.model)
        self.persistent = bool(getattr(adapter, "persistent", False))
        self.state = "starting"
        self.session_id, self.resumed, self.turns, self.provider_state = choose_session(
            spec, adapter, store, working_dir, resume=options.resume, continue_last=options.continue_last,
            new_id=prespawned.session_id if prespawned else None,
        )  # fmt: skip
        self.startup_pending = not self.resumed
        self.child: ChildLike | None = None
        self.parser: Parser = adapter.parser(self.provider_state)
        self._command: str | None = None
        self._placement_argv: list[str] = []  # per-turn CLIs: given on every turn (codex's developer instructions)
        self._env: dict[str, str] = {}
        self.instructions_path: Path | None = None
        self._unknown_seen: set[str] = set()
        self._last_output: deque[str] = deque(maxlen=3)
        self._error_output: deque[str] = deque(maxlen=2)  # lines that say "error": the likeliest reason it exited
        self.permissions = Permissions(self.signals)
        self._session_seen = False
        self._turn: Turn | None = None
        self._ask: AskPermission | None = None
        self.stopped: AgentlaunchError | None = None
        """Set by :meth:`stop`: the session takes no new turn and ends with this error."""
        self.control_path: str | None = None
        """The socket ``agentlaunch send`` reaches this session through, while a chat or an interface runs."""

    @property
    def _persistent(self) -> PersistentAdapter:
        return cast(PersistentAdapter, self.adapter)

    @property
    def _per_turn(self) -> PerTurnAdapter:
        return cast(PerTurnAdapter, self.adapter)

    # -- what sinks see ----------------------------------------------------------------
    @property
    def cli_pid(self) -> int | None:
        return self.child.pid if self.child is not None else None

    def emit(self, event: SinkEvent) -> None:
        """``event`` to every sink."""
        fan_out(self.sinks, event, self)

    def notice(self, message: str) -> None:
        self.emit(Notice(message))

    def set_state(self, state: str, *, always: bool = False) -> None:
        """starting, waiting (for input), thinking, tool (running one), exited."""
        if state != self.state or always:
            self.state = state
            self.emit(StateChanged(state))

    @property
    def env(self) -> dict[str, str]:
        """The CLI's environment (set by :meth:`start`)."""
        return self._env

    @property
    def command(self) -> str | None:
        """The CLI's resolved path (set by :meth:`start`)."""
        return self._command

    @property
    def placement_argv(self) -> list[str]:
        """The arguments that carry or point at the instructions (set by :meth:`start`)."""
        return self._placement_argv

    def request_interrupt(self, reason: str) -> None:
        """Interrupt the running turn as Ctrl-C does (for a sink: a budget guard, say)."""
        if self._turn is not None:
            self._turn.interrupt(reason)

    def stop(self, error: AgentlaunchError) -> None:
        """End the session with ``error``: the running turn is interrupted and no new turn starts (a budget guard)."""
        if self.stopped is None:
            self.stopped = error
            self.request_interrupt("stopping the turn: a budget is spent")

    # -- start and stop -------------------------------------------------------------------
    def start(self) -> None:
        self.signals.install()
        self.signals.on_resize = lambda: self.child.resize(*window_size()) if self.child is not None else None
        self.set_state("starting", always=True)
        placement = place_instructions(
            self.spec, self.working_dir, self.state_dir, self.clock.now().date(), self.options.templates_dir,
            force=self.options.force,
        )  # fmt: skip
        self.instructions_path = placement.path
        if placement.skills is not None and placement.skills.changed:
            # a CLI started early may have listed the skills before this launch rewrote them
            prespawn.discard(self.prespawned)
            self.prespawned = None
        for notice in placement.notices:
            self.notice(notice)
        command = self.spec.command or self.adapter.default_command
        try:
            resolved = resolve_command(command)
        except ProviderMissing as exc:
            raise ProviderMissing(exc.message, hint=self.adapter.install_hint) from None
        self._placement_argv = placement.argv
        if self.persistent:
            plan = self._persistent.plan(self.spec, resolved, self.session_id, self.resumed, self.options.interactive)
            argv = [*plan.argv, *placement.argv]
            # Fingerprinted with the headless flags in both chats: the line chat sends the prefix of a headless
            # run (the same tools, see ClaudeAdapter.plan), so a change between them alone is no change.
            headless = self._persistent.plan(self.spec, resolved, self.session_id, self.resumed, False)
            fingerprinted = [*headless.argv, *placement.fingerprint_argv]
        else:
            # The flags as a new session's first turn would have them (no thread id, no prompt).
            plan = self._per_turn.plan_turn(self.spec, resolved, self.adapter.new_state(self.session_id), "")
            argv = with_placement_argv(plan.argv[:-1], placement.argv)
            fingerprinted = with_placement_argv(plan.argv[:-1], placement.fingerprint_argv)
        for notice in plan.notices:
            self.notice(notice)
        changed = record_prefix(
            self.spec, placement.rendered, self.options.templates_dir, resolved, fingerprinted, self.session_id,
            self.state_dir, interface=self.options.native,
        )  # fmt: skip
        if changed:
            self.emit(PrefixChanged(tuple(changed)))
            self.notice(prefix_notice(changed) or "")
        extra = {**plan.env, **self.spec.env, **placement.env}
        self._env = child_env(os.environ, extra)
        self._command = resolved
        if self.persistent and not self.options.native:
            self._adopt_or_spawn(argv, extra, placement.rendered.data, plan.env)
        self.calls.warm_up()
        self.set_state("waiting")

    def _adopt_or_spawn(self, argv: list[str], extra: dict[str, str], instructions: bytes, plan_env: dict[str, str]) -> None:
        """Use the CLI the entry point started early when it was started exactly so; else start it now."""
        digest = hashlib.sha256(instructions).hexdigest()
        pending, self.prespawned = self.prespawned, None
        adopted = prespawn.adopt(pending, argv, extra, digest)
        if adopted is not None:
            self.child = adopted
            self.reaper.watch(adopted.pid)
        else:
            self._spawn(argv)
        if self.options.plan_key and not self.resumed and not self.options.interactive and self.instructions_path:
            prespawn.remember(self.options.plan_key, argv, self.session_id, plan_env, self.instructions_path, digest,
                              self.spec.agent_dir / "agent.yaml", bool(self.spec.env), self.working_dir,
                              self.state_dir)  # fmt: skip

    def _spawn(self, argv: list[str], stdin: bytes | None = None) -> ChildLike:
        try:
            child = self.child_factory(argv, self._env, self.working_dir, window_size())
        except ProviderMissing as exc:
            raise ProviderMissing(exc.message, hint=self.adapter.install_hint) from None
        self.reaper.watch(child.pid)
        self.child = child
        if stdin is not None:
            # Per-turn CLIs read the prompt (if any) from stdin and must then see EOF.
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
            if self.instructions_path is not None:
                with contextlib.suppress(AgentlaunchError):
                    release(self.instructions_path, self.state_dir)
            try:
                self.set_state("exited")
                self.emit(SessionClosed(exit_status))
            finally:
                self.store.close()
                self.loop.close()
        self.signals.uninstall()
        return code

    # -- one turn ----------------------------------------------------------------------
    def first_message(self, prompt: str) -> str:
        """The user's text, behind the startup message on the first turn of a new session."""
        if not self.startup_pending:
            return prompt
        facts = RunFacts(self.spec.provider, self.spec.model, self.session_id, self.working_dir, self.clock.now())
        startup = render_startup(self.spec, facts, self.options.templates_dir)
        # Sent once: a failed first turn stays in the CLI's transcript, so a retry must not repeat it.
        self.startup_pending = False
        return startup + "\n" + prompt if prompt else startup

    def run_turn(self, prompt: str, *, timeout: float | None = None, ask_permission: AskPermission | None = None) -> TurnOutcome:
        """Send one user turn and run the loop until its end; Ctrl-C interrupts it, SIGTERM/SIGHUP end it.

        A stopped session (see :meth:`stop`) takes no new turn: its error is raised instead.
        """
        if self.stopped is not None:
            raise self.stopped
        if (cold := self.cold_cache_notice()) is not None:
            self.notice(cold)
        if self.signals.termination is not None:
            return TurnOutcome(None, terminated=self.signals.termination)
        self.signals.forget_interrupts()
        text = self.first_message(prompt)
        self.turns += 1
        self._ask = ask_permission
        with self.signals.turn():  # from here a Ctrl-C interrupts the turn instead of raising
            if self.persistent:
                assert self.child is not None
                self.child.send_json(self._persistent.user_message(text))
            else:
                assert self._command is not None
                plan = self._per_turn.plan_turn(self.spec, self._command, self.provider_state, text)
                argv = with_placement_argv(plan.argv, self._placement_argv)
                self._spawn(argv, plan.stdin if plan.stdin is not None else b"")
            # After the prompt is on its way: the sinks (the status file's write) do not delay the CLI.
            self.set_state("thinking")
            self.emit(PromptSent(prompt))
            assert self.child is not None
            self._turn = Turn(self.loop, self.signals, self.child, self, persistent=self.persistent, timeout=timeout)
            try:
                result = self._turn.run()
            finally:
                self._turn = None
            if result.terminated is not None:
                return TurnOutcome(None, interrupted=result.interrupted, terminated=result.terminated)
            if result.cli_gone:
                for event in self.parser.finish():
                    self.handle(event)
            outcome = self._close_turn(result.end, result.interrupted, cli_gone=result.cli_gone)
        if result.timed_out and result.end is not None and not result.cli_gone:
            raise TurnTimeout(f"the turn took longer than {timeout:g}s and was interrupted")
        if result.timed_out and result.end is None:
            raise TurnTimeout(f"the turn took longer than {timeout:g}s and was interrupted; the session stays resumable")
        return outcome

    # -- what the turn hands back (TurnHost) ---------------------------------------------------
    def on_line(self, line: str) -> TurnEnd | None:
        """Handle one output line's events; the turn's end when this line reports it."""
        for event in self._parse(line):
            self.handle(event)
            if isinstance(event, TurnEnd):
                return event
        return None

    def interrupt(self) -> None:
        assert self.child is not None
        if self.persistent:
            self.child.send_json(self._persistent.interrupt_message())
        else:
            # A per-turn CLI ends its turn on SIGINT; Gemini's launcher only passes it on to its group.
            self.child.signal_group(signal.SIGINT)

    def on_child_signal(self) -> None:
        self.reaper.reap_orphans(keep=[self.child.pid] if self.child is not None else [])

    def _parse(self, line: str) -> list[Event]:
        """The parser's events for one output line; a per-turn CLI's turn sum is split into its calls."""
        events = self.parser.feed(line)
        if self.persistent or not any(isinstance(e, CallUsage) for e in events):
            return events
        split: list[Event] = []
        for event in events:
            split.extend(self._per_turn.calls_in_turn(event, self.parser, self._env) if isinstance(event, CallUsage) else [event])
        return split

    def _close_turn(self, end: TurnEnd | None, interrupted: bool, *, cli_gone: bool) -> TurnOutcome:
        """What every turn's end does, finished or not: reap a per-turn CLI, count the turn, show its footer."""
        assert self.child is not None
        code: int | None = None
        if not self.persistent:
            code = self._end_turn_process()
            self.set_state("waiting")
        elif cli_gone:
            code = self.child.poll()
            code = self.child.stop() if code is None else code
            self.set_state("exited")
        else:
            self.set_state("waiting")
        self.emit(TurnDone())  # the turn happened, even unfinished: the recorder counts it
        return TurnOutcome(
            end, interrupted=interrupted, exit_code=code, last_output=tuple(self._error_output or self._last_output)
        )

    def _end_turn_process(self) -> int | None:
        """A per-turn CLI finished its turn: reap it and what it left, keep what the next turn needs."""
        assert self.child is not None
        child, self.child = self.child, None
        code = child.poll()
        code = child.stop() if code is None else code
        child.close()
        self.reaper.end_all()  # its helpers have no next turn to serve
        self.reaper.roots.discard(child.pid)
        # What the CLI's own file holds beyond what was counted: the finished calls of an interrupted or failed turn.
        for call in self._per_turn.calls_not_counted(self.parser, self._env):
            self.handle(call)
        self.provider_state, learned = self._per_turn.state_after_turn(self.parser, self._env)
        self.emit(ProviderStateKept(self.provider_state))
        for event in learned:
            self.handle(event)
        return code

    def cold_cache_notice(self) -> str | None:
        """One line when a turn starts after the cache went cold (see :class:`~agentlaunch.usage.call_meter.CallMeter`)."""
        return self.calls.cold_cache_notice(self.clock.now())

    def handle(self, event: Event) -> None:
        """Meter and price one event, then hand it to the sinks."""
        warning = self.calls.count(event)
        if isinstance(event, Diagnostic):
            self._last_output.append(event.line)
            if "error" in event.line.lower():
                self._error_output.append(event.line)
        if isinstance(event, Unknown):
            if event.type not in self._unknown_seen:
                self._unknown_seen.add(event.type)
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
            if not self.persistent:
                self.emit(ProviderStateKept(self._per_turn.state_after_turn(self.parser, self._env)[0]))
        if warning is not None:
            self.emit(CompactionWarned(warning))
        if isinstance(event, PermissionRequest):
            assert self.child is not None
            asks = self._ask is not None and event.tool_name not in self.permissions.always_allowed
            if asks:
                self.set_state("asking")  # the person is asked: "needs you", the status record, the pane border
            decision = self.permissions.decide(event, self._ask)
            if asks:
                self.set_state("tool" if decision != "deny" else "thinking")
            self.child.send_json(self._persistent.permission_answer(event, decision))
