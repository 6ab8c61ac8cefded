"""Worktrees never touch what agentlaunch did not make: the user's branches, paths outside worktrees_dir,
the other entries of a listing when one repository is gone."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from agentlaunch import paths
from agentlaunch.worktrees import git_worktree as worktree
from testbed.agent_files import write_agent
from tests.support.cli_runs import run_cli_inprocess
from tests.support.git_repo import git, make_repo


def agent(agents_dir: Path, name: str = "wt", **extra: object) -> str:
    write_agent(agents_dir, name, {"provider": "fake", "model": "fake-1", "worktree": True, **extra})
    return name


def run(agents_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return run_cli_inprocess("run", *args, "--agents-dir", str(agents_dir), cwd=cwd)


def listing() -> list[dict[str, object]]:
    result = run_cli_inprocess("worktrees", "--json")
    assert result.returncode == 0, result.stderr
    rows: list[dict[str, object]] = json.loads(result.stdout)
    return rows


def branches(repo: Path) -> list[str]:
    return git(repo, "branch", "--format=%(refname:short)").split()


def test_removing_a_worktree_keeps_the_users_own_branch_it_adopted(agents_dir: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    git(repo, "branch", "develop")  # the user's, before agentlaunch ever ran
    name = agent(agents_dir, worktree_branch="develop")
    assert run(agents_dir, repo, name, "hi").returncode == 0
    removed = run_cli_inprocess("worktrees", "remove", name, cwd=repo)
    assert removed.returncode == 0, removed.stderr
    assert b"removed worktree" in removed.stderr
    assert b"kept branch develop: agentlaunch did not create it" in removed.stderr
    assert "develop" in branches(repo)


def test_a_branch_agentlaunch_created_stays_its_own_when_a_later_worktree_adopts_it(agents_dir: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    name = agent(agents_dir)
    assert run(agents_dir, repo, name, "hi").returncode == 0  # creates agentlaunch/wt
    kept = run_cli_inprocess("worktrees", "remove", name, "--keep-branch", cwd=repo)
    assert kept.returncode == 0 and "agentlaunch/wt" in branches(repo)
    assert run(agents_dir, repo, name, "again").returncode == 0  # adopts the kept branch
    removed = run_cli_inprocess("worktrees", "remove", name, cwd=repo)
    assert removed.returncode == 0 and b"deleted branch agentlaunch/wt" in removed.stderr
    assert "agentlaunch/wt" not in branches(repo)


def test_a_dangling_symlink_at_the_worktree_path_is_refused_and_nothing_lands_outside(agents_dir: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    outside = tmp_path / "outside" / "checkout"
    path = worktree.worktree_path(paths.state_dir() / "worktrees", repo.resolve(), "wt")
    path.parent.mkdir(parents=True)
    path.symlink_to(outside)
    result = run(agents_dir, repo, agent(agents_dir), "hi")
    assert result.returncode == 3, result.stderr
    assert b"is a symbolic link" in result.stderr and b"Traceback" not in result.stderr
    assert not outside.exists() and not outside.parent.exists()
    assert path.is_symlink() and listing() == []
    assert "agentlaunch/wt" not in branches(repo)


def test_a_symlinked_repository_folder_under_worktrees_dir_is_refused(agents_dir: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    path = worktree.worktree_path(paths.state_dir() / "worktrees", repo.resolve(), "wt")
    path.parent.parent.mkdir(parents=True)
    path.parent.symlink_to(elsewhere)
    result = run(agents_dir, repo, agent(agents_dir), "hi")
    assert result.returncode == 3 and b"is a symbolic link" in result.stderr
    assert list(elsewhere.iterdir()) == []


def test_one_deleted_repository_is_marked_and_the_others_still_listed(agents_dir: Path, tmp_path: Path) -> None:
    kept, gone = make_repo(tmp_path / "kept"), make_repo(tmp_path / "gone")
    name = agent(agents_dir)
    assert run(agents_dir, kept, name, "hi").returncode == 0
    assert run(agents_dir, gone, name, "hi").returncode == 0
    shutil.rmtree(gone)
    rows = {Path(str(r["repo"])).name: r for r in listing()}
    assert rows["kept"]["clean"] is True and rows["kept"]["problem"] is None
    assert rows["gone"]["clean"] is False and "git status failed" in str(rows["gone"]["problem"])
    table = run_cli_inprocess("worktrees")
    assert table.returncode == 0, table.stderr
    assert "git status failed" in table.stdout.decode() or "broken" in table.stdout.decode()
