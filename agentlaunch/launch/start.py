"""One way to start a provider CLI: the plan (placement, argv, environment, fingerprint), and the child it starts.

:func:`plan_start` is what ``agentlaunch run`` (headless, the line chat, the
native interface) and ``doctor --live`` (its headless and interface runs) all
start a CLI from: the instructions placed as the agent's delivery says, the
CLI's argv and environment from its adapter, and, for a launch, the prefix
fingerprint recorded against the previous launch. :func:`start_child` then
adopts the CLI the entry point started early (:mod:`agentlaunch.launch.early.prespawn`)
when it was started exactly so, and starts one otherwise: a launch's with :func:`spawn_cli`
(its child factory, the CLI adopted).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from hashlib import sha256
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from agentlaunch.datarecord import datarecord
from agentlaunch.definitions.deliver import release
from agentlaunch.definitions.fingerprint import prefix_notice, record_prefix
from agentlaunch.definitions.spec import AgentSpec
from agentlaunch.errors import AgentlaunchError, ProviderMissing
from agentlaunch.launch.early import prespawn
from agentlaunch.launch.placement import Placement, place_instructions
from agentlaunch.launch.transport import window_size
from agentlaunch.processes import resolve_command
from agentlaunch.providers.base import TurnPlan, child_env
from agentlaunch.sinks import Notice, PrefixChanged, SinkEvent

if TYPE_CHECKING:
    from agentlaunch.clock import Clock
    from agentlaunch.launch.drivers import Driver
    from agentlaunch.launch.identity import ForkSource
    from agentlaunch.launch.options import LaunchOptions
    from agentlaunch.launch.session_state import SessionState
    from agentlaunch.launch.turn import ChildLike
    from agentlaunch.providers.base import Adapter


@datarecord(frozen=True)
class StartPlan:
    """How the CLI of a session starts: where the instructions went, its argv and its environment."""

    command: str
    """The CLI's resolved path."""
    placement: Placement
    plan: TurnPlan
    """The adapter's plan (persistent: the session's process; per-turn: a new session's first turn, no prompt)."""
    argv: list[str]
    """The CLI's argv with the placement's arguments (a per-turn CLI's: without the prompt)."""
    extra_env: dict[str, str]
    """What the launch adds to the environment it runs in: the plan's, the agent's ``env``, the placement's."""
    env: dict[str, str]
    """The CLI's whole environment."""
    held: tuple[str, ...] = ()
    """Parts of the instructions edited since the resumed session recorded its system prompt: they do not reach
    it (the CLI re-sends its record; see :func:`agentlaunch.definitions.fingerprint.record_prefix`)."""

    @property
    def placement_argv(self) -> list[str]:
        """The arguments that carry or point at the instructions (a per-turn CLI gets them on every turn)."""
        return self.placement.argv


