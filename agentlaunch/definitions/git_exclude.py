"""Keeping a delivered instructions file out of git: one anchored line in the repository's ``info/exclude``.

``delivery: file`` writes CLAUDE.md / AGENTS.md / GEMINI.md into the working
directory; inside a git working tree that file would show in ``git status``
and be swept up by ``git add -A``. :func:`exclude_from_git` finds the
repository the way git does (walking up to a ``.git`` directory, or a
``.git`` file whose ``gitdir:`` line points at a worktree's or submodule's
git dir, each checked to be a git directory as git checks one; a worktree's
``commondir`` names the shared repository, whose ``info/exclude`` git reads) and adds the path, relative to the work tree root
and anchored with a leading ``/``, once. The user's other lines are kept byte
for byte; the file is replaced atomically. This is pure file reading, no
``git`` process: a launch pays no fork for it, and works where git is not
installed.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentlaunch.datarecord import datarecord
from agentlaunch.fsutil import read_regular, write_atomic

GIT_FILE_LIMIT = 64 << 10  # a .git file or commondir is one short line
EXCLUDE_LIMIT = 16 << 20  # a larger exclude file is not one to rewrite
_SPECIAL = "\\*?["  # gitignore's wildcard characters, escaped with a backslash


@datarecord(frozen=True)
class GitRepo:
    """Where a path's repository keeps things: the work tree root and the directory holding ``info/exclude``."""

    work_tree: Path
    git_dir: Path
    common_dir: Path

    @property
    def exclude_file(self) -> Path:
        return self.common_dir / "info" / "exclude"


def _read_line(path: Path) -> str:
    return read_regular(path, GIT_FILE_LIMIT).decode("utf-8", "surrogateescape").strip()


_HEX = frozenset("0123456789abcdef")


def _valid_head(git_dir: Path) -> bool:
    """``HEAD`` as git's ``validate_headref`` accepts it: a symlink into ``refs/``, ``ref: refs/...``, or an object id."""
    head = git_dir / "HEAD"
    if head.is_symlink():
        return os.readlink(head).startswith("refs/")
    text = _read_line(head)
    if text.startswith("ref:"):
        return text[len("ref:") :].lstrip().startswith("refs/")
    return len(text) in (40, 64) and set(text) <= _HEX


def _common_dir(git_dir: Path) -> Path:
    """Where ``git_dir`` keeps objects and refs: its ``commondir`` (a linked worktree's) or itself."""
    if (git_dir / "commondir").is_file():
        return Path(os.path.normpath(git_dir / _read_line(git_dir / "commondir")))
    return git_dir


def is_git_dir(git_dir: Path) -> bool:
    """Whether git would take ``git_dir`` for a git directory (its ``is_git_directory``): a valid HEAD, and
    ``objects/`` and ``refs/`` folders in the common dir. Anything else a ``.git`` file may name (a home's
    ``.ssh``, an empty folder) is not a repository, and nothing is written there."""
    try:
        if not git_dir.is_dir() or not _valid_head(git_dir):
            return False
        common = _common_dir(git_dir)
        return (common / "objects").is_dir() and (common / "refs").is_dir()
    except (OSError, ValueError):
        return False


def find_repo(start: Path) -> GitRepo | None:
    """The git repository whose work tree holds ``start`` (a directory), or None outside any.

    As git looks: a ``.git`` folder that is no git directory is passed over (git
    keeps looking up); a ``.git`` file whose ``gitdir:`` names no git directory
    ends the search with None (git stops there: "not a git repository").
    """
    here = Path(os.path.abspath(start))
    for folder in (here, *here.parents):
        dot_git = folder / ".git"
        try:
            if dot_git.is_dir():
                git_dir = dot_git
                if not is_git_dir(git_dir):
                    continue
            elif dot_git.is_file():
                line = _read_line(dot_git)
                if not line.startswith("gitdir:"):
                    continue  # not a gitfile git would accept: it keeps looking up too
                git_dir = Path(os.path.normpath(folder / line[len("gitdir:") :].strip()))
                if not is_git_dir(git_dir):
                    return None
            else:
                continue
            common = _common_dir(git_dir)
        except (OSError, ValueError):
            continue
        return GitRepo(work_tree=folder, git_dir=git_dir, common_dir=common)
    return None


def exclude_pattern(relative: str) -> str:
    """An anchored gitignore line matching exactly ``relative`` (a path with ``/`` separators)."""
    escaped = "".join("\\" + c if c in _SPECIAL else c for c in relative)
    if escaped.endswith(" "):
        escaped = escaped[:-1] + "\\ "  # git drops trailing spaces unless escaped
    return "/" + escaped


def exclude_from_git(path: Path) -> str | None:
    """Add ``path`` to its repository's ``info/exclude`` unless there already; None, or a notice when that failed.

    Outside a git working tree (or for a path inside a ``.git`` directory) nothing is done.
    """
    repo = find_repo(path.parent)
    if repo is None:
        return None
    relative = Path(os.path.abspath(path)).relative_to(repo.work_tree)
    if ".git" in relative.parts:
        return None
    line = exclude_pattern(relative.as_posix()).encode("utf-8", "surrogateescape")
    target = repo.exclude_file
    try:
        try:
            current = read_regular(target, EXCLUDE_LIMIT)
        except FileNotFoundError:
            current = b""
        if line in (raw.rstrip(b"\r") for raw in current.split(b"\n")):
            return None
        target.parent.mkdir(parents=True, exist_ok=True)
        joined = current if not current or current.endswith(b"\n") else current + b"\n"
        write_atomic(target, joined + line + b"\n")
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
        return f"could not add {relative.as_posix()} to {target} ({why}): git status will show it"
    return None
