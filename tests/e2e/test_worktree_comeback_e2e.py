"""A merged worktree's agent comes back with the real CLIs: the deck's M (merge, then `worktrees remove`), then
`restart` or `tmux up` start it in a new worktree made from the updated base, in its conversation where the CLI can
resume it there, else in a new session; each says which.

Measured here, per CLI, resuming a session in another folder than the one it ran in (``worktrees_dir`` moved
between the merge and the comeback, so the new worktree is elsewhere): Claude Code 2.1.332 and Codex 0.171.0
resume it, Gemini CLI 0.61.0 cannot (agentlaunch starts a new session and says why). In the same folder (the
default: the new worktree takes the removed one's path) all three resume.

A private tmux server per test; each CLI runs its own interface against its fake API on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.deck import actions
from agentlaunch.fakeapi import gemini as gfake
from agentlaunch.fakeapi.anthropic import FakeAnthropic, claude_env, text_reply
from agentlaunch.fakeapi.responses import ResponsesUsage, TextReply, user_texts
from agentlaunch.worktrees.git_worktree import worktree_path
from testbed.agent_files import write_agent
from testbed.claude_tui import seed_home
from testbed.clis import ensure_cli
from testbed.native_tui import TitledResponsesFake
from tests.e2e.test_tmux_claude import pane_of, say, screen
from tests.support.cli_runs import run_cli_inprocess
from tests.support.codex_tui_home import codex_tui_env
from tests.support.gemini_process import one_gemini_process
from tests.support.git_repo import git, make_repo
from tests.support.waits import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(480)]


def cli(env: dict[str, str], cwd: Path, *args: str) -> Any:
    # In-process (click's runner): these tests read what a command printed and its exit code; the processes they
    # are about (the CLIs and agentlaunch in the panes) are tmux's. A Python start per command was ~0.3 CPU-s.
    return run_cli_inprocess(*args, env=env, cwd=cwd, timeout=180)


def waiting(env: dict[str, str], cwd: Path, agent: str, turns: int) -> dict[str, Any] | None:
    """The agent's record once it waits with ``turns`` turns or more (the startup turn counts)."""
    records = json.loads(run_cli_inprocess("status", "--json", env=env, cwd=cwd).stdout)
    return next(
        (r for r in records if r.get("agent") == agent and r.get("state") == "waiting" and int(r.get("turns") or 0) >= turns),
        None,
    )


def answered(env: dict[str, str], cwd: Path, agent: str, text: str) -> str:
    done = cli(env, cwd, "send", agent, text, "--wait", "--timeout", "120")
    assert done.returncode == 0, done.stderr.decode()
    return str(done.stdout.decode())


class Team:
    """A repository on ``main``, an agent with ``worktree: true`` in it, the env its panes get, and the trees."""

    def __init__(self, root: Path, env: dict[str, str], config: Path, agent: str) -> None:
        self.repo = make_repo(root / "proj")
        git(self.repo, "branch", "-M", "main")
        self.env, self.config, self.agent = env, config, agent
        state = Path(env["AGENTLAUNCH_STATE_DIR"])
        self.tree = worktree_path((state / "worktrees").resolve(), self.repo.resolve(), agent)  # where the first goes
        self.moved = worktree_path((root / "moved").resolve(), self.repo.resolve(), agent)  # after worktrees_dir moved

    def merge(self, tree: Path, work: str) -> None:
        """The agent's work committed in ``tree`` and merged by the deck's M: merge, then `worktrees remove`."""
        (tree / work).write_text(f"{work} by the agent\n")
        git(tree, "add", work)
        git(tree, "commit", "-qm", f"add {work}")
        merged = actions.merge_worktree(str(self.repo), str(tree), f"agentlaunch/{self.agent}", "main")
        assert merged.ok, merged.said
        removed = cli(self.env, self.repo, "worktrees", "remove", self.agent, "--repo", str(self.repo))
        assert removed.returncode == 0, removed.stderr.decode()
        assert not tree.exists()

    def move_worktrees(self) -> None:
        """config.yaml's worktrees_dir changed: the next worktree is made in another folder."""
        with (self.config / "config.yaml").open("a") as fh:
            fh.write(f"worktrees_dir: {self.moved.parent.parent}\n")

    def came_back(self, said: str, tree: Path, gone: Path, session: str, *, resumed: bool) -> None:
        """What the comeback said, and the new worktree made from the updated base (the merged work in it)."""
        was = "there" if gone == tree else str(gone)
        where = f"in a new worktree {tree} of {self.repo.resolve()} (its worktree {was} was removed)"
        if resumed:
            assert f"{self.agent}: resumed its session {session[:8]} {where}" in said, said
        else:
            assert f"{self.agent}: new session {where}: " in said, said
        assert git(tree, "rev-parse", "HEAD") == git(self.repo, "rev-parse", "main")
        assert git(tree, "branch", "--show-current").strip() == f"agentlaunch/{self.agent}"


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "config"
    folder.mkdir()
    (folder / "config.yaml").write_text("ready_timeout: 25\n")
    return folder