def plan_start(
    spec: AgentSpec,
    driver: Driver,
    *,
    working_dir: Path,
    state_dir: Path,
    session_id: str,
    resumed: bool,
    today: date,
    templates_dir: Path | None = None,
    interactive: bool = False,
    interface: bool = False,
    force: bool = False,
    hold: bool = True,
    environ: Mapping[str, str] | None = None,
    point: Callable[[dict[str, str]], dict[str, str]] | None = None,
    command: str | None = None,
    emit: Callable[[SinkEvent], None] | None = None,
    record: bool = True,
    forked_from: str | None = None,
) -> StartPlan:
    """Place ``spec``'s instructions and plan its CLI's start; ``emit`` hears the notices as they come.

    ``environ`` is the environment the CLI starts from (this process's by default);
    ``point`` reshapes it before anything reads it (the doctor points the CLI at its
    capture endpoint, its settings over the agent's ``env``). ``record`` keeps the
    prefix fingerprint and reports a change (``interface``: the native mode's own
    record). A placement held for this launch is released again when the plan fails.
    ``forked_from``: the new session is a fork of that one (a CLI that re-sends its
    recorded prompt carries the earlier session's).
    """
    say = emit or (lambda event: None)
    environ = os.environ if environ is None else environ
    seen = child_env(environ, spec.env)
    if point is not None:
        seen = point(seen)
    placement = place_instructions(
        spec, working_dir, state_dir, today, templates_dir, force=force, hold=hold, env=seen, adapter=driver.adapter
    )
    try:
        for notice in placement.notices:
            say(Notice(notice))
        if command is None:
            try:
                command = resolve_command(spec.command or driver.adapter.default_command)
            except ProviderMissing as exc:
                raise ProviderMissing(exc.message, hint=driver.adapter.install_hint) from None
        plan, argv, fingerprinted = driver.start(spec, command, session_id, resumed, interactive, placement)
        for notice in plan.notices:
            say(Notice(notice))
        held: list[str] = []
        if record:
            report = record_prefix(
                spec,
                placement.rendered,
                templates_dir,
                command,
                fingerprinted,
                session_id,
                state_dir,
                interface=interface,
                resumed=resumed,
                recorded_prompt=driver.adapter.resends_recorded_prompt(spec),
                forked_from=forked_from,
            )
            held = report.held
            if report.changed:
                say(PrefixChanged(tuple(report.changed)))
                say(Notice(prefix_notice(report.changed) or ""))
    except BaseException:
        if hold:
            with contextlib.suppress(AgentlaunchError):
                release(placement.path, state_dir)
        raise
    extra = {**plan.env, **spec.env, **placement.env}
    # The doctor's settings stay over the agent's env (a base URL there must not reach a real API).
    env = child_env(environ, extra) if point is None else {**seen, **plan.env, **placement.env}
    return StartPlan(command, placement, plan, argv, extra, env, tuple(held))


def start_child(
    plan: StartPlan,
    pending: prespawn.Prespawned | None,
    spawn: Callable[[list[str]], ChildLike],
) -> tuple[ChildLike, bool]:
    """The CLI the entry point started early when it was started exactly as ``plan`` says (and the skills it may
    have listed are unchanged), else a new one from ``spawn``; True when adopted."""
    if plan.placement.skills is not None and plan.placement.skills.changed:
        prespawn.discard(pending)  # it may have listed the skills before this launch rewrote them
        pending = None
    adopted = prespawn.adopt(pending, plan.argv, plan.extra_env, instructions_digest(plan))
    if adopted is not None:
        return adopted, True
    return spawn(plan.argv), False


def instructions_digest(plan: StartPlan) -> str:
    """What the early start compares the instructions by."""
    return sha256(plan.placement.rendered.data).hexdigest()


def remember_plan(
    plan: StartPlan,
    key: str,
    session_id: str,
    spec: AgentSpec,
    working_dir: Path,
    state_dir: Path,
    argv: list[str] | None = None,
    turn: Mapping[str, object] | None = None,
) -> None:
    """Keep this launch's plan for the next launch's early start (:func:`agentlaunch.launch.early.prespawn.remember`);
    a per-turn CLI's is its first turn's ``argv``, the prompt's place in ``turn``."""
    prespawn.remember(
        key,
        plan.argv if argv is None else argv,
        session_id,
        {**plan.plan.env, **plan.placement.env},
        plan.placement.path,
        instructions_digest(plan),
        spec.agent_dir / "agent.yaml",
        bool(spec.env),
        working_dir,
        state_dir,
        turn,
    )


class StartingLaunch(Protocol):
    """What starting the CLI reads of the launch (what was asked, the agent, the session, the folders) and asks of
    it: the CLI started early handed over, a CLI adopted (one it spawns with its child factory), the notices told."""

    @property
    def options(self) -> LaunchOptions: ...
    @property
    def spec(self) -> AgentSpec: ...
    @property
    def adapter(self) -> Adapter: ...
    @property
    def driver(self) -> Driver: ...
    @property
    def persistent(self) -> bool: ...
    @property
    def plan(self) -> StartPlan | None: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def working_dir(self) -> Path: ...
    @property
    def state_dir(self) -> Path: ...
    @property
    def session_id(self) -> str: ...
    @property
    def resumed(self) -> bool: ...
    @property
    def fork(self) -> ForkSource | None: ...
    @property
    def session_state(self) -> SessionState: ...
    @property
    def env(self) -> dict[str, str]: ...
    @property
    def child_factory(self) -> Callable[[Sequence[str], Mapping[str, str], Path, tuple[int, int]], ChildLike]: ...

    def emit(self, event: SinkEvent) -> None: ...
    def take_prespawned(self) -> prespawn.Prespawned | None: ...
    def adopt(self, child: ChildLike) -> None: ...


