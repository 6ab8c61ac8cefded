"""Before ``tmux up`` creates anything: can each agent start at all?

Each agent must load, its provider CLI must exist and be executable (as the
pane will find it: the pane gets the caller's ``PATH``), and its working
directory must be a directory agentlaunch can enter and read. Every agent is
checked and every problem reported together, so one run of ``up`` names all
that is wrong; nothing is created while any is.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentlaunch.definitions.spec import AgentSpec, load_agent, resolve_working_dir
from agentlaunch.errors import AgentlaunchError, ExitCode, UsageError
from agentlaunch.processes import resolve_command
from agentlaunch.providers import get_adapter


@dataclass(frozen=True)
class ReadyAgent:
    """An agent that passed the checks: its spec, the CLI it will run, and where."""

    name: str
    spec: AgentSpec
    command: str
    working_dir: Path


class PreflightFailed(AgentlaunchError):
    """One or more agents cannot start; the exit code is the first problem's (3 definition, 127 CLI missing, ...)."""

    def __init__(self, problems: list[tuple[str, AgentlaunchError]]) -> None:
        lines = []
        for name, exc in problems:
            for i, line in enumerate(exc.message.splitlines() or [""]):
                lines.append(f"agent {name}: {line}" if i == 0 else f"  {line}")
        hint = next((exc.hint for _, exc in problems if exc.hint), None)
        super().__init__("\n".join(lines) + "\nnothing was started", hint=hint)
        self.problems = problems
        self.exit_code = problems[0][1].exit_code


class WorkingDirUnusable(AgentlaunchError):
    exit_code = ExitCode.DEFINITION


WorkingDirFor = Callable[[AgentSpec], Path]
"""Where an agent runs (the caller's rule: agent.yaml's working_dir, a worktree, the current directory)."""


def default_working_dir(cwd: Path, state_dir: Path) -> WorkingDirFor:
    """agent.yaml's ``working_dir`` (relative to ``cwd``), else ``cwd``: what ``agentlaunch run`` does in the pane."""

    def where(spec: AgentSpec) -> Path:
        return cwd.resolve() if spec.working_dir is None else resolve_working_dir(spec, None, state_dir)

    return where


def usable_dir(path: Path, what: str) -> Path:
    """``path`` if it is a directory agentlaunch may enter and read, else a clear error."""
    if not path.is_dir():
        raise WorkingDirUnusable(f"{what} {path} does not exist or is not a directory")
    if not os.access(path, os.R_OK | os.X_OK):
        raise WorkingDirUnusable(f"{what} {path} cannot be entered or read (permissions)")
    return path


def planned_worktree(spec: AgentSpec, start: Path, state_dir: Path) -> Path:
    """Where the agent's worktree is (or will be made by its launch): refused now if it cannot be."""
    from agentlaunch.definitions.settings import load_settings
    from agentlaunch.worktrees import git_worktree as worktree

    base = load_settings().worktrees_dir or state_dir / "worktrees"
    entry, exists = worktree.plan(spec.name, start, base, spec.worktree_branch)
    return usable_dir(Path(entry.path), "worktree") if exists else Path(entry.path)


def check_agents(
    agents: Sequence[str],
    agents_dir: Path,
    state_dir: Path,
    working_dir_for: WorkingDirFor,
    *,
    worktree: bool = False,
    worktree_agents: Sequence[str] = (),
) -> list[ReadyAgent]:
    """Check every named agent (deduplicated, in order); :class:`PreflightFailed` lists every one that cannot start.

    ``worktree`` (every agent) and ``worktree_agents`` (those named) run in a worktree whatever agent.yaml says."""
    if not agents:
        raise UsageError("name at least one agent")
    ready: list[ReadyAgent] = []
    problems: list[tuple[str, AgentlaunchError]] = []
    for name in dict.fromkeys(agents):
        try:
            spec = load_agent(agents_dir, name, state_dir)
            adapter = get_adapter(spec.provider)
            try:
                command = resolve_command(spec.command or adapter.default_command)
            except AgentlaunchError as exc:
                yaml_file = spec.agent_dir / "agent.yaml"
                exc.hint = exc.hint or (f"check `command:` in {yaml_file}" if spec.command else adapter.install_hint)
                raise
            where = usable_dir(working_dir_for(spec), "working directory")
            if worktree or spec.worktree or name in worktree_agents:
                where = planned_worktree(spec, where, state_dir)
            ready.append(ReadyAgent(name, spec, command, where))
        except AgentlaunchError as exc:
            problems.append((name, exc))
    if problems:
        raise PreflightFailed(problems)
    return ready
