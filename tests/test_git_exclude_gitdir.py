"""A ``.git`` file's ``gitdir:`` is followed only to a git directory, checked as git checks one.

Anyone can write a ``.git`` file into a folder an agent runs in (a cloned
project, a tarball); pointed at ``~/.ssh`` it made ``delivery: file`` create
``~/.ssh/info/exclude``. git itself refuses such a file ("not a git
repository"), so agentlaunch finds no repository there and writes nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from agentlaunch.definitions.git_exclude import exclude_from_git, find_repo
from tests.support.cli_runs import run_cli
from tests.support.git_repo import git, make_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize(
    "make_target",
    [
        lambda t: t,  # an empty folder
        lambda t: (t / "HEAD").write_text("ref: refs/heads/main\n") and t,  # HEAD alone: no objects, no refs
        lambda t: ((t / "objects").mkdir(), (t / "refs").mkdir(), (t / "HEAD").write_text("not a ref\n")) and t,
    ],
    ids=["empty", "head-only", "bad-head"],
)
def test_a_gitdir_line_pointing_at_something_not_a_git_directory_writes_nothing(tmp_path: Path, make_target: object) -> None:
    target = tmp_path / "private"
    target.mkdir()
    make_target(target)  # type: ignore[operator]
    before = files_under(target)
    work = tmp_path / "project"
    work.mkdir()
    (work / ".git").write_text(f"gitdir: {target}\n")
    assert find_repo(work) is None
    assert exclude_from_git(work / "CLAUDE.md") is None
    assert files_under(target) == before


def test_git_refuses_the_same_gitdir_line(tmp_path: Path) -> None:
    """The reference: git's own answer for the shape the test above writes."""
    import subprocess

    target = tmp_path / "private"
    target.mkdir()
    work = tmp_path / "project"
    work.mkdir()
    (work / ".git").write_text(f"gitdir: {target}\n")
    done = subprocess.run(["git", "-C", str(work), "status"], capture_output=True, text=True, check=False)
    assert done.returncode != 0 and "not a git repository" in done.stderr


def test_a_run_with_delivery_file_under_a_foreign_gitdir_creates_nothing_there(agents_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "dot-ssh"
    target.mkdir()
    (target / "id_ed25519").write_text("secret\n")
    work = tmp_path / "project"
    work.mkdir()
    (work / ".git").write_text(f"gitdir: {target}\n")
    config = yaml.safe_load((agents_dir / "demo" / "agent.yaml").read_text())
    (agents_dir / "demo" / "agent.yaml").write_text(yaml.safe_dump({**config, "delivery": "file"}))
    done = run_cli("run", "demo", "hello", "--working-dir", str(work), "--agents-dir", str(agents_dir), cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    assert files_under(target) == ["id_ed25519"]


def test_real_repositories_worktrees_and_submodule_style_gitdirs_are_still_found(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked))
    assert find_repo(repo) is not None and find_repo(linked) is not None
    assert find_repo(linked).common_dir == repo / ".git"  # type: ignore[union-attr]
    moved = tmp_path / "separate"
    git(tmp_path, "init", "-q", "--separate-git-dir", str(tmp_path / "separate.git"), str(moved))
    found = find_repo(moved)
    assert found is not None and found.git_dir == tmp_path / "separate.git"
