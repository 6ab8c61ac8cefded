"""Starting a native interface: a terminal big enough, a runtime folder, the CLI's process (the one the entry point
started early, adopted when it was started exactly as this launch would), and this start kept for the next launch's
early start (:mod:`agentlaunch.launch.early.early_interface`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentlaunch import runtime_dirs
from agentlaunch.errors import UsageError
from agentlaunch.launch.early import early_interface, prespawn
from agentlaunch.launch.early.early_interface import EarlyInterface
from agentlaunch.launch.native.terminal import MIN_COLS, MIN_ROWS
from agentlaunch.launch.start import instructions_digest
from agentlaunch.launch.transport import Child

if TYPE_CHECKING:
    from agentlaunch.launch.native.ports import InterfaceStarting

InterfaceSpawner = Callable[[Sequence[str], Mapping[str, str], Path, tuple[int, int], Any], Child]


def spawn_interface(argv: Sequence[str], env: Mapping[str, str], cwd: Path, size: tuple[int, int], mode: Any) -> Child:
    """The real child: the CLI's interface on a PTY whose settings start as the user's terminal's."""
    return Child(argv, env, cwd, size=size, terminal=mode)


def remote_route(launch: InterfaceStarting, prompt: str) -> bool:
    """Codex's interface on agentlaunch's app-server (:func:`agentlaunch.launch.native.native_remote.applies`); its module,
    with the app-server's client and the WebSocket, is imported only for an adapter that has that route (Codex)."""
    if not getattr(launch.adapter, "remote_interface", False):
        return False
    from agentlaunch.launch.native import native_remote

    return native_remote.applies(launch, prompt)


def make_runtime_dir() -> Path:
    """A private folder for this launch's sockets and scripts (:func:`agentlaunch.runtime_dirs.make_for_launch`)."""
    return runtime_dirs.make_for_launch()


def fork_ids(fork: tuple[str, Mapping[str, object]] | None) -> tuple[str, ...]:
    """A fork's parent as its files name it: the session id, and the thread its provider keeps (Codex)."""
    if fork is None:
        return ()
    thread = fork[1].get("thread_id")
    return (fork[0], thread) if isinstance(thread, str) and thread != fork[0] else (fork[0],)


def check_size(size: tuple[int, int], cli: str) -> None:
    """Refuse a terminal too small to draw the CLI's interface in, with what to do instead."""
    cols, rows = size
    if cols < MIN_COLS or rows < MIN_ROWS:
        raise UsageError(
            f"the terminal is {cols}x{rows}; {cli}'s interface needs at least {MIN_COLS}x{MIN_ROWS}",
            hint="enlarge the window, or use the line chat: agentlaunch run AGENT --line",
        )


def adopt_early(launch: InterfaceStarting, pending: EarlyInterface | None, argv: list[str], env: dict[str, str]) -> Child | None:
    """The interface the entry point started from the last plan, when it was started exactly as this one."""
    if pending is None:
        return None
    plan = launch.plan
    if plan is None or (plan.placement.skills is not None and plan.placement.skills.changed):
        prespawn.discard(pending)  # it may have listed the skills before this launch rewrote them
        return None
    return early_interface.adopt(pending, argv, env, launch.working_dir, instructions_digest(plan))


def remember_start(launch: InterfaceStarting, argv: list[str], env: dict[str, str], runtime: Path, status: Path | None) -> None:
    """Keep this start for the next launch's early start: a new session of an agent without ``env``."""
    key, plan = launch.options.plan_key, launch.plan
    if key is None or plan is None or launch.resumed or launch.spec.env or not launch.adapter.early_interface:
        return
    spec = launch.spec
    inputs = [part.path for part in (spec.soul, spec.instructions, *spec.bundles) if part is not None]
    early_interface.remember(
        key,
        launch.state_dir,
        argv=argv,
        env=env,
        cwd=launch.working_dir,
        runtime=runtime,
        status=status,
        session_id=launch.session_id,
        instructions=plan.placement.path,
        digest=instructions_digest(plan),
        agent_yaml=spec.agent_dir / "agent.yaml",
        inputs=inputs,
        now=prespawn.moment() or launch.clock.now(),
    )
