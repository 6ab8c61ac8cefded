"""A git worktree per agent, with real git: made on first use, reused, listed, removed only when nothing is lost."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agentlaunch import paths
from agentlaunch.worktrees import git_worktree as worktree
from testbed.agent_files import write_agent
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.git_repo import git, make_repo


def agent(agents_dir: Path, name: str = "wt", **extra: object) -> str:
    write_agent(agents_dir, name, {"provider": "fake", "model": "fake-1", **extra})
    return name


def run(agents_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return run_cli_inprocess("run", *args, "--agents-dir", str(agents_dir), cwd=cwd)


def listing() -> list[dict[str, object]]:
    result = run_cli_inprocess("worktrees", "--json")
    assert result.returncode == 0, result.stderr
    rows: list[dict[str, object]] = json.loads(result.stdout)
    return rows


def test_a_worktree_is_made_on_first_use_reused_after_and_sessions_follow_it(agents_dir: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    name = agent(agents_dir, worktree=True)
    first = run(agents_dir, repo, name, "hello")
    assert first.returncode == 0, first.stderr
    (row,) = listing()
    path = Path(str(row["path"]))
    assert b"created git worktree " + str(path).encode() + b" on branch agentlaunch/wt" in first.stderr
    assert path == (paths.state_dir() / "worktrees").resolve() / f"proj-{path.parent.name.split('-')[-1]}" / "wt"
    assert row["branch"] == "agentlaunch/wt" and row["repo"] == str(repo.resolve()) and row["clean"] is True
    assert str(path) in git(repo, "worktree", "list")
    assert git(path, "branch", "--show-current").strip() == "agentlaunch/wt"

    again = run(agents_dir, repo, name, "-c", "more")  # -c finds the session by the worktree it ran in
    assert again.returncode == 0, again.stderr
    assert b"created git worktree" not in again.stderr and len(listing()) == 1
    sessions = json.loads(run_cli_inprocess("sessions", "--json").stdout)
    assert [s["working_dir"] for s in sessions] == [str(path)] and sessions[0]["turns"] == 2
    # Started from a subfolder, or from inside the worktree itself: the same worktree.
    (repo / "sub").mkdir()
    assert run(agents_dir, repo / "sub", name, "-c", "from below").returncode == 0
    assert run(agents_dir, path, name, "-c", "from inside").returncode == 0
    assert len(listing()) == 1 and json.loads(run_cli_inprocess("sessions", "--json").stdout)[0]["turns"] == 4


def test_run_worktree_asks_for_one_without_agent_yaml_saying_so(agents_dir: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    name = agent(agents_dir, "plain")
    assert run(agents_dir, repo, name, "--worktree", "hi").returncode == 0
    assert [r["agent"] for r in listing()] == ["plain"]
    assert run(agents_dir, repo, name, "hi").returncode == 0  # without the flag: the repository itself
    assert {s["working_dir"] for s in json.loads(run_cli_inprocess("sessions", "--json").stdout)} == {
        str(repo.resolve()),
        str(listing()[0]["path"]),
    }


def test_a_directory_outside_any_repository_is_refused(agents_dir: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    result = run(agents_dir, plain, agent(agents_dir, worktree=True), "hi")
    assert result.returncode == 3
    assert b"is not in a git repository: an agent with a worktree needs one" in result.stderr
    assert listing() == []


def test_a_repository_with_no_commits_is_refused(agents_dir: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    result = run(agents_dir, empty, agent(agents_dir, worktree=True), "hi")
    assert result.returncode == 3 and b"has no commits yet" in result.stderr and b"git commit --allow-empty" in result.stderr
    assert git(empty, "worktree", "list").count("\n") == 1


def test_a_branch_checked_out_elsewhere_is_refused(agents_dir: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    current = git(repo, "branch", "--show-current").strip()
    result = run(agents_dir, repo, agent(agents_dir, worktree=True, worktree_branch=current), "hi")
    assert result.returncode == 3, result.stderr
    assert f"branch {current} is already checked out at {repo.resolve()}".encode() in result.stderr
    assert b"worktree_branch:" in result.stderr


def test_a_bad_branch_name_is_a_definition_error(agents_dir: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    result = run(agents_dir, repo, agent(agents_dir, worktree=True, worktree_branch="../evil"), "hi")
    assert result.returncode == 3 and b"worktree_branch" in result.stderr and b"not a usable branch name" in result.stderr


def test_a_path_that_exists_and_is_not_ours_is_refused_and_left_alone(agents_dir: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    target = worktree.worktree_path((paths.state_dir() / "worktrees"), repo.resolve(), "wt")
    target.mkdir(parents=True)
    (target / "mine.txt").write_text("keep me")
    result = run(agents_dir, repo, agent(agents_dir, worktree=True), "hi")
    assert result.returncode == 3 and b"exists and is not a worktree of" in result.stderr
    assert (target / "mine.txt").read_text() == "keep me" and listing() == []


def test_a_branch_left_by_an_earlier_worktree_is_reused_with_its_commits(agents_dir: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    git(repo, "branch", "agentlaunch/wt")
    git(repo, "commit", "-q", "--allow-empty", "-m", "main moves on")
    assert run(agents_dir, repo, agent(agents_dir, worktree=True), "hi").returncode == 0
    (row,) = listing()
    assert row["behind"] == 1 and row["ahead"] == 0  # the kept branch, not a new one from HEAD


def test_listing_shows_dirty_and_ahead_and_remove_refuses_to_lose_work(agents_dir: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    name = agent(agents_dir, worktree=True)
    assert run(agents_dir, repo, name, "hi").returncode == 0
    path = Path(str(listing()[0]["path"]))

    (path / "draft.txt").write_text("work in progress")
    (row,) = listing()
    assert row["dirty"] == 1 and row["clean"] is False
    table = run_cli_inprocess("worktrees").stdout.decode()
    assert "dirty (1)" in table and "agentlaunch/wt" in table
    refused = run_cli_inprocess("worktrees", "remove", name, cwd=repo)
    assert refused.returncode == 4 and b"1 uncommitted change(s): not removed" in refused.stderr
    assert (path / "draft.txt").exists()

    git(path, "add", "draft.txt")
    git(path, "commit", "-qm", "draft")
    (row,) = listing()
    assert row["clean"] is True and row["unpushed"] == 1 and row["ahead"] == 1 and row["behind"] == 0
    refused = run_cli_inprocess("worktrees", "remove", name, cwd=repo)
    assert refused.returncode == 4 and b"1 commit(s) on no other branch or remote" in refused.stderr
    assert path.is_dir()

    # Merged into the main branch: nothing would be lost, so it goes (and its branch with it).
    git(repo, "merge", "-q", "--ff-only", "agentlaunch/wt")
    removed = run_cli_inprocess("worktrees", "remove", name, cwd=repo)
    assert removed.returncode == 0, removed.stderr
    assert b"removed worktree" in removed.stderr and b"deleted branch agentlaunch/wt" in removed.stderr
    assert not path.exists() and listing() == []
    assert "agentlaunch/wt" not in git(repo, "branch")


def test_merge_refuses_what_would_lose_work_then_merges_into_the_base_and_removes_it(agents_dir: Path, tmp_path: Path) -> None:
    """`worktrees merge` (the deck's M, run on a host for a remote row): refused while uncommitted, then merged."""
    repo = make_repo(tmp_path / "proj")
    name = agent(agents_dir, worktree=True)
    assert run(agents_dir, repo, name, "hi").returncode == 0
    path = Path(str(listing()[0]["path"]))
    (path / "draft.txt").write_text("work in progress")
    refused = run_cli_inprocess("worktrees", "merge", name, cwd=repo)
    assert refused.returncode == 4 and b"uncommitted changes in" in refused.stderr and b"nothing merged" in refused.stderr
    git(path, "add", "draft.txt")
    git(path, "commit", "-qm", "draft")
    merged = run_cli_inprocess("worktrees", "merge", name, "--repo", str(repo), cwd=tmp_path)
    assert merged.returncode == 0, merged.stderr
    base = git(repo, "symbolic-ref", "--short", "HEAD").strip()  # git's default branch name here
    assert f"merged agentlaunch/wt into {base}".encode() in merged.stderr and b"deleted branch agentlaunch/wt" in merged.stderr
    assert (repo / "draft.txt").is_file() and not path.exists() and listing() == []
    unknown = run_cli_inprocess("worktrees", "merge", "nobody", cwd=tmp_path)
    assert unknown.returncode == 2 and b"no worktree of agent 'nobody'" in unknown.stderr


def test_removing_an_unknown_worktree_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli_inprocess("worktrees", "remove", "nobody", cwd=tmp_path)
    assert result.returncode == 2 and b"no worktree of agent 'nobody'" in result.stderr


def test_a_worktree_removed_by_hand_is_listed_missing_and_forgotten_on_remove(agents_dir: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    name = agent(agents_dir, worktree=True)
    assert run(agents_dir, repo, name, "hi").returncode == 0
    path = str(listing()[0]["path"])
    git(repo, "worktree", "remove", path)
    assert listing()[0]["present"] is False
    result = run_cli_inprocess("worktrees", "remove", name, "--keep-branch", cwd=repo)
    assert result.returncode == 0 and b"already gone; forgotten" in result.stderr and listing() == []
    assert "agentlaunch/wt" in git(repo, "branch")


@pytest.mark.parametrize("branch", [None, "team/one"])
def test_plan_names_the_worktree_without_making_it(tmp_path: Path, branch: str | None) -> None:
    repo = make_repo(tmp_path / "proj")
    entry, exists = worktree.plan("a1", repo, tmp_path / "base", branch)
    assert not exists and entry.branch == (branch or "agentlaunch/a1") and not Path(entry.path).exists()
    assert Path(entry.path).parent.parent == tmp_path / "base"


# -- in tmux ------------------------------------------------------------------------------------


def test_tmux_up_worktree_gives_each_agent_its_own_and_refuses_outside_a_repository(
    agents_dir: Path, tmp_path: Path, socket: str
) -> None:
    from tests.support.waits import wait_for
    from tests.test_tmux import server_running, status_records, up

    repo = make_repo(tmp_path / "proj")
    for name in ("w1", "w2"):
        agent(agents_dir, name)
    plain = tmp_path / "plain"
    plain.mkdir()
    refused = up(socket, agents_dir, plain, "w1", "w2", "--worktree")
    assert refused.returncode == 3 and b"agent w1:" in refused.stderr and b"agent w2:" in refused.stderr
    assert b"not in a git repository" in refused.stderr and not server_running(socket)

    result = up(socket, agents_dir, repo, "w1", "w2", "--worktree")
    assert result.returncode == 0, result.stderr
    assert b"started w1, w2" in result.stderr
    made = {str(r["agent"]): str(r["path"]) for r in listing()}
    assert sorted(made) == ["w1", "w2"] and made["w1"] != made["w2"]
    records = wait_for(lambda: (rs := status_records()) and len(rs) == 2 and rs, what="two status records")
    assert {str(r["agent"]): r["working_dir"] for r in records} == made
    busy = run_cli_inprocess("worktrees", "remove", "w1", cwd=repo)
    assert busy.returncode == 4 and b"agent w1 is running there" in busy.stderr and Path(made["w1"]).is_dir()
    assert run_cli("tmux", "down", "--socket", socket).returncode == 0
    assert run_cli_inprocess("worktrees", "remove", "w1", cwd=repo).returncode == 0  # ended: nothing would be lost now


def test_merge_on_a_host_config_yaml_does_not_name_is_refused_before_ssh(isolated_home: Path) -> None:
    from tests.test_hosts_config import write_config

    write_config({"hosts": {"box": "ssh://127.0.0.1:1"}})
    for host, said in (("nowhere", "no host 'nowhere' in config.yaml (hosts: box)"), ("", "no host '' in config.yaml")):
        done = run_cli_inprocess("worktrees", "merge", "wt", "--host", host)
        assert done.returncode == 2 and said.encode() in done.stderr, done.stderr
    misplaced = run_cli_inprocess("worktrees", "--host", "box", "merge", "wt")
    assert misplaced.returncode == 2 and b"agentlaunch worktrees merge AGENT --host NAME" in misplaced.stderr


def test_agentlaunchs_git_reads_never_write_the_index_a_persons_git_add_needs(tmp_path: Path) -> None:
    """`git status` refreshes a stale index and writes it back, under the index lock: a person's (or an agent's) `git
    add` in that tree at that moment fails ("index.lock: File exists", exit 128; seen in the deck's e2e). agentlaunch's
    git runs without git's optional locks, so its reads leave the index alone."""
    import os

    from agentlaunch.worktrees.merge import run_git

    repo = make_repo(tmp_path / "repo")
    index = repo / ".git" / "index"
    os.utime(index, (1_000_000_000, 1_000_000_000))  # older than README's mtime: every entry looks stale (racy git)
    os.utime(repo / "README", None)
    stale = index.stat().st_mtime_ns
    assert run_git(str(repo), "status", "--porcelain").returncode == 0
    assert worktree.git(repo, "status", "--porcelain").returncode == 0
    assert index.stat().st_mtime_ns == stale, "a read of agentlaunch's wrote the index"
    git(repo, "status", "--porcelain")  # plain git does write it: the check above can fail
    assert index.stat().st_mtime_ns != stale
