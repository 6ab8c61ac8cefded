"""delivery: file keeps its instructions file out of git (issue 13), checked with the real git in tmp repositories."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from agentlaunch.definitions.git_exclude import exclude_from_git, exclude_pattern, find_repo
from tests.support.cli_runs import run_cli
from tests.support.git_repo import git, make_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def clean(path: Path) -> bool:
    """Nothing for git status to show and nothing git add -A would stage."""
    return git(path, "status", "--porcelain", "--untracked-files=all") == "" and git(path, "add", "-A", "--dry-run") == ""


def test_a_run_with_delivery_file_leaves_git_status_clean(agents_dir: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    work = repo / "sub dir"
    work.mkdir()
    config = yaml.safe_load((agents_dir / "demo" / "agent.yaml").read_text())
    (agents_dir / "demo" / "agent.yaml").write_text(yaml.safe_dump({**config, "delivery": "file"}))
    for _ in range(2):
        done = run_cli("run", "demo", "hello", "--working-dir", str(work), "--agents-dir", str(agents_dir), cwd=tmp_path)
        assert done.returncode == 0, done.stderr.decode()
    assert (work / "CLAUDE.md").is_file()
    assert b"I read CLAUDE.md" in done.stdout
    assert clean(repo)
    assert (repo / ".git" / "info" / "exclude").read_text().splitlines().count("/sub dir/CLAUDE.md") == 1


def test_the_users_exclude_file_is_kept_byte_for_byte(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    exclude = repo / ".git" / "info" / "exclude"
    mine = b"# my excludes\r\n*.log\r\n!keep.log\n/build"  # CRLF lines, a negation, no final newline
    exclude.write_bytes(mine)
    (repo / "CLAUDE.md").write_text("agent\n")
    assert exclude_from_git(repo / "CLAUDE.md") is None
    assert exclude.read_bytes() == mine + b"\n/CLAUDE.md\n"
    assert exclude_from_git(repo / "CLAUDE.md") is None  # once
    assert exclude.read_bytes() == mine + b"\n/CLAUDE.md\n"
    assert clean(repo)


def test_a_missing_info_exclude_is_created(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    shutil.rmtree(repo / ".git" / "info", ignore_errors=True)
    (repo / "AGENTS.md").write_text("agent\n")
    assert exclude_from_git(repo / "AGENTS.md") is None
    assert (repo / ".git" / "info" / "exclude").read_text() == "/AGENTS.md\n"
    assert clean(repo)


def test_a_worktree_uses_the_shared_exclude_file(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    tree = tmp_path / "tree"
    git(repo, "worktree", "add", "-q", str(tree))
    assert (tree / ".git").is_file()  # a gitfile: "gitdir: …/repo/.git/worktrees/tree"
    found = find_repo(tree)
    assert found is not None and found.work_tree == tree
    assert found.common_dir.resolve() == Path(git(tree, "rev-parse", "--git-common-dir").strip()).resolve()
    (tree / "GEMINI.md").write_text("agent\n")
    assert exclude_from_git(tree / "GEMINI.md") is None
    assert "/GEMINI.md" in (repo / ".git" / "info" / "exclude").read_text().splitlines()
    assert clean(tree) and clean(repo)


def test_a_submodule_uses_its_own_git_dir(tmp_path: Path) -> None:
    make_repo(tmp_path / "lib")
    outer = make_repo(tmp_path / "outer")
    git(outer, "submodule", "add", "-q", str(tmp_path / "lib"), "vendor/lib")
    git(outer, "commit", "-qm", "add lib")
    inner = outer / "vendor" / "lib"
    (inner / "CLAUDE.md").write_text("agent\n")
    assert exclude_from_git(inner / "CLAUDE.md") is None
    git_dir = Path(git(inner, "rev-parse", "--absolute-git-dir").strip())
    assert "/CLAUDE.md" in (git_dir / "info" / "exclude").read_text().splitlines()
    assert clean(inner) and clean(outer)


def test_wildcards_in_a_path_are_escaped(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    odd = repo / "a[1]*?"
    odd.mkdir()
    (odd / "CLAUDE.md").write_text("agent\n")
    other = repo / "a1x"
    other.mkdir()
    (other / "CLAUDE.md").write_text("theirs\n")  # would match the unescaped pattern
    assert exclude_pattern("a[1]*?/CLAUDE.md") == "/a\\[1]\\*\\?/CLAUDE.md"
    assert exclude_from_git(odd / "CLAUDE.md") is None
    assert git(repo, "status", "--porcelain", "--untracked-files=all").splitlines() == ["?? a1x/CLAUDE.md"]


def test_outside_a_repository_nothing_is_done(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "CLAUDE.md").write_text("agent\n")
    assert find_repo(plain) is None
    assert exclude_from_git(plain / "CLAUDE.md") is None
    assert sorted(p.name for p in plain.iterdir()) == ["CLAUDE.md"]


def test_an_exclude_that_cannot_be_written_is_a_notice_not_a_failure(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    info = repo / ".git" / "info"
    shutil.rmtree(info, ignore_errors=True)
    info.write_text("not a folder\n")
    (repo / "CLAUDE.md").write_text("agent\n")
    notice = exclude_from_git(repo / "CLAUDE.md")
    assert notice is not None and "could not add CLAUDE.md to" in notice and "git status will show it" in notice
    assert info.read_text() == "not a folder\n"
