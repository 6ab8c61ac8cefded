"""`agentlaunch worktrees`: the git worktrees agentlaunch made for agents, and removing one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agentlaunch import paths
from agentlaunch.cli.common import HostOpt, JsonOpt, app, complete_agent, err, out
from agentlaunch.errors import RefusedOverwrite, TurnFailed, UsageError
from agentlaunch.visible import for_markup
from agentlaunch.worktrees import git_worktree as worktree
from agentlaunch.worktrees import setup_commands as worktree_setup

worktrees_app = typer.Typer(
    help="The git worktrees agents run in (worktree: true, --worktree): list them, remove one.",
    invoke_without_command=True,
)
app.add_typer(worktrees_app, name="worktrees")


def _ahead_behind(state: worktree.WorktreeState) -> str:
    if state.ahead is None or state.behind is None:
        return "–"
    return f"+{state.ahead} −{state.behind} ({state.compared_with})"


@worktrees_app.callback()
def worktrees_list(
    ctx: typer.Context,
    as_json: JsonOpt = False,
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent's.", autocompletion=complete_agent)] = None,
    host: HostOpt = None,
) -> None:
    """List the worktrees: agent, branch, path, clean or dirty, commits on no other branch, ahead/behind.

    Ahead/behind counts against the branch's upstream, else the repository's
    current branch. `agentlaunch worktrees remove AGENT` removes one.

    --host NAME lists those of that host of config.yaml (over ssh; exit codes 11, 12, 13 as docs/hosts.md says).

    Example: agentlaunch worktrees --json
    """
    if ctx.invoked_subcommand is not None:
        if host is not None:
            sub = ctx.invoked_subcommand
            raise UsageError(f"--host goes after the subcommand: agentlaunch worktrees {sub} AGENT --host NAME")
        return
    if host is not None:
        from agentlaunch.cli.on_host import flag, run_on, value

        given = [*flag(as_json, "--json"), *value(agent, "--agent")]
        raise typer.Exit(run_on(host, ["worktrees", *given], what="worktrees", agents=False, socket=False))
    states = [worktree.inspect(w) for w in worktree.registered(paths.state_dir()) if agent in (None, w.agent)]
    if as_json:
        print(json.dumps([s.as_dict() for s in states], indent=2, ensure_ascii=False))
        return
    if not states:
        err.print("no worktrees yet: an agent with `worktree: true` (or `run --worktree`) gets one on first use")
        return
    from rich.table import Table

    table = Table("agent", "branch", "path", "state", "unpushed", "ahead/behind", "repository")
    for s in states:
        w = s.worktree
        if s.problem is not None:
            state = f"broken: {s.problem}"
        else:
            state = "missing" if not s.present else (f"dirty ({s.dirty})" if s.dirty else "clean")
        cells = (w.agent, w.branch, w.path, state, str(s.only_here) if s.present else "–", _ahead_behind(s), w.repo)
        table.add_row(*(for_markup(c) for c in cells))
    out.print(table)


AgentArg = Annotated[str, typer.Argument(help="Whose worktree.", autocompletion=complete_agent, show_default=False)]
RepoOpt = Annotated[
    Path | None,
    typer.Option(
        "--repo", help="The repository (default: the one of the current directory, else the only one).", show_default=False
    ),
]


@worktrees_app.command("remove")
def worktrees_remove(
    agent: AgentArg,
    repo: RepoOpt = None,
    keep_branch: Annotated[bool, typer.Option("--keep-branch", help="Keep the agent's branch.")] = False,
    host: HostOpt = None,
) -> None:
    """Remove AGENT's worktree: only when it has no uncommitted changes and no commits found on no other branch.

    Its branch is deleted too when agentlaunch created it and git agrees it is
    merged (`git branch -d`), else kept: a branch of yours that the agent
    adopted (worktree_branch) is never deleted. Exit codes: 0 removed, 2 no such worktree, 4 refused (work
    would be lost, or an agent runs there), 3 git failed; with --host NAME (on that host of config.yaml, over ssh;
    --repo is a path there) also 11, 12 and 13.

    Example: agentlaunch worktrees remove reviewer
    """
    if host is not None:
        from agentlaunch.cli.on_host import flag, run_on, value

        given = [*value(str(repo) if repo is not None else None, "--repo"), *flag(keep_branch, "--keep-branch")]
        code = run_on(host, ["worktrees", "remove", agent, *given], what="worktrees remove", agents=False, socket=False)
        raise typer.Exit(code)
    state_dir = paths.state_dir()
    entry = _the_worktree(state_dir, agent, repo, "not removed")
    for line in worktree.remove(state_dir, entry, keep_branch=keep_branch):
        err.print(line, highlight=False)
    worktree_setup.forget(state_dir, entry.agent, Path(entry.path))  # its setup's record and log go with it


@worktrees_app.command("merge")
def worktrees_merge(agent: AgentArg, repo: RepoOpt = None, host: HostOpt = None) -> None:
    """Merge AGENT's worktree's branch into its base, then remove the worktree (the deck's M).

    The merge is `git merge --no-edit` in the repository's main work tree, which must be on the base (the branch's
    upstream, else the main work tree's branch) with nothing uncommitted; the worktree must have nothing uncommitted
    either. Then the worktree is removed as `worktrees remove` removes it. Exit codes: 0 merged and removed, 2 no
    such worktree, 4 refused (work would be lost, or an agent runs there: nothing merged), 1 git could not merge
    (aborted: nothing changed), 3 git failed; with --host NAME (on that host of config.yaml, over ssh; --repo is a
    path there) also 11, 12 and 13.

    Example: agentlaunch worktrees merge reviewer
    """
    if host is not None:
        from agentlaunch.cli.on_host import run_on, value

        given = value(str(repo) if repo is not None else None, "--repo")
        raise typer.Exit(run_on(host, ["worktrees", "merge", agent, *given], what="worktrees merge", agents=False, socket=False))
    from agentlaunch.worktrees.merge import merge_branch

    state_dir = paths.state_dir()
    entry = _the_worktree(state_dir, agent, repo, "nothing merged")
    code, said = merge_branch(entry.repo, entry.path, entry.branch, worktree.inspect(entry).compared_with)
    if code == 4:
        raise RefusedOverwrite(said)
    if code != 0:
        raise TurnFailed(said, hint=f"merge it yourself in {entry.repo}, then agentlaunch worktrees remove {agent}")
    err.print(said, highlight=False)
    for line in worktree.remove(state_dir, entry):
        err.print(line, highlight=False)
    worktree_setup.forget(state_dir, entry.agent, Path(entry.path))


def _the_worktree(state_dir: Path, agent: str, repo: Path | None, refused: str) -> worktree.Worktree:
    """AGENT's worktree (in ``repo``'s repository when given, or when it has several); refused while an agent runs
    in it (``refused``: what was not done)."""
    mine = [w for w in worktree.registered(state_dir) if w.agent == agent]
    if repo is not None or len(mine) > 1:
        where = worktree.main_work_tree((repo or Path.cwd()).expanduser().resolve())
        mine = [w for w in mine if Path(w.repo) == where]
    if not mine:
        known = ", ".join(sorted({w.agent for w in worktree.registered(state_dir)})) or "none"
        raise UsageError(f"no worktree of agent {agent!r} known here (agents with worktrees: {known})")
    from agentlaunch.fleet.model import running as running_sessions

    running = [r for r in running_sessions() if r.data.get("working_dir") == mine[0].path]
    if running:
        raise RefusedOverwrite(
            f"{mine[0].path}: agent {running[0].agent} is running there (pid {running[0].data.get('pid')}): {refused}",
            hint="end it first (Ctrl-D in its chat, or agentlaunch tmux down)",
        )
    return mine[0]
