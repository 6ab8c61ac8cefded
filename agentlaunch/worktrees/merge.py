"""Merging a finished worktree's branch into its base in the repository's main work tree: the deck's ``M`` and
``agentlaunch worktrees merge`` (which then removes the worktree, as ``worktrees remove`` does)."""

from __future__ import annotations

import os
import subprocess


def run_git(cwd: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``git -C cwd ARGS`` as text, never raising for git's own failure. Without git's optional locks: a ``status``
    read here must never hold the index lock a person's (or an agent's) ``git add`` in that tree needs meanwhile."""
    return subprocess.run(
        ["git", "-C", cwd, *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
        check=False,
        errors="replace",
        env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
    )


def merge_branch(repo: str, path: str, branch: str, base: str | None) -> tuple[int, str]:
    """Merge ``branch`` (the worktree at ``path``) into ``base`` in the main work tree ``repo``: an exit code (0, 4
    refused, 1 git could not merge) and one line saying what happened.

    Refused (4) where work could be lost: no base, uncommitted changes in the worktree (they would stay behind), the
    main work tree on another branch than the base or with uncommitted changes of its own. A merge git cannot finish
    is aborted (1), the main work tree as it was.
    """
    if base is None:
        return 4, f"{branch}: no base branch to merge into: not merged"
    if run_git(path, "status", "--porcelain").stdout.strip():
        return 4, f"uncommitted changes in {path}: commit them first (nothing merged)"
    current = run_git(repo, "symbolic-ref", "--quiet", "--short", "HEAD").stdout.strip()
    if current != base:
        return 4, f"{repo} is on {current or 'a detached HEAD'}, not {base}: not merged"
    if run_git(repo, "status", "--porcelain", "--untracked-files=no").stdout.strip():
        return 4, f"{repo} has uncommitted changes: not merged"
    merged = run_git(repo, "merge", "--no-edit", branch)
    if merged.returncode != 0:
        run_git(repo, "merge", "--abort")
        said = (merged.stdout + merged.stderr).strip().splitlines()
        why = said[-1] if said else "failed"
        return 1, f"git could not merge {branch} into {base} ({why}): aborted, nothing changed"
    return 0, f"merged {branch} into {base}"