def test_claude_after_a_merge_restart_and_up_resume_its_conversation_in_a_new_worktree_here_and_elsewhere(
    socket: str,
    anthropic: FakeAnthropic,
    isolated_home: Path,
    agents_dir: Path,
    tmp_path: Path,
    claude_bin: Path,
    config_dir: Path,
) -> None:
    assert anthropic.server is not None
    env = claude_env(anthropic.server.url, isolated_home, {"CLAUDE_CODE_MAX_RETRIES": "0"})
    env.update(
        AGENTLAUNCH_AGENTS_DIR=str(agents_dir),
        AGENTLAUNCH_CONFIG_DIR=str(config_dir),
        AGENTLAUNCH_STATE_DIR=os.environ["AGENTLAUNCH_STATE_DIR"],
    )
    team = Team(tmp_path, env, config_dir, "wt")
    seed_home(isolated_home, [team.repo, team.tree, team.moved], key=env["ANTHROPIC_API_KEY"])
    write_agent(
        agents_dir,
        "wt",
        {
            "provider": "claude",
            "model": "claude-sonnet-4-5",
            "command": str(claude_bin),
            "working_dir": str(team.repo),
            "worktree": True,
        },
    )
    anthropic.push(
        text_reply("Ready."), text_reply("Noted: PLUM."), text_reply("It was PLUM."), text_reply("Still PLUM.")
    )  # (a resume sends no startup message)
    up = cli(env, tmp_path, "tmux", "up", "wt", "--socket", socket, "--no-attach", "--wait", "60")
    assert up.returncode == 0, up.stderr.decode()
    first = wait_for(lambda: waiting(env, tmp_path, "wt", 1), timeout=90, what="the startup turn over")
    assert first["working_dir"] == str(team.tree)
    say(socket, pane_of(socket, "wt"), "remember the codeword PLUM")
    wait_for(lambda: "Noted: PLUM." in screen(socket, pane_of(socket, "wt")), timeout=90, what="the first answer")
    wait_for(lambda: waiting(env, tmp_path, "wt", 2), timeout=60, what="waiting after it")
    sid = str(first["session_id"])

    # The deck's x, M, then r: `restart` (the deck's r) brings it back in a new worktree at the same path, resumed.
    assert cli(env, tmp_path, "stop", "wt", "--socket", socket, "--timeout", "60").returncode == 0
    team.merge(team.tree, "one.txt")
    back = cli(env, tmp_path, "restart", "wt", "--socket", socket, "--wait", "90")
    said = back.stderr.decode()
    assert back.returncode == 0, said
    assert said.strip().splitlines()[-1].startswith("wt: resumed its session"), said  # the deck's message line
    team.came_back(said, team.tree, team.tree, sid, resumed=True)
    assert (team.tree / "one.txt").is_file()
    again = wait_for(lambda: waiting(env, tmp_path, "wt", 2), timeout=90, what="the resumed interface waiting")
    assert again["session_id"] == sid and again["resumed"] is True and again["working_dir"] == str(team.tree)
    assert answered(env, tmp_path, "wt", "what was the codeword?") == "It was PLUM.\n"
    last = anthropic.message_requests()[-1]
    assert "remember the codeword PLUM" in json.dumps(last.body["messages"])  # the conversation came back
    assert last.headers.get("x-claude-code-session-id") == sid

    # worktrees_dir moved: the new worktree is in another folder, and Claude Code resumes the session there too.
    assert cli(env, tmp_path, "stop", "wt", "--socket", socket, "--timeout", "60").returncode == 0
    team.merge(team.tree, "two.txt")
    team.move_worktrees()
    back = cli(env, tmp_path, "tmux", "up", "wt", "--socket", socket, "--no-attach", "--wait", "90")
    said = back.stderr.decode()
    assert back.returncode == 0, said
    team.came_back(said, team.moved, team.tree, sid, resumed=True)
    assert (team.moved / "one.txt").is_file() and (team.moved / "two.txt").is_file()
    again = wait_for(lambda: waiting(env, tmp_path, "wt", 3), timeout=90, what="resumed elsewhere, waiting")
    assert again["session_id"] == sid and again["working_dir"] == str(team.moved)
    assert answered(env, tmp_path, "wt", "and now?") == "Still PLUM.\n"
    last = anthropic.message_requests()[-1]
    assert "remember the codeword PLUM" in json.dumps(last.body["messages"]) and str(team.moved) in json.dumps(last.body)
    # agentlaunch follows the transcript the hooks name (it stays in the first folder's projects/ entry): the turn counts.
    wait_for(lambda: waiting(env, tmp_path, "wt", 4), timeout=60, what="the turn after the move counted")
    assert cli(env, tmp_path, "tmux", "down", "--socket", socket, "--timeout", "60").returncode == 0


