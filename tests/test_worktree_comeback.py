"""A merged worktree's agent comes back: in a new worktree of the same repository, its session resumed where its CLI
can, else a new one, said either way; a session whose plain folder is gone is refused (exit 2) naming what works.

The decision (:func:`agentlaunch.live.comeback.way_back`) with real git worktrees made and removed by agentlaunch;
then the whole way on the offline fake provider in a private tmux server: merge and remove the worktree as the
deck's ``M`` does, then `restart`, `tmux up` on the dead pane, and `tmux up --resume` after `tmux down`.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentlaunch import paths
from agentlaunch.deck import actions
from agentlaunch.definitions.spec import load_agent
from agentlaunch.errors import ExitCode, UsageError
from agentlaunch.launch.identity import choose_session
from agentlaunch.live.comeback import SessionFolderGone, way_back
from agentlaunch.providers import get_adapter
from agentlaunch.usage.records import SessionRow
from agentlaunch.usage.store import Store
from agentlaunch.worktrees import git_worktree as worktree
from testbed.agent_files import write_agent
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.git_repo import git, make_repo
from tests.support.required import needs
from tests.support.waits import wait_for
from tests.test_tmux import panes, screen, send_line, status_records, up


def row_in(folder: Path, provider: str = "fake", agent: str = "wt") -> SessionRow:
    at = datetime.now(UTC)
    return SessionRow("5e55104d-0000-4000-8000-000000000001", agent, provider, None, str(folder), at, at, None, 143, 2, None)


def merged_away(repo: Path, agent: str = "wt") -> Path:
    """A worktree agentlaunch made for ``agent`` and removed (as `worktrees remove` after the deck's merge): its path."""
    state = paths.state_dir()
    entry, created = worktree.ensure_entry(agent, repo, state / "worktrees", state)
    assert created
    worktree.remove(state, entry)
    assert not Path(entry.path).exists()
    return Path(entry.path)


def test_a_session_whose_folder_is_there_resumes_in_it_as_before(isolated_home: Path, tmp_path: Path) -> None:
    way = way_back(row_in(tmp_path))
    assert way.resumed and way.worktree is None and way.start == tmp_path
    assert way.args == ["-r", row_in(tmp_path).session_id, "--working-dir", str(tmp_path)]


def test_a_removed_worktree_comes_back_as_a_new_one_at_the_same_path_with_the_session(
    isolated_home: Path, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "proj")
    gone = merged_away(repo)
    for provider in ("claude", "codex", "gemini", "fake"):  # the same folder: every CLI resumes there
        way = way_back(row_in(gone, provider))
        assert way.resumed and way.worktree == gone and way.gone == gone and way.start == repo.resolve()
        assert way.args == ["-r", way.row.session_id, "--worktree", "--working-dir", str(repo.resolve())]
        assert way.where() == f"in a new worktree {gone} of {repo.resolve()} (its worktree there was removed)"
        assert way.summary() == f"wt: resumed its session 5e55104d {way.where()}"


def test_in_another_worktrees_dir_a_cli_that_cannot_resume_elsewhere_starts_a_new_session_and_says_why(
    isolated_home: Path, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "proj")
    gone = merged_away(repo)
    moved = tmp_path / "elsewhere"
    new = worktree.worktree_path(moved.resolve(), repo.resolve(), "wt")
    for provider in ("claude", "codex"):  # measured: both resume a session begun in another folder
        way = way_back(row_in(gone, provider), worktrees_dir=moved)
        assert way.resumed and way.worktree == new and "-r" in way.args
    way = way_back(row_in(gone, "gemini"), worktrees_dir=moved)
    assert not way.resumed and way.worktree == new
    assert way.args == ["--worktree", "--working-dir", str(repo.resolve())]
    assert (
        way.why_new == f"Gemini CLI 0.61 keeps its sessions per project folder and cannot resume one in another folder "
        f"(its session 5e55104d ran in {gone})"
    )
    assert (
        way.summary() == f"wt: new session in a new worktree {new} of {repo.resolve()} (its worktree {gone} was removed): "
        f"{way.why_new}"
    )


def test_a_plain_folder_gone_is_refused_with_exit_2_naming_fresh_and_where_the_cli_resumes_elsewhere(
    isolated_home: Path, tmp_path: Path
) -> None:
    gone = tmp_path / "gone"
    with pytest.raises(SessionFolderGone) as caught:
        way_back(row_in(gone, "claude"))
    assert caught.value.exit_code == ExitCode.USAGE
    assert caught.value.message == f"wt's session 5e55104d ran in {gone}, which no longer exists: it cannot be resumed there"
    assert caught.value.hint == (
        "agentlaunch tmux up wt --fresh starts wt in a new session; "
        "agentlaunch run wt -r 5e55104d --working-dir DIR resumes it in DIR"
    )
    with pytest.raises(SessionFolderGone) as caught:
        way_back(row_in(gone, "gemini"))
    assert caught.value.hint == "agentlaunch tmux up wt --fresh starts wt in a new session"  # no resume elsewhere


def test_a_worktree_of_another_agent_or_of_a_repository_gone_too_is_refused(isolated_home: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    gone = merged_away(repo, "other")
    with pytest.raises(SessionFolderGone):
        way_back(row_in(gone))  # wt never had a worktree there
    git(repo, "worktree", "prune")
    mine = merged_away(repo)
    os.rename(repo, tmp_path / "moved")
    with pytest.raises(SessionFolderGone, match=f"it was a worktree of {repo.resolve()}, which is gone too"):
        way_back(row_in(mine))


@pytest.mark.parametrize("removed", ['"junk"', '[1, {"agent": 3}, {"agent": "wt", "repo": null}]', "{}", "[[]]"])
def test_a_malformed_list_of_removed_worktrees_is_no_worktree_and_no_crash(
    isolated_home: Path, tmp_path: Path, removed: str
) -> None:
    state = paths.state_dir()
    state.mkdir(parents=True, exist_ok=True)
    (state / worktree.REGISTRY).write_text(f'{{"worktrees": [], "removed": {removed}}}')
    with pytest.raises(SessionFolderGone):
        way_back(row_in(tmp_path / "gone"))
    repo = make_repo(tmp_path / "proj")
    assert way_back(row_in(merged_away(repo))).resumed  # the next removal writes a list that reads


def test_a_worktree_folder_deleted_by_hand_is_made_again_at_its_place(isolated_home: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    state = paths.state_dir()
    entry, _ = worktree.ensure_entry("wt", repo, state / "worktrees", state)
    git(repo, "branch", "-f", "keep", "agentlaunch/wt")  # its commits elsewhere too: nothing lost by the rm
    os.system(f"rm -rf '{entry.path}'")  # noqa: S605 - a person's rm -rf; git still lists it (prunable)
    way = way_back(row_in(Path(entry.path)))  # still on agentlaunch's list
    assert way.resumed and way.worktree == Path(entry.path)
    again, created = worktree.ensure_entry("wt", repo, state / "worktrees", state)
    assert created and Path(again.path).is_dir() and again.path == entry.path


def test_run_resume_in_another_folder_is_refused_for_gemini_naming_what_works_and_left_to_claude_and_codex(
    agents_dir: Path, tmp_path: Path
) -> None:
    ran, here = tmp_path / "ran", tmp_path / "here"
    ran.mkdir()
    here.mkdir()
    with Store.open(paths.store_path()) as store:
        for provider in ("gemini", "claude", "codex"):
            write_agent(agents_dir, provider, {"provider": provider, "model": "m-1"})
            sid = f"7e11{provider[:4]:0<4}-0000-4000-8000-000000000001"
            store.start_session(sid, agent=provider, provider=provider, working_dir=ran)
            store.set_provider_state(sid, {"thread_id": "01a24ca5-55de-7112-8443-d50c286200b0"})
            store.touch_session(sid)
            spec, adapter = load_agent(agents_dir, provider), get_adapter(provider)
            if provider == "gemini":
                # Measured on 0.61.0: `gemini --resume ID` in another folder exits 42 ("No previous sessions found").
                with pytest.raises(UsageError) as caught:
                    choose_session(spec, adapter, store, here, resume=sid, continue_last=False)
                assert caught.value.exit_code == ExitCode.USAGE
                assert (
                    caught.value.message == f"--resume: session {sid[:8]} ran in {ran}, not in {here}: Gemini CLI 0.61 "
                    "keeps its sessions per project folder and cannot resume one in another folder"
                )
                assert caught.value.hint == (
                    f"agentlaunch run gemini -r {sid[:8]} --working-dir {ran} resumes it there; "
                    "agentlaunch run gemini without -r starts a new session here"
                )
            else:  # measured: Claude Code 2.1.332 and Codex 0.171.0 resume a session begun in another folder
                assert choose_session(spec, adapter, store, here, resume=sid, continue_last=False).resumed
            assert choose_session(spec, adapter, store, ran, resume=sid, continue_last=False).resumed  # where it ran


# -- the whole way, on the fake provider in tmux ------------------------------------------------------


def committed_work(tree: Path, name: str) -> None:
    """What the agent did in its worktree, committed (the deck's M refuses uncommitted changes)."""
    (tree / name).write_text(f"{name} by the agent\n")
    git(tree, "add", name)
    git(tree, "commit", "-qm", f"add {name}")


def merge_as_the_deck_does(repo: Path, tree: Path, agents_dir: Path) -> None:
    """The deck's M: merge the branch into the base in the main work tree, then `agentlaunch worktrees remove`."""
    merged = actions.merge_worktree(str(repo), str(tree), "agentlaunch/wt", "main")
    assert merged.ok, merged.said
    removed = run_cli_inprocess("worktrees", "remove", "wt", "--repo", str(repo))
    assert removed.returncode == 0, removed.stderr
    assert not tree.exists()


def waiting(agent: str, turns: int) -> dict[str, object] | None:
    return next(
        (r for r in status_records() if r["agent"] == agent and r.get("state") == "waiting" and r.get("turns") == turns), None
    )


def next_turn(socket: str, turns: int) -> None:
    """A prompt typed into wt's pane: the fake CLI answers with the session's next turn, counted from its transcript."""
    pane = panes(socket)["wt"]["pane"]
    wait_for(lambda: "›" in screen(socket, pane), what="the prompt")
    send_line(socket, pane, "which door?")
    wait_for(lambda: f"Fake provider here, turn {turns + 1}." in screen(socket, pane), what="the next turn of the session")
    wait_for(lambda: waiting("wt", turns + 1), what="wt waiting")


@needs("tmux")
def test_after_a_merge_restart_up_and_up_resume_bring_the_agent_back_in_a_new_worktree_with_its_session(
    socket: str, agents_dir: Path, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "proj")
    git(repo, "branch", "-M", "main")
    write_agent(agents_dir, "wt", {"provider": "fake", "model": "fake-1", "worktree": True, "working_dir": str(repo)})
    assert up(socket, agents_dir, repo, "wt").returncode == 0
    pane = panes(socket)["wt"]["pane"]
    wait_for(lambda: "›" in screen(socket, pane), what="the prompt")
    send_line(socket, pane, "remember the blue door")
    first = wait_for(lambda: waiting("wt", 1), what="wt waiting after a turn")
    tree = Path(str(first["working_dir"]))
    assert tree != repo.resolve() and tree.is_dir()

    for n, how in enumerate(("restart", "tmux up", "tmux up --resume"), 1):
        committed_work(tree, f"work{n}.txt")
        if how == "tmux up --resume":
            assert run_cli("tmux", "down", "--socket", socket).returncode == 0
        else:
            assert run_cli_inprocess("stop", "wt", "--socket", socket).returncode == 0
        merge_as_the_deck_does(repo, tree, agents_dir)
        if how == "restart":
            back = run_cli_inprocess("restart", "wt", "--socket", socket, "--agents-dir", str(agents_dir), cwd=tmp_path)
        elif how == "tmux up":
            back = up(socket, agents_dir, tmp_path, "wt")
        else:
            back = up(socket, agents_dir, tmp_path, "--resume", "wt")
        said = back.stderr.decode()
        assert back.returncode == 0, said
        new = f"in a new worktree {tree} of {repo.resolve()} (its worktree there was removed)"
        verb = "resuming session" if how == "tmux up --resume" else "restarting in its session"
        assert f"wt: {verb} {str(first['session_id'])[:8]}" in said and new in said, said
        summary = f"wt: resumed its session {str(first['session_id'])[:8]} {new}"
        lines = said.strip().splitlines()
        assert (lines[-1] if how == "restart" else lines[-2]) == summary  # restart's last line: the deck's message line
        record = wait_for(lambda: waiting("wt", n), what=f"wt back after {how}")  # noqa: B023 - waited for here
        assert record["session_id"] == first["session_id"] and record["working_dir"] == str(tree)
        # The new worktree is made from the updated base: the merged work is in it, on a branch of its own again.
        assert (tree / f"work{n}.txt").read_text() == f"work{n}.txt by the agent\n"
        assert git(tree, "branch", "--show-current").strip() == "agentlaunch/wt"
        assert git(repo, "rev-parse", "main") == git(tree, "rev-parse", "HEAD")
        next_turn(socket, n)
    assert run_cli("tmux", "down", "--socket", socket).returncode == 0


@needs("tmux")
def test_restart_and_up_of_a_session_whose_plain_folder_is_gone_exit_2_naming_fresh_which_works(
    socket: str, agents_dir: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "scratch"  # no working_dir in agent.yaml: the agent ran where `tmux up` was run
    folder.mkdir()
    write_agent(agents_dir, "wt", {"provider": "fake", "model": "fake-1"})
    assert up(socket, agents_dir, folder, "wt").returncode == 0
    pane = panes(socket)["wt"]["pane"]
    wait_for(lambda: "›" in screen(socket, pane), what="the prompt")
    send_line(socket, pane, "hello")
    first = wait_for(lambda: waiting("wt", 1), what="wt waiting after a turn")
    assert run_cli_inprocess("stop", "wt", "--socket", socket).returncode == 0
    folder.rmdir()
    short = str(first["session_id"])[:8]
    for args in (["restart", "wt"], ["tmux", "up", "wt", "--no-attach"]):
        refused = run_cli(*args, "--socket", socket, "--agents-dir", str(agents_dir), cwd=tmp_path)
        said = refused.stderr.decode()
        assert refused.returncode == 2, said
        assert f"wt's session {short} ran in {folder}, which no longer exists: it cannot be resumed there" in said
        assert "agentlaunch tmux up wt --fresh starts wt in a new session" in said
        assert panes(socket)["wt"]["dead"] == "1"  # nothing started
    assert run_cli("tmux", "down", "--socket", socket).returncode == 0
    refused = up(socket, agents_dir, tmp_path, "--resume", "wt")
    assert refused.returncode == 2 and b"agentlaunch tmux up wt --fresh" in refused.stderr, refused.stderr
    fresh = up(socket, agents_dir, tmp_path, "wt", "--fresh")  # what the hint names: a new session, where it is run
    assert fresh.returncode == 0, fresh.stderr
    new = wait_for(lambda: next((r for r in status_records() if r["agent"] == "wt"), None), what="wt running")
    assert new["session_id"] != first["session_id"] and new["working_dir"] == str(tmp_path.resolve())
    assert run_cli("tmux", "down", "--socket", socket).returncode == 0
