"""A git worktree per agent: created on first use, reused afterwards, listed, and removed only when nothing is lost.

An agent with ``worktree: true`` (or ``run --worktree``) runs in a worktree of
the repository its working directory belongs to, on a branch of its own
(``worktree_branch``, default ``agentlaunch/AGENT``). The worktree lives at

    <worktrees dir>/<repository name>-<8 hex of its path>/<agent>

where the worktrees dir is ``worktrees_dir`` in ``config.yaml``, else
``<state dir>/worktrees``. agentlaunch keeps a list of the worktrees it made
(``<state dir>/worktrees.json``): that is what ``agentlaunch worktrees``
shows, and the only worktrees it will remove. Every git call is an argument
list (``git -C DIR ...``); creation is serialized by a lock file, so agents
started together in one ``tmux up`` do not race on the repository.

A removed worktree is remembered there too (the last :data:`FORMER_KEPT`):
an agent whose session ran in it comes back in a new worktree of the same
repository (:mod:`agentlaunch.live.comeback`), made from its HEAD at that
moment, at the same path unless ``worktrees_dir`` changed meanwhile.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from hashlib import sha256
from pathlib import Path
from typing import Any

from agentlaunch.errors import AgentlaunchError, ExitCode, RefusedOverwrite
from agentlaunch.fsutil import exclusive_lock, read_regular, write_atomic

REGISTRY = "worktrees.json"
LOCK = "worktrees.lock"
REGISTRY_LIMIT = 4 << 20
FORMER_KEPT = 200  # removed worktrees remembered, newest last: enough for every agent's last merge


class WorktreeError(AgentlaunchError):
    """A worktree cannot be made or used here (no repository, no commit, a taken branch, a path not ours)."""

    exit_code = ExitCode.DEFINITION


class GitMissing(AgentlaunchError):
    exit_code = ExitCode.PROVIDER_MISSING


@dataclass(frozen=True)
class Worktree:
    """One worktree agentlaunch made for an agent."""

    agent: str
    repo: str  # the main work tree of the repository
    path: str
    branch: str
    created: str


def default_branch(agent: str) -> str:
    return f"agentlaunch/{agent}"


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``git -C cwd ARGS``, its output as text; a failure (with ``check``) is a WorktreeError with git's words."""
    binary = shutil.which("git")
    if binary is None:
        raise GitMissing("git is not installed (or not on PATH): a worktree needs it", hint="install git")
    proc = subprocess.run(
        [binary, "-C", str(cwd), *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"},  # reads take no index lock
    )
    if check and proc.returncode != 0:
        said = proc.stderr.strip().splitlines()
        raise WorktreeError(f"git {args[0]} failed in {cwd}: {said[-1] if said else f'exit {proc.returncode}'}")
    return proc


def main_work_tree(start: Path) -> Path:
    """The main work tree of the repository ``start`` is in (also from inside a linked worktree)."""
    inside = git(start, "rev-parse", "--path-format=absolute", "--git-common-dir", check=False)
    if inside.returncode != 0:
        raise WorktreeError(
            f"{start} is not in a git repository: an agent with a worktree needs one",
            hint="run it from inside a repository (or `git init` one and commit), or drop worktree: true / --worktree",
        )
    common = Path(inside.stdout.strip())
    if common.name == ".git":
        return common.parent.resolve()
    bare = git(start, "rev-parse", "--is-bare-repository").stdout.strip() == "true"
    if bare:
        raise WorktreeError(f"{start} is in a bare repository ({common}): it has no work tree to branch from")
    return Path(git(start, "rev-parse", "--show-toplevel").stdout.strip()).resolve()


def worktree_path(base: Path, repo: Path, agent: str) -> Path:
    digest = sha256(str(repo).encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return base / f"{repo.name}-{digest}" / agent


def _listed(repo: Path) -> dict[Path, str | None]:
    """Every worktree git knows for ``repo``: path -> branch (None when detached)."""
    found: dict[Path, str | None] = {}
    current: Path | None = None
    for line in git(repo, "worktree", "list", "--porcelain").stdout.splitlines():
        if line.startswith("worktree "):
            current = Path(line[len("worktree ") :]).resolve()
            found[current] = None
        elif line.startswith("branch refs/heads/") and current is not None:
            found[current] = line[len("branch refs/heads/") :]
        elif line.startswith("prunable") and current is not None:
            del found[current]  # its folder was deleted: `git worktree prune` forgets it before the next `add`
            current = None
    return found


def plan(agent: str, start: Path, base: Path, branch: str | None = None) -> tuple[Worktree, bool]:
    """The worktree ``agent`` would use for the repository of ``start``, and whether it exists already.

    Nothing is created. Refused, with a clear message: a directory outside any
    repository, a repository without a commit, a branch checked out in another
    worktree, a path that exists and is not this repository's worktree on that branch.
    """
    branch = branch or default_branch(agent)
    repo = main_work_tree(start)
    if git(repo, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode != 0:
        raise WorktreeError(
            f"the repository {repo} has no commits yet: a worktree needs a commit to branch from",
            hint="commit something first (git commit --allow-empty -m start)",
        )
    if git(repo, "check-ref-format", "--branch", branch, check=False).returncode != 0:
        raise WorktreeError(f"{branch!r} is not a valid branch name for git")
    # The folders agentlaunch makes under the worktrees dir are never symlinks: one there (dangling or not) would
    # take the checkout somewhere outside it. The worktrees dir itself may be one (the user's choice).
    path = worktree_path(base.resolve(), repo, agent)
    for part in (path.parent, path):
        if part.is_symlink():
            raise WorktreeError(
                f"{part} is a symbolic link (to {os.readlink(part)}): agentlaunch makes worktrees only inside "
                f"{base.resolve()} and will not follow it",
                hint="remove the link, or set worktrees_dir in config.yaml to another folder",
            )
    listed = _listed(repo)
    entry = Worktree(agent, str(repo), str(path), branch, datetime.now(UTC).isoformat(timespec="seconds"))
    if path in listed:
        if listed[path] != branch:
            raise WorktreeError(
                f"{path} is a worktree of {repo} on {listed[path] or 'a detached HEAD'}, not on {branch}",
                hint="switch it back (git -C PATH switch BRANCH), or remove it with `agentlaunch worktrees remove`",
            )
        return entry, True
    if os.path.lexists(path):
        raise WorktreeError(
            f"{path} exists and is not a worktree of {repo}: agentlaunch will not use or replace it",
            hint="move it away, or set worktrees_dir in config.yaml to another folder",
        )
    taken = next((p for p, b in listed.items() if b == branch), None)
    if taken is not None:
        raise WorktreeError(
            f"branch {branch} is already checked out at {taken}: git allows a branch in one worktree only",
            hint="choose another with worktree_branch: in agent.yaml, or free that worktree",
        )
    return entry, False


def _locked(state_dir: Path) -> contextlib.AbstractContextManager[None]:
    state_dir.mkdir(parents=True, exist_ok=True)
    return exclusive_lock(state_dir / LOCK)


def ensure(agent: str, start: Path, base: Path, state_dir: Path, branch: str | None = None) -> tuple[Path, bool]:
    """The agent's worktree for the repository of ``start``, created when missing; (path, created now)."""
    entry, created = ensure_entry(agent, start, base, state_dir, branch)
    return Path(entry.path), created


def ensure_entry(
    agent: str,
    start: Path,
    base: Path,
    state_dir: Path,
    branch: str | None = None,
    on_create: Callable[[Worktree], None] | None = None,
) -> tuple[Worktree, bool]:
    """:func:`ensure`, giving the worktree's entry (its repository and branch too).

    ``on_create`` is called with the entry once git made it, still under the lock
    (its setup is noted as to come before another launch can see the worktree).
    """
    with _locked(state_dir):
        entry, exists = plan(agent, start, base, branch)
        path = Path(entry.path)
        if not exists:
            path.parent.mkdir(parents=True, exist_ok=True)
            # A folder deleted by hand stays registered (its branch taken) until pruned.
            git(Path(entry.repo), "worktree", "prune", check=False)
            has_branch = git(Path(entry.repo), "show-ref", "--verify", "--quiet", f"refs/heads/{entry.branch}", check=False)
            if has_branch.returncode == 0:  # the user's, or kept from an earlier worktree: its commits carry on
                git(Path(entry.repo), "worktree", "add", str(path), entry.branch)
            else:
                # Noted before it exists: a kill between the two leaves a note of a branch that may not exist
                # (harmless: `branch -d` of a missing branch fails), never a branch of ours taken for the user's.
                _note_created(state_dir, entry)
                git(Path(entry.repo), "worktree", "add", "-b", entry.branch, str(path), "HEAD")
            if on_create is not None:
                on_create(entry)
        _remember(state_dir, entry)
        return entry, not exists


# -- the list of what agentlaunch made -------------------------------------------------------


def _load(state_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_regular(state_dir / REGISTRY, REGISTRY_LIMIT))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _entries(items: object) -> list[Worktree]:
    found = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and all(isinstance(item.get(k), str) for k in ("agent", "repo", "path", "branch")):
            found.append(Worktree(item["agent"], item["repo"], item["path"], item["branch"], str(item.get("created", ""))))
    return found


def _read(state_dir: Path) -> tuple[list[Worktree], set[tuple[str, str]]]:
    """The registry: the worktrees agentlaunch made, and the (repo, branch) pairs whose branch it created."""
    data = _load(state_dir)
    created = data.get("created_branches", [])
    created = created if isinstance(created, list) else []
    pairs = {(p[0], p[1]) for p in created if isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)}
    return _entries(data.get("worktrees", [])), pairs


def former(state_dir: Path, agent: str, path: Path) -> Worktree | None:
    """The worktree agentlaunch made for ``agent`` at ``path``: still listed (its folder may be gone), else removed
    by agentlaunch (the latest at that path); None when it never made one there."""
    data = _load(state_dir)
    listed = _entries(data.get("worktrees", [])) + _entries(data.get("removed", []))[::-1]
    return next((w for w in listed if w.agent == agent and Path(w.path) == path), None)


def registered(state_dir: Path) -> list[Worktree]:
    """The worktrees agentlaunch made, as it noted them (an unreadable list is an empty one, never a crash)."""
    return _read(state_dir)[0]


def _write(
    state_dir: Path, items: list[Worktree], created: set[tuple[str, str]] | None = None, gone: Worktree | None = None
) -> None:
    """Write the registry (``created`` None: as it was); ``gone``: a worktree removed now, remembered for its agent's
    comeback."""
    if created is None:
        created = _read(state_dir)[1]
    removed = _entries(_load(state_dir).get("removed", [])) + ([gone] if gone is not None else [])
    payload = {
        "worktrees": [asdict(w) for w in items],
        "created_branches": [list(p) for p in sorted(created)],
        "removed": [asdict(w) for w in removed[-FORMER_KEPT:]],
    }
    write_atomic(state_dir / REGISTRY, (json.dumps(payload, indent=1) + "\n").encode())


def _note_created(state_dir: Path, entry: Worktree) -> None:
    items, created = _read(state_dir)
    _write(state_dir, items, created | {(entry.repo, entry.branch)})


def _remember(state_dir: Path, entry: Worktree) -> None:
    items = [w for w in registered(state_dir) if w.path != entry.path]
    kept = next((w for w in registered(state_dir) if w.path == entry.path), None)
    items.append(kept if kept is not None and kept.branch == entry.branch else entry)
    _write(state_dir, sorted(items, key=lambda w: (w.repo, w.agent)))


# -- state and removal ----------------------------------------------------------------------


@dataclass(frozen=True)
class WorktreeState:
    """What ``agentlaunch worktrees`` shows of one."""

    worktree: Worktree
    present: bool
    dirty: int  # changed or untracked files
    only_here: int  # commits on its branch and on no other branch or remote: lost if it went
    ahead: int | None
    behind: int | None
    compared_with: str | None  # the upstream, else the main work tree's branch
    problem: str | None = None  # git could not read it (its repository deleted or damaged): what git said

    def as_dict(self) -> dict[str, Any]:
        clean = self.present and not self.dirty and self.problem is None
        return {
            **asdict(self.worktree),
            "present": self.present,
            "dirty": self.dirty,
            "clean": clean,
            "unpushed": self.only_here,
            "ahead": self.ahead,
            "behind": self.behind,
            "compared_with": self.compared_with,
            "problem": self.problem,
        }


def inspect(entry: Worktree) -> WorktreeState:
    """Dirty or clean, commits found only on its branch, ahead/behind of its upstream (else the main branch).

    A worktree git cannot read (its repository was deleted or damaged) is
    returned with ``problem`` set to git's words, so that a listing shows the
    others; :func:`remove` refuses it.
    """
    try:
        return _inspect(entry)
    except WorktreeError as exc:
        return WorktreeState(entry, Path(entry.path).exists(), 0, 0, None, None, None, problem=exc.message)


def _inspect(entry: Worktree) -> WorktreeState:
    path = Path(entry.path)
    if not (path / ".git").exists():
        return WorktreeState(entry, False, 0, 0, None, None, None)
    dirty = len([x for x in git(path, "status", "--porcelain", "--untracked-files=all").stdout.splitlines() if x])
    others = [
        ref
        for ref in git(path, "for-each-ref", "--format=%(refname)", "refs/heads", "refs/remotes").stdout.split()
        if ref != f"refs/heads/{entry.branch}"
    ]
    only_here = int(git(path, "rev-list", "--count", "HEAD", "--not", *others, "--").stdout.strip() or 0)
    upstream = git(path, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}", check=False)
    against = upstream.stdout.strip() if upstream.returncode == 0 else None
    if against is None:
        main = git(Path(entry.repo), "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
        against = main.stdout.strip() if main.returncode == 0 and main.stdout.strip() != entry.branch else None
    ahead = behind = None
    if against:
        counts = git(path, "rev-list", "--left-right", "--count", f"HEAD...{against}", check=False).stdout.split()
        if len(counts) == 2:
            ahead, behind = int(counts[0]), int(counts[1])
    return WorktreeState(entry, True, dirty, only_here, ahead, behind, against)


def remove(state_dir: Path, entry: Worktree, *, keep_branch: bool = False) -> list[str]:
    """Remove a worktree agentlaunch made, only when nothing would be lost; what was done, as lines."""
    with _locked(state_dir):
        state = _inspect(entry)  # git's failure is the command's (exit 3), with git's words
        done: list[str] = []
        if state.present:
            if state.dirty:
                raise RefusedOverwrite(
                    f"{entry.path} has {state.dirty} uncommitted change(s): not removed",
                    hint="commit or discard them first (git -C PATH status)",
                )
            if state.only_here:
                raise RefusedOverwrite(
                    f"{entry.path}: branch {entry.branch} has {state.only_here} commit(s) on no other branch or remote: "
                    "not removed",
                    hint="push or merge them first; to throw them away, use git worktree remove yourself",
                )
            git(Path(entry.repo), "worktree", "remove", entry.path)
            done.append(f"removed worktree {entry.path}")
        else:
            git(Path(entry.repo), "worktree", "prune", check=False)
            done.append(f"{entry.path} was already gone; forgotten")
        items, created = _read(state_dir)
        if not keep_branch and (entry.repo, entry.branch) not in created:
            done.append(f"kept branch {entry.branch}: agentlaunch did not create it")
        elif keep_branch:
            pass  # asked to keep it
        elif git(Path(entry.repo), "branch", "-d", entry.branch, check=False).returncode == 0:
            done.append(f"deleted branch {entry.branch}")
            created.discard((entry.repo, entry.branch))
        else:
            done.append(f"kept branch {entry.branch}")
        _write(state_dir, [w for w in items if w.path != entry.path], created, gone=entry)
        return done