@pytest.fixture
def codex_home(isolated_home: Path) -> Iterator[tuple[TitledResponsesFake, Path, Path]]:
    with tempfile.TemporaryDirectory(prefix="alwc-") as folder, TitledResponsesFake() as api:
        yield api, Path(folder), Path(folder) / "home"


def test_codex_after_a_merge_resumes_its_thread_in_a_new_worktree_here_and_in_another_folder(
    socket: str, codex_home: tuple[TitledResponsesFake, Path, Path], agents_dir: Path, config_dir: Path
) -> None:
    api, root, home = codex_home
    home.mkdir()
    env_base = {"AGENTLAUNCH_STATE_DIR": os.environ["AGENTLAUNCH_STATE_DIR"]}
    team = Team(root, env_base, config_dir, "cdx")
    env = codex_tui_env(home, api.server.url, [team.repo.resolve(), team.tree, team.moved], agents_dir, config_dir)
    team.env = env
    write_agent(
        agents_dir,
        "cdx",
        {
            "provider": "codex",
            "model": "gpt-5.5",
            "command": str(ensure_cli("codex")),
            "working_dir": str(team.repo),
            "worktree": True,
            "startup": "STARTUP-7120: say hello",
        },
    )
    usage = ResponsesUsage(input_tokens=900, cached_tokens=0, output_tokens=7)
    for text in ("Hello from Codex.", "Noted: PEAR.", "It was PEAR.", "Still PEAR."):
        api.script.push(TextReply(text, usage))
    work = root
    up = cli(env, work, "tmux", "up", "cdx", "--socket", socket, "--no-attach", "--wait", "90")
    assert up.returncode == 0, up.stderr.decode()
    first = wait_for(lambda: waiting(env, work, "cdx", 1), timeout=90, what="the startup turn over")
    assert first["working_dir"] == str(team.tree)
    assert answered(env, work, "cdx", "remember the codeword PEAR") == "Noted: PEAR.\n"
    sid = str(first["session_id"])

    assert cli(env, work, "stop", "cdx", "--socket", socket, "--timeout", "60").returncode == 0
    team.merge(team.tree, "one.txt")
    back = cli(env, work, "restart", "cdx", "--socket", socket, "--wait", "90")
    said = back.stderr.decode()
    assert back.returncode == 0, said
    team.came_back(said, team.tree, team.tree, sid, resumed=True)
    again = wait_for(lambda: waiting(env, work, "cdx", 2), timeout=90, what="the resumed interface waiting")
    assert again["session_id"] == sid and again["resumed"] is True
    assert answered(env, work, "cdx", "what was the codeword?") == "It was PEAR.\n"
    assert "remember the codeword PEAR" in user_texts(api.turn_requests[-1].body)

    # In another folder: Codex resumes the thread there (its next turn's environment names the new folder).
    assert cli(env, work, "stop", "cdx", "--socket", socket, "--timeout", "60").returncode == 0
    team.merge(team.tree, "two.txt")
    team.move_worktrees()
    back = cli(env, work, "restart", "cdx", "--socket", socket, "--wait", "90")
    said = back.stderr.decode()
    assert back.returncode == 0, said
    team.came_back(said, team.moved, team.tree, sid, resumed=True)
    again = wait_for(lambda: waiting(env, work, "cdx", 3), timeout=90, what="resumed elsewhere, waiting")
    assert again["session_id"] == sid and again["working_dir"] == str(team.moved)
    assert answered(env, work, "cdx", "and now?") == "Still PEAR.\n"
    texts = user_texts(api.turn_requests[-1].body)
    assert "remember the codeword PEAR" in texts and any(f"<cwd>{team.moved}</cwd>" in t for t in texts), texts
    assert cli(env, work, "tmux", "down", "--socket", socket, "--timeout", "60").returncode == 0


