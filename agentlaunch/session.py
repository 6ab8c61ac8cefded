"""One launch of an agent: deliver its instructions, start its CLI, run turns, keep every call.

This is the only module that ties the pieces together; each piece (render,
deliver, transport, parser, meter, pricing, store, view) stays ignorant of
the others.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
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
from agentlaunch.deliver import release
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
from agentlaunch.meter import CompactionWarning, Meter
from agentlaunch.placement import place_instructions
from agentlaunch.prefix import check_prefix
from agentlaunch.pricing import Pricer
from agentlaunch.providers import get_adapter
from agentlaunch.providers.base import child_env
from agentlaunch.render import RunFacts, render_startup
from agentlaunch.spec import load_agent, resolve_working_dir
from agentlaunch.store import CallRecord, Store
from agentlaunch.transport import EOF, Child, LongLineDropped, resolve_command, window_size

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
        self.spec = load_agent(options.agents_dir, options.agent)
        self.adapter = get_adapter(self.spec.provider)
        self.state_dir = paths.state_dir()
        self.working_dir = resolve_working_dir(self.spec, options.working_dir, self.state_dir)
        self.meter = Meter(configured_window=self.spec.context_window, buffer=self.spec.compaction_buffer, model=self.spec.model)
        self.pricer = Pricer(agents_dir=self.spec.agents_dir)
        self.store = Store.open(paths.store_path())
        self.session_id, self.resumed, self.turns = self._choose_session()
        self.startup_pending = not self.resumed
        self.child: Child | None = None
        self.parser = self.adapter.parser()
        self.instructions_path: Path | None = None
        self._unknown_seen: set[str] = set()
        self._last_output: deque[str] = deque(maxlen=3)
        self.always_allowed: set[str] = set()
        self._registered = False

    # -- session identity -------------------------------------------------
    def _choose_session(self) -> tuple[str, bool, int]:
        opts = self.options
        if opts.resume:
            row = self.store.get_session(opts.resume)
            if row is not None and row.agent != self.spec.name:
                raise DefinitionError(f"--resume: session {opts.resume} belongs to agent {row.agent!r}, not {self.spec.name!r}")
            if row is not None and row.provider != self.spec.provider:
                raise DefinitionError(
                    f"--resume: session {opts.resume} ran on {row.provider}, but {self.spec.name!r} now uses {self.spec.provider}"
                )
            return opts.resume, True, row.turns if row else 0
        if opts.continue_last:
            row = self.store.latest_session(self.spec.name, str(self.working_dir), self.spec.provider)
            if row is None:
                raise DefinitionError(
                    f"--continue: no earlier session of agent {self.spec.name!r} in {self.working_dir}",
                    hint="start one without --continue, or list them with `agentlaunch sessions`",
                )
            return row.session_id, True, row.turns
        return str(uuid.uuid4()), False, 0

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
        plan = self.adapter.plan(self.spec, resolved, self.session_id, self.resumed, self.options.interactive)
        argv = [*plan.argv, *placement.argv]
        for notice in plan.notices:
            self.sink.notice(notice)
        changed = check_prefix(
            self.spec, self.working_dir, today, self.options.templates_dir, resolved, argv, self.session_id, self.state_dir
        )
        if changed:
            self.sink.notice(changed)
        env = child_env(os.environ, {**plan.env, **self.spec.env})
        try:
            self.child = Child(argv, env, self.working_dir, size=window_size())
        except ProviderMissing as exc:
            raise ProviderMissing(exc.message, hint=self.adapter.install_hint) from None
        self.set_state("waiting")

    def close(self, exit_status: int) -> int | None:
        """End the CLI, free the instructions file, record how the session ended."""
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
        assert self.child is not None
        text = self.first_message(prompt)
        self.turns += 1
        self.set_state("thinking")
        try:
            self.child.send_json(self.adapter.user_message(text))
        except (BrokenPipeError, OSError):
            return self._drain_after_exit()
        deadline = None if timeout is None else time.monotonic() + timeout
        interrupted_at: float | None = None
        timed_out = False
        while True:
            try:
                item = self.child.next_line(timeout=0.1)
            except queue.Empty:
                now = time.monotonic()
                if deadline is not None and now > deadline and interrupted_at is None:
                    timed_out = True
                    interrupted_at = now
                    self._interrupt()
                if interrupted_at is not None and now - interrupted_at > INTERRUPT_GRACE:
                    self.child.signal_group(signal.SIGKILL)
                continue
            except KeyboardInterrupt:
                if interrupted_at is not None:  # a second Ctrl-C: stop waiting
                    self.child.signal_group(signal.SIGKILL)
                    continue
                interrupted_at = time.monotonic()
                self.sink.notice("interrupting the turn…")
                self._interrupt()
                continue
            if item is EOF:
                return self._drain_after_exit(interrupted=interrupted_at is not None)
            if isinstance(item, LongLineDropped):
                self.sink.notice(f"dropped a provider output line of {item.size:,} bytes (too long to parse)")
                continue
            for event in self.parser.feed(item):
                self.handle(event, ask_permission)
                if isinstance(event, TurnEnd):
                    self.set_state("waiting")
                    if self._registered:
                        self.store.touch_session(self.session_id)
                    self.sink.turn_done()
                    if timed_out:
                        raise TurnTimeout(f"the turn took longer than {timeout:g}s and was interrupted")
                    return TurnOutcome(event, interrupted=interrupted_at is not None)

    def _interrupt(self) -> None:
        assert self.child is not None
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
                for event in self.parser.feed(item):
                    self.handle(event, None)
                    end = event if isinstance(event, TurnEnd) else end
        for event in self.parser.finish():
            self.handle(event, None)
        code = self.child.wait()
        self.set_state("exited")
        self.sink.turn_done()
        return TurnOutcome(end, interrupted=interrupted, exit_code=code, last_output=tuple(self._last_output))

    def handle(self, event: Event, ask_permission: Callable[[PermissionRequest], str] | None) -> None:
        """Meter, price, store and show one event."""
        warning = self.meter.add(event)
        if isinstance(event, Diagnostic):
            self._last_output.append(event.line)
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