def spawn_cli(launch: StartingLaunch, argv: list[str], stdin: bytes | None = None) -> ChildLike:
    """Start the CLI with ``argv`` (the launch's child factory) and adopt it; a per-turn CLI reads ``stdin`` (its
    prompt, if any) and then sees EOF."""
    try:
        child = launch.child_factory(argv, launch.env, launch.working_dir, window_size())
    except ProviderMissing as exc:
        raise ProviderMissing(exc.message, hint=launch.adapter.install_hint) from None
    launch.adopt(child)
    if stdin is not None:
        if stdin:
            child.send_bytes(stdin)
        child.close_stdin(after_flush=True)
    return child


def start_turn(launch: StartingLaunch, argv: list[str], stdin: bytes, text: str) -> None:
    """A per-turn CLI's turn: the CLI the entry point started with this first turn's argv (its stdin still open)
    when it was started exactly so, else a new one; a new headless session's first turn is kept as the next
    launch's plan (:mod:`agentlaunch.launch.early.early_turn`)."""
    plan = launch.plan
    assert plan is not None
    pending = launch.take_prespawned()
    skills = plan.placement.skills
    if pending is not None and (not pending.per_turn or (skills is not None and skills.changed)):
        prespawn.discard(pending)  # killed with its stdin open: it sent nothing
        pending = None
    adopted = prespawn.adopt(pending, argv, plan.extra_env, instructions_digest(plan), stdin)
    if adopted is not None:
        launch.adopt(adopted)
        adopted.close_stdin(after_flush=True)  # the end of its stdin: now it sends its first turn
    else:
        spawn_cli(launch, argv, stdin)
    opts, facts = launch.options, launch.session_state
    first = facts.turns == 1 and not facts.resumed and not opts.interactive and facts.first_prompt
    if first and opts.plan_key and launch.adapter.early_turn:
        from agentlaunch.launch.early.early_turn import turn_record

        turn = turn_record(argv, stdin, text, facts.first_prompt, launch.session_id, launch.clock.now())
        if turn is not None:
            kept = list(argv)
            if isinstance(at := turn["prompt_at"], int):
                kept[at] = ""
            remember_plan(plan, opts.plan_key, launch.session_id, launch.spec, launch.working_dir, launch.state_dir, kept, turn)


def plan_launch(launch: StartingLaunch) -> StartPlan:
    """``launch``'s plan: its instructions placed, its CLI's argv and environment, its prefix recorded."""
    opts = launch.options
    return plan_start(
        launch.spec,
        launch.driver,
        working_dir=launch.working_dir,
        state_dir=launch.state_dir,
        session_id=launch.session_id,
        resumed=launch.resumed,
        today=launch.clock.now().date(),
        templates_dir=opts.templates_dir,
        interactive=opts.interactive,
        interface=opts.native,
        force=opts.force,
        emit=launch.emit,
        forked_from=launch.fork.session_id if launch.fork else None,
    )


def start_launch(launch: StartingLaunch, plan: StartPlan) -> None:
    """A persistent CLI's process, adopted or started (not when the interface's turn starts it: native); a new
    headless session's plan is kept for the next launch's early start."""
    opts = launch.options
    if not launch.persistent or opts.native:
        return
    child, adopted = start_child(plan, launch.take_prespawned(), lambda argv: spawn_cli(launch, argv))
    if adopted:
        launch.adopt(child)
    # Only a persistent adapter's CLI is taken early (see build.take_prespawned): Codex's app-server is not.
    if opts.plan_key and not launch.resumed and not opts.interactive and launch.adapter.persistent:
        remember_plan(plan, opts.plan_key, launch.session_id, launch.spec, launch.working_dir, launch.state_dir)
