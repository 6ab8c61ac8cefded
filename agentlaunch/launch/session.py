"""One launch of an agent: deliver its instructions, start its CLI, run turns, keep every call.

This is the only module that ties the pieces together; each piece (render,
deliver, transport, parser, meter, pricing, store, view) stays ignorant of
the others.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import queue
import signal
import subprocess
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

from agentlaunch import paths
from agentlaunch.definitions.deliver import release
from agentlaunch.definitions.render import RunFacts, render_startup
from agentlaunch.definitions.spec import load_agent, resolve_working_dir
from agentlaunch.errors import AgentlaunchError, DefinitionError, Interrupted, ProviderMissing, TurnFailed, TurnTimeout
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
from agentlaunch.launch.placement import place_instructions
from agentlaunch.launch.transport import EOF, Child, LongLineDropped, resolve_command, window_size
from agentlaunch.prefix.fingerprint import check_prefix
from agentlaunch.providers import get_adapter
from agentlaunch.providers.base import child_env
from agentlaunch.usage.meter import CompactionWarning, Meter
from agentlaunch.usage.pricing import Pricer
from agentlaunch.usage.records import CallRecord
from agentlaunch.usage.store import Store

INTERRUPT_GRACE = 10.0  # seconds a CLI gets to end a turn after an interrupt


class Sink(Protocol):
    def event(self, event: Event) -> None: ...
    def notice(self, message: str) -> None: ...
    def warn_compaction(self, warning: CompactionWarning) -> None: ...
    def unknown_once(self, event: Unknown) -> None: ...
    def turn_done(self) -> None: ...


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
    plan_key: str | None = None  # names this launch's plan for the next launch's early start (prespawn)


@dataclass
class TurnOutcome:
    end: TurnEnd | None  # None: the CLI ended without finishing the turn
    interrupted: bool = False
    exit_code: int | None = None
    last_output: tuple[str, ...] = ()  # the CLI's last non-JSON lines (why it exited)


class Terminated(BaseException):
    """agentlaunch itself got SIGTERM or SIGHUP."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class Launch:
    """A session of one agent on its provider CLI."""

    def __init__(self, options: LaunchOptions, sink: Sink) -> None:
        self.options = options
        self.sink = sink
        self.state = "starting"
        # Called with the launch after every state change and every event (the live status file).
        self.observers: list[Callable[[Launch], None]] = []
        self.state_dir = paths.state_dir()
        self.spec = load_agent(options.agents_dir, options.agent, self.state_dir)
        self.adapter = get_adapter(self.spec.provider)
        self.working_dir = resolve_working_dir(self.spec, options.working_dir, self.state_dir)
        self.meter = Meter(configured_window=self.spec.context_window, buffer=self.spec.compaction_buffer, model=self.spec.model)
        self.pricer = Pricer(agents_dir=self.spec.agents_dir)
        self.store = Store.open(paths.store_path())
        fresh = not (options.resume or options.continue_last or options.interactive)
        self.prespawned = prespawn.take() if fresh and self.adapter.persistent else None
        self.session_id, self.resumed, self.turns, self.provider_state = self._choose_session()
        self.startup_pending = not self.resumed
        self.child: Child | None = None
        self.parser = self.adapter.parser(self.provider_state)
        self._command: str | None = None
        self._env: dict[str, str] = {}
        self.instructions_path: Path | None = None
        self._unknown_seen: set[str] = set()
        self._last_output: deque[str] = deque(maxlen=3)
        self._error_output: deque[str] = deque(maxlen=2)  # lines that say "error": the likeliest reason it exited
        self.always_allowed: set[str] = set()
        self._registered = False
        self._ctrl_c = 0

    # -- session identity -------------------------------------------------
    def _choose_session(self) -> tuple[str, bool, int, dict[str, Any]]:
        """(session id, resumed?, turns so far, provider state) for this launch."""
        opts = self.options
        if opts.resume:
            row = self.store.get_session(opts.resume)
            if row is not None and row.agent != self.spec.name:
                raise DefinitionError(f"--resume: session {opts.resume} belongs to agent {row.agent!r}, not {self.spec.name!r}")
            if row is not None and row.provider != self.spec.provider:
                raise DefinitionError(
                    f"--resume: session {opts.resume} ran on {row.provider}, but {self.spec.name!r} now uses {self.spec.provider}"
                )
            state = self.adapter.resume_state(opts.resume, row.provider_state if row else None)
            return opts.resume, True, row.turns if row else 0, state
        if opts.continue_last:
            row = self.store.latest_session(self.spec.name, str(self.working_dir), self.spec.provider)
            if row is None:
                raise DefinitionError(
                    f"--continue: no earlier session of agent {self.spec.name!r} in {self.working_dir}",
                    hint="start one without --continue, or list them with `agentlaunch sessions`",
                )
            return row.session_id, True, row.turns, self.adapter.resume_state(row.session_id, row.provider_state)
        session_id = self.prespawned.session_id if self.prespawned else str(uuid.uuid4())
        return session_id, False, 0, self.adapter.new_state(session_id)

    @property
    def persistent(self) -> bool:
        """One CLI process for the whole session (Claude Code), or one per turn (Codex, Gemini)."""
        return bool(self.adapter.persistent)

    def set_state(self, state: str) -> None:
        """starting, waiting (for input), thinking, tool (running one), exited."""
        self.state = state
        self._notify()

    def _notify(self) -> None:
        for observer in self.observers:
            observer(self)

    # -- start and stop ---------------------------------------------------
    def start(self) -> None:
        today = date.today()
        placement = place_instructions(
            self.spec, self.working_dir, self.state_dir, today, self.options.templates_dir, force=self.options.force
        )
        self.instructions_path = placement.path
        for notice in placement.notices:
            self.sink.notice(notice)
        command = self.spec.command or self.adapter.default_command
        try:
            resolved = resolve_command(command)
        except ProviderMissing as exc:
            raise ProviderMissing(exc.message, hint=self.adapter.install_hint) from None
        if self.adapter.persistent:
            plan = self.adapter.plan(self.spec, resolved, self.session_id, self.resumed, self.options.interactive)
            argv = [*plan.argv, *placement.argv]
        else:
            # The flags as a new session's first turn would have them (no thread id, no prompt).
            plan = self.adapter.plan_turn(self.spec, resolved, self.adapter.new_state(self.session_id), "")
            argv = plan.argv[:-1]
        for notice in plan.notices:
            self.sink.notice(notice)
        changed = check_prefix(
            self.spec, placement.rendered, self.options.templates_dir, resolved, argv, self.session_id, self.state_dir
        )
        if changed:
            self.sink.notice(changed)
        extra = {**plan.env, **self.spec.env}
        self._env = child_env(os.environ, extra)
        self._command = resolved
        if self.persistent:
            self._adopt_or_spawn(argv, extra, placement.rendered.data, plan.env)
        self.pricer.warm_up(self.spec.provider, self.spec.model)
        self.set_state("waiting")

    def _adopt_or_spawn(self, argv: list[str], extra: dict[str, str], instructions: bytes, plan_env: dict[str, str]) -> None:
        """Use the CLI the entry point started early when it was started exactly so; else start it now."""
        digest = hashlib.sha256(instructions).hexdigest()
        pending, self.prespawned = self.prespawned, None
        self.child = prespawn.adopt(pending, argv, extra, digest)
        if self.child is None:
            self._spawn(argv)
        if self.options.plan_key and not self.resumed and not self.options.interactive and self.instructions_path:
            prespawn.remember(self.options.plan_key, argv, self.session_id, plan_env, self.instructions_path, digest,
                              self.spec.agent_dir / "agent.yaml", bool(self.spec.env), self.working_dir,
                              self.state_dir)  # fmt: skip

    def _spawn(self, argv: list[str], stdin: bytes | None = None) -> Child:
        try:
            self.child = Child(argv, self._env, self.working_dir, size=window_size())
        except ProviderMissing as exc:
            raise ProviderMissing(exc.message, hint=self.adapter.install_hint) from None
        if stdin is not None:
            # Per-turn CLIs read the prompt (if any) from stdin and must then see EOF.
            with contextlib.suppress(OSError):
                if stdin:
                    self.child.send_bytes(stdin)
                self.child.close_stdin()
        return self.child

    def close(self, exit_status: int) -> int | None:
        """End the CLI, free the instructions file, record how the session ended."""
        prespawn.discard(self.prespawned)  # a launch that failed before adopting it
        self.prespawned = None
        code = None
        if self.child is not None:
            code = self.child.stop()
            self.child.close()
            self.child = None
        if self.instructions_path is not None:
            with contextlib.suppress(AgentlaunchError):
                release(self.instructions_path, self.state_dir)
        if self._registered:
            with contextlib.suppress(AgentlaunchError):
                self.store.end_session(self.session_id, exit_status)
        self.store.close()
        self.set_state("exited")
        return code

    # -- one turn ---------------------------------------------------------
    def first_message(self, prompt: str) -> str:
        """The user's text, behind the startup message on the first turn of a new session."""
        if not self.startup_pending:
            return prompt
        facts = RunFacts(self.spec.provider, self.spec.model, self.session_id, self.working_dir, datetime.now().astimezone())
        startup = render_startup(self.spec, facts, self.options.templates_dir)
        # Sent once: a failed first turn stays in the CLI's transcript, so a retry must not repeat it.
        self.startup_pending = False
        return startup + "\n" + prompt if prompt else startup

    def run_turn(
        self, prompt: str, *, timeout: float | None = None, ask_permission: Callable[[PermissionRequest], str] | None = None
    ) -> TurnOutcome:
        """Send one user turn and handle events until its end; Ctrl-C interrupts it."""
        text = self.first_message(prompt)
        self.turns += 1
        self.set_state("thinking")
        if self.adapter.persistent:
            assert self.child is not None
            try:
                self.child.send_json(self.adapter.user_message(text))
            except (BrokenPipeError, OSError):
                return self._drain_after_exit()
        else:
            assert self._command is not None
            plan = self.adapter.plan_turn(self.spec, self._command, self.provider_state, text)
            self._spawn(plan.argv, plan.stdin if plan.stdin is not None else b"")
        assert self.child is not None
        with self._ctrl_c_counted():
            return self._await_turn_end(timeout, ask_permission)

    @contextlib.contextmanager
    def _ctrl_c_counted(self) -> Iterator[None]:
        """While a turn runs, Ctrl-C (SIGINT) is counted, never raised mid-handling of an event."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def count(signum: int, frame: FrameType | None) -> None:
            self._ctrl_c += 1

        previous = signal.signal(signal.SIGINT, count)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    def _await_turn_end(self, timeout: float | None, ask_permission: Callable[[PermissionRequest], str] | None) -> TurnOutcome:
        assert self.child is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        interrupted_at: float | None = None
        timed_out = False
        seen_ctrl_c = self._ctrl_c
        while True:
            try:
                item: str | LongLineDropped | None = self.child.next_line(timeout=0.1)
                waited = False
            except queue.Empty:
                item, waited = None, True
            now = time.monotonic()
            if self._ctrl_c != seen_ctrl_c:
                seen_ctrl_c = self._ctrl_c
                if interrupted_at is not None:  # a second Ctrl-C: stop waiting for the CLI
                    self.child.signal_group(signal.SIGKILL)
                else:
                    interrupted_at = now
                    self.sink.notice("interrupting the turn…")
                    self._interrupt()
            if waited:
                if deadline is not None and now > deadline and interrupted_at is None:
                    timed_out = True
                    interrupted_at = now
                    self._interrupt()
                if interrupted_at is not None and now - interrupted_at > INTERRUPT_GRACE:
                    self.child.signal_group(signal.SIGKILL)
                continue
            if item is EOF:
                outcome = self._drain_after_exit(interrupted=interrupted_at is not None)
                if timed_out and outcome.end is None:
                    raise TurnTimeout(f"the turn took longer than {timeout:g}s and was interrupted; the session stays resumable")
                return outcome
            if isinstance(item, LongLineDropped):
                self.sink.notice(f"dropped a provider output line of {item.size:,} bytes (too long to parse)")
                continue
            for event in self._parse(item):
                self.handle(event, ask_permission)
                if isinstance(event, TurnEnd):
                    outcome = self._close_turn(event, interrupted_at is not None, cli_gone=False)
                    if timed_out:
                        raise TurnTimeout(f"the turn took longer than {timeout:g}s and was interrupted")
                    return outcome

    def _parse(self, line: str) -> list[Event]:
        """The parser's events for one output line; a per-turn CLI's turn sum is split into its calls."""
        events = self.parser.feed(line)
        if self.adapter.persistent or not any(isinstance(e, CallUsage) for e in events):
            return events
        split: list[Event] = []
        for event in events:
            split.extend(self.adapter.calls_in_turn(event, self.parser, self._env) if isinstance(event, CallUsage) else [event])
        return split

    def _interrupt(self) -> None:
        assert self.child is not None
        if not self.persistent:
            # A per-turn CLI ends its turn on SIGINT; Gemini's launcher only passes it on to its group.
            self.child.signal_group(signal.SIGINT)
            return
        with contextlib.suppress(OSError):
            self.child.send_json(
                {
                    "type": "control_request",
                    "request_id": f"interrupt-{uuid.uuid4().hex[:8]}",
                    "request": {"subtype": "interrupt"},
                }
            )

    def _drain_after_exit(self, interrupted: bool = False) -> TurnOutcome:
        """The CLI is gone (or going): take what it printed last, then its exit code."""
        assert self.child is not None
        end: TurnEnd | None = None
        while (item := self.child.next_line()) is not EOF:
            if isinstance(item, str):
                for event in self._parse(item):
                    self.handle(event, None)
                    end = event if isinstance(event, TurnEnd) else end
        for event in self.parser.finish():
            self.handle(event, None)
        return self._close_turn(end, interrupted, cli_gone=True)

    def _close_turn(self, end: TurnEnd | None, interrupted: bool, *, cli_gone: bool) -> TurnOutcome:
        """What every turn's end does, finished or not: count it, reap a per-turn CLI, show the turn's footer."""
        assert self.child is not None
        if self._registered:
            self.store.touch_session(self.session_id)  # the turn happened, even unfinished
        code: int | None = None
        if not self.persistent:
            code = self._end_turn_process()
            self.set_state("waiting")
        elif cli_gone:
            code = self.child.wait()
            self.set_state("exited")
        else:
            self.set_state("waiting")
        self.sink.turn_done()
        return TurnOutcome(
            end, interrupted=interrupted, exit_code=code, last_output=tuple(self._error_output or self._last_output)
        )

    def _end_turn_process(self) -> int | None:
        """A per-turn CLI finished its turn: reap it, keep what the next turn needs."""
        assert self.child is not None
        assert not self.adapter.persistent
        try:
            code = self.child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = self.child.stop()
        self.child.close()
        self.child = None
        # What the CLI's own file holds beyond what was counted: the finished calls of an interrupted or failed turn.
        for call in self.adapter.calls_not_counted(self.parser, self._env):
            self.handle(call, None)
        self.provider_state, learned = self.adapter.state_after_turn(self.parser, self._env)
        if self._registered:
            self.store.set_provider_state(self.session_id, self.provider_state)
        for event in learned:
            self.handle(event, None)
        return code

    def handle(self, event: Event, ask_permission: Callable[[PermissionRequest], str] | None) -> None:
        """Meter, price, store and show one event."""
        warning = self.meter.add(event)
        if isinstance(event, Diagnostic):
            self._last_output.append(event.line)
            if "error" in event.line.lower():
                self._error_output.append(event.line)
        if isinstance(event, SessionStarted) and not self._registered:
            # Registered once the CLI confirms the session: an unknown --resume id never becomes one.
            self.store.start_session(
                self.session_id,
                agent=self.spec.name,
                provider=self.spec.provider,
                working_dir=str(self.working_dir),
                model=self.spec.model,
            )
            self._registered = True
            if not self.adapter.persistent:
                self.store.set_provider_state(self.session_id, self.adapter.state_after_turn(self.parser, self._env)[0])
        if isinstance(event, CallUsage):
            price = self.pricer.price(event.usage, self.spec.provider, event.model, self.spec.model)
            cost = price.cost_usd if price else None
            self.meter.add_cost(cost)
            self.store.record_call(
                CallRecord(
                    agent=self.spec.name,
                    provider=self.spec.provider,
                    usage=event.usage,
                    session_id=self.session_id,
                    turn=self.turns,
                    model_requested=self.spec.model,
                    model_reported=event.model,
                    cost_usd=cost,
                    price_key=price.key if price else None,
                )
            )
        if isinstance(event, Unknown):
            if event.type not in self._unknown_seen:
                self._unknown_seen.add(event.type)
                self.sink.unknown_once(event)
            return
        self.sink.event(event)
        if isinstance(event, ToolUse):
            self.state = "tool"
        elif isinstance(event, ToolResult | TextDelta | Text):
            self.state = "thinking"
        self._notify()
        if warning is not None:
            self.sink.warn_compaction(warning)
        if isinstance(event, PermissionRequest):
            self._answer_permission(event, ask_permission)

    def _answer_permission(self, request: PermissionRequest, ask: Callable[[PermissionRequest], str] | None) -> None:
        assert self.child is not None
        if request.tool_name in self.always_allowed:
            decision = "always"
        else:
            with _default_sigint():  # Ctrl-C at the question denies (a KeyboardInterrupt in input())
                decision = ask(request) if ask is not None else "deny"
        if decision == "always":
            self.always_allowed.add(request.tool_name)
        if decision in ("once", "always"):
            response: dict[str, Any] = {"behavior": "allow", "updatedInput": request.tool_input}
        else:
            response = {"behavior": "deny", "message": "The user denied this tool use."}
        with contextlib.suppress(OSError):
            self.child.send_json(
                {
                    "type": "control_response",
                    "response": {"subtype": "success", "request_id": request.request_id, "response": response},
                }
            )


@contextlib.contextmanager
def _default_sigint() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def signals_handled(on_resize: Callable[[], None]) -> Iterator[None]:
    """SIGTERM and SIGHUP end the launch cleanly; SIGWINCH resizes the child's terminal."""

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise Terminated(signum)

    def resize(signum: int, frame: FrameType | None) -> None:
        on_resize()

    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGWINCH)}
    signal.signal(signal.SIGTERM, terminate)
    signal.signal(signal.SIGHUP, terminate)
    signal.signal(signal.SIGWINCH, resize)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


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