@pytest.fixture
def gemini_home(request: pytest.FixtureRequest, isolated_home: Path) -> Iterator[tuple[gfake.GeminiFake, Path, Path]]:
    with tempfile.TemporaryDirectory(prefix="alwg-") as folder, gfake.GeminiFake() as api:
        yield api, Path(folder), Path(folder) / "home"


def test_gemini_after_a_merge_resumes_in_the_same_folder_and_elsewhere_starts_a_new_session_saying_why(
    request: pytest.FixtureRequest,
    socket: str,
    gemini_home: tuple[gfake.GeminiFake, Path, Path],
    agents_dir: Path,
    config_dir: Path,
) -> None:
    api, root, home = gemini_home
    home.mkdir()
    env = gfake.prepare_gemini_home(home, api.base_url, max_attempts=1, no_relaunch=one_gemini_process(request))
    env.update(
        TERM="xterm-256color",
        AGENTLAUNCH_TITLE="0",
        AGENTLAUNCH_AGENTS_DIR=str(agents_dir),
        AGENTLAUNCH_CONFIG_DIR=str(config_dir),
    )
    env.update({k: v for k, v in os.environ.items() if k.startswith("AGENTLAUNCH_") and k not in env})
    team = Team(root, env, config_dir, "gem")
    write_agent(
        agents_dir,
        "gem",
        {
            "provider": "gemini",
            "model": "gemini-2.5-pro",
            "command": str(ensure_cli("gemini")),
            "working_dir": str(team.repo),
            "worktree": True,
            "startup": "STARTUP-7130: say hello",
        },
    )
    usage = gfake.GeminiUsage(prompt=900, output=7)
    for text in ("Hello, ready.", "Noted: PLUM.", "It was PLUM.", "Hello again, ready.", "I do not know it."):
        api.script.push(gfake.TextReply(text, usage))
    work = root
    up = cli(env, work, "tmux", "up", "gem", "--socket", socket, "--no-attach", "--wait", "90")
    assert up.returncode == 0, up.stderr.decode()
    first = wait_for(lambda: waiting(env, work, "gem", 1), timeout=90, what="the startup turn over")
    assert "Noted: PLUM." in answered(env, work, "gem", "remember the codeword PLUM")
    sid = str(first["session_id"])

    assert cli(env, work, "stop", "gem", "--socket", socket, "--timeout", "60").returncode == 0
    team.merge(team.tree, "one.txt")
    back = cli(env, work, "restart", "gem", "--socket", socket, "--wait", "90")
    said = back.stderr.decode()
    assert back.returncode == 0, said
    team.came_back(said, team.tree, team.tree, sid, resumed=True)
    again = wait_for(lambda: waiting(env, work, "gem", 2), timeout=90, what="the resumed interface waiting")
    assert again["session_id"] == sid
    assert "It was PLUM." in answered(env, work, "gem", "what was the codeword?")
    assert "remember the codeword PLUM" in gfake.user_texts(api.model_requests[-1].body)

    # In another folder Gemini cannot resume (measured: exit 42, "No previous sessions found for this project"):
    # the agent starts a new session there, and `restart` says so, with the reason, before and after.
    assert cli(env, work, "stop", "gem", "--socket", socket, "--timeout", "60").returncode == 0
    team.merge(team.tree, "two.txt")
    team.move_worktrees()
    back = cli(env, work, "restart", "gem", "--socket", socket, "--wait", "90")
    said = back.stderr.decode()
    assert back.returncode == 0, said
    why = "Gemini CLI 0.61 keeps its sessions per project folder and cannot resume one in another folder"
    assert f"gem: restarting in a new session in a new worktree {team.moved}" in said and why in said, said
    team.came_back(said, team.moved, team.tree, sid, resumed=False)
    new = wait_for(lambda: waiting(env, work, "gem", 1), timeout=90, what="the new session's startup turn over")
    assert new["session_id"] != sid and new["working_dir"] == str(team.moved) and not new["resumed"]
    assert "I do not know it." in answered(env, work, "gem", "what was the codeword?")
    assert "remember the codeword PLUM" not in gfake.user_texts(api.model_requests[-1].body)
    assert cli(env, work, "tmux", "down", "--socket", socket, "--timeout", "60").returncode == 0
