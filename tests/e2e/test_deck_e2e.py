"""The deck in a real terminal: a private tmux server with two real Claude Code agents against the fake Anthropic
API.

The deck runs in a session of the agents' own server with a client attached (pexpect), is driven with
send-keys and read with capture-pane: an agent asking (Claude Code on its trust dialog) shows first, in red;
Enter switches the client to an agent's pane and prefix L comes back; `s` sends a prompt and its answer shows
in the preview; `x` stops and `r` restart in the same pane (each asking y/n, naming the agent); `n` picks a
third agent's definition and starts it in a worktree with a first prompt, Claude Code writes a file there (the
fake API answers with a Write tool call) and its row shows the worktree dirty; `d` shows that file in the
worktree's diff, scrolls to its end, and `M` from there is refused while the agent runs and while the worktree
is dirty, and merges it into its base (then removes it) once its change is committed; `r` then brings builder
back in a new worktree made from the merged base, in its own session; `q` leaves every agent
running.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pexpect
import pytest

from agentlaunch.fakeapi.anthropic import ApiUsage, FakeAnthropic, claude_env, text_reply, tool_reply
from agentlaunch.live.status import LINE_OPTION
from agentlaunch.worktrees.git_worktree import worktree_path
from testbed.claude_tui import seed_home
from tests.e2e.test_tmux_claude import claude_agent, pane_of, tmux
from tests.support.cli_runs import run_cli
from tests.support.waits import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

MADE = "".join(f"made line {i:02d}\n" for i in range(1, 41))  # the file builder writes: longer than the diff page

RED = re.compile(r"\x1b\[[0-9;]*(?:31|91|38;5;(?:1|9|124|160|161|196|197|203)|38;2;2[0-5][0-9];[0-9]{1,2};[0-9]{1,2})[;m]")
"""A red foreground as tmux writes it back (Textual's theme gives "red" as 256-colour 197 in a tmux pane)."""


DECK = "=deck:"  # the deck's pane: a session of its own, or (the second test) a window of the team's session


def deck_screen(socket: str, colours: bool = False, at: str = DECK) -> str:
    return tmux(socket, "capture-pane", "-p", *(["-e"] if colours else []), "-t", at)


def shows(socket: str, text: str, timeout: float = 60, at: str = DECK) -> None:
    try:
        wait_for(lambda: text in deck_screen(socket, at=at).replace("\n", ""), timeout=timeout, what=repr(text))
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the deck shows:\n{deck_screen(socket, at=at)}") from None


def until(socket: str, condition: Callable[[], object], what: str, timeout: float = 30, at: str = DECK) -> None:
    try:
        wait_for(condition, timeout=timeout, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the deck shows:\n{deck_screen(socket, at=at)}") from None


def row(socket: str, agent: str, at: str = DECK) -> str:
    lines = deck_screen(socket, at=at).splitlines()
    return next((line for line in lines if re.match(rf"[│┃ ]*{agent}\b", line.strip("│┃ "))), "")


def keys(socket: str, *names: str, at: str = DECK) -> None:
    tmux(socket, "send-keys", "-t", at, *names)


def diff_page(socket: str) -> None:
    """``d`` on the selected builder: its worktree's diff page, with the text of the file Claude Code wrote."""
    keys(socket, "d")
    shows(socket, "M merges, D removes")
    shows(socket, "+++ b/made.txt")
    shows(socket, "+made line 01")


def client_session(socket: str) -> str:
    return tmux(socket, "list-clients", "-F", "#{client_session}").strip()


def test_the_deck_with_two_claude_code_agents_asking_first_attach_send_stop_restart(
    socket: str, anthropic: FakeAnthropic, isolated_home: Path, agents_dir: Path, tmp_path: Path, claude_bin: Path
) -> None:
    trusted, untrusted, config, repo = tmp_path / "trusted", tmp_path / "untrusted", tmp_path / "config", tmp_path / "repo"
    for folder in (trusted, untrusted, config, repo):
        folder.mkdir()
    trees = tmp_path / "trees"
    (config / "config.yaml").write_text(f"ready_timeout: 4\nworktrees_dir: {trees}\n")  # on its trust dialog: asking after 4 s
    subprocess.run(["git", "-C", str(repo), "init", "-q", "-b", "main"], check=True, capture_output=True)
    commit = ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "first"]
    subprocess.run(["git", "-C", str(repo), *commit], check=True, capture_output=True)
    tree = worktree_path(trees.resolve(), repo.resolve(), "builder")  # where `tmux up --worktree` puts builder's
    assert anthropic.server is not None
    env = claude_env(anthropic.server.url, isolated_home, {"CLAUDE_CODE_MAX_RETRIES": "0"})
    seed_home(isolated_home, [trusted, tree, repo], key=env["ANTHROPIC_API_KEY"])  # not untrusted/: its agent stops on the dialog
    env.update(AGENTLAUNCH_AGENTS_DIR=str(agents_dir), AGENTLAUNCH_CONFIG_DIR=str(config), AGENTLAUNCH_TMUX_SOCKET=socket)
    worker = claude_agent(agents_dir, "worker", claude_bin, trusted)
    shy = claude_agent(agents_dir, "shy", claude_bin, untrusted)
    builder = claude_agent(agents_dir, "builder", claude_bin, repo, permission_mode="acceptEdits")
    anthropic.push(text_reply("Ready."), text_reply("Pong from the deck."))
    started = run_cli(
        "tmux", "up", worker, shy, "--socket", socket, "--no-attach", "--wait", "60", env=env, cwd=trusted, timeout=180
    )
    assert started.returncode == 0, started.stderr

    full = {**os.environ, **env}
    tmux(
        socket,
        "new-session",
        "-d",
        "-s",
        "deck",
        "-x",
        "160",
        "-y",
        "40",
        "-c",
        str(trusted),
        *[f"-e{k}={v}" for k, v in full.items() if k.startswith(("AGENTLAUNCH_", "HOME", "XDG_"))],
        sys.executable,
        "-m",
        "agentlaunch",
        "deck",
    )
    client = pexpect.spawn("tmux", ["-L", socket, "attach", "-t", "=deck"], dimensions=(40, 160), env=full, encoding="utf-8")
    try:
        until(socket, lambda: client_session(socket) == "deck", "a client on the deck")
        shows(socket, "worker")
        until(socket, lambda: "asking" in row(socket, "shy"), "shy asking", 60)
        until(socket, lambda: "waiting" in row(socket, "worker"), "worker waiting", 90)
        lines = [line for line in deck_screen(socket).splitlines() if "shy" in line or "worker" in line]
        assert "shy" in lines[0], lines  # the asking agent comes first
        coloured = next(line for line in deck_screen(socket, colours=True).splitlines() if "asking" in line)
        assert RED.search(coloured), repr(coloured)  # in red

        keys(socket, "/")
        shows(socket, "filter (empty: all):")  # keys typed before the dialog is up would go to the list
        keys(socket, "-l", "worker")
        keys(socket, "Enter")
        until(socket, lambda: not row(socket, "shy"), "the filter")
        shows(socket, f"worker · tmux agentlaunch {pane_of(socket, worker)}")

        keys(socket, "Enter")  # attach: the client switches to the agent's pane
        until(socket, lambda: client_session(socket) == "agentlaunch", "the client on the agent")
        client.send("\x02L")  # prefix L: tmux's last session, the deck
        until(socket, lambda: client_session(socket) == "deck", "back on the deck")
        shows(socket, "back from worker: prefix L (last session)")  # the deck in a session of its own

        keys(socket, "s")
        shows(socket, "send to worker:")
        keys(socket, "-l", "ping")
        keys(socket, "Enter")
        shows(socket, "Pong from the deck.", 90)  # the answer in the preview (the agent's pane)

        keys(socket, "x")
        shows(socket, "stop worker? (y/n)")
        keys(socket, "y")
        until(socket, lambda: "stopped" in row(socket, "worker"), "worker stopped", 60)  # marked before its SIGTERM
        border = "#{pane_title}\t#{" + LINE_OPTION + "}"  # the title once the CLI ended, and the border's line
        until(
            socket,
            lambda: (
                tmux(socket, "display-message", "-p", "-t", pane_of(socket, worker), border).count("stopped (agentlaunch stop)")
                == 2
            ),
            "the stop said on the pane's title and border",
            60,
        )
        keys(socket, "r")
        shows(socket, "restart worker? (y/n)")
        keys(socket, "y")
        until(socket, lambda: "waiting" in row(socket, "worker"), "worker back", 90)
        assert tmux(socket, "display-message", "-p", "-t", pane_of(socket, worker), "#{pane_dead}").strip() == "0"

        # n: the definition picked from a filtered list, a first prompt, its own worktree; Claude Code writes a file there
        anthropic.push(
            text_reply("Ready."),
            tool_reply(
                "Write", {"file_path": str(tree / "made.txt"), "content": MADE}, ApiUsage(15, 2000, 0, 40), text="Writing."
            ),
            text_reply("Wrote made.txt."),
        )
        keys(socket, "n")
        shows(socket, "start which agent?")
        keys(socket, "-l", "build")
        shows(socket, "claude/claude-sonnet-4-5")
        keys(socket, "Enter")
        shows(socket, f"start {builder}:")
        keys(socket, "-l", "write made.txt")
        keys(socket, "C-t")  # its own worktree
        keys(socket, "Enter")
        # The form closed: the message says it starts the agent, then (as soon as it is up) that its prompt went.
        done = (f"starting {builder}", f"sent to {builder}")
        until(socket, lambda: any(t in deck_screen(socket).replace("\n", "") for t in done), repr(done), 60)
        keys(socket, "/")
        shows(socket, "filter (empty: all):")
        keys(socket, *["BSpace"] * 8, "Enter")  # "worker" taken out: every agent again
        until(socket, lambda: row(socket, builder), "builder on the list")
        try:  # the worktrees are read every 15 s
            until(socket, lambda: "dirty 1" in row(socket, builder), "Claude Code's write in builder's worktree", 120)
        except AssertionError as exc:
            pane = tmux(socket, "capture-pane", "-p", "-t", pane_of(socket, builder))
            raise AssertionError(f"{exc}\nbuilder's pane:\n{pane}\nunder {trees}: {sorted(trees.rglob('*'))[:5]}") from None
        assert "agentlaunch/builder" in row(socket, builder)
        assert (tree / "made.txt").read_text() == MADE

        # d: the worktree's diff shows Claude Code's file; it scrolls; M is refused while builder runs, while dirty
        keys(socket, "/")
        shows(socket, "filter (empty: all):")
        keys(socket, "-l", builder)
        keys(socket, "Enter")
        until(socket, lambda: not row(socket, "shy"), "the filter on builder")
        diff_page(socket)
        assert "+made line 40" not in deck_screen(socket), deck_screen(socket)  # below the fold
        keys(socket, "End")
        shows(socket, "+made line 40")
        until(socket, lambda: "+made line 01" not in deck_screen(socket), "the page scrolled")
        keys(socket, "M")
        shows(socket, f"{builder} is running in its worktree: stop it (x) before merging")
        keys(socket, "x")
        shows(socket, f"stop {builder}? (y/n)")
        keys(socket, "y")
        until(socket, lambda: "stopped" in row(socket, builder), "builder stopped", 60)
        diff_page(socket)  # its stopped pane keeps its worktree
        keys(socket, "M")
        shows(socket, f"merge {builder}'s worktree (agentlaunch/builder) into main and remove it? (y/n)")
        keys(socket, "y")
        shows(socket, "failed (exit 4): uncommitted changes in")  # the rest, the worktree's path, may be cut off
        assert (tree / "made.txt").is_file() and not (repo / "made.txt").exists()

        subprocess.run(["git", "-C", str(tree), "add", "made.txt"], check=True, capture_output=True)
        subprocess.run(["git", "-C", str(tree), *commit[:-1], "made by builder"], check=True, capture_output=True)
        diff_page(socket)
        keys(socket, "M")
        shows(socket, f"merge {builder}'s worktree (agentlaunch/builder) into main")
        keys(socket, "y")
        shows(socket, "merged agentlaunch/builder into main; worktree removed", 60)
        assert (repo / "made.txt").read_text() == MADE and not tree.exists()

        # r after M: builder comes back in a new worktree from the updated base, in its own session, and says so.
        (ran,) = [s for s in json.loads(run_cli("sessions", builder, "--json", env=env).stdout) if s["turns"]]
        keys(socket, "r")
        shows(socket, f"restart {builder}? (y/n)")
        keys(socket, "y")
        shows(socket, f"{builder}: resumed its session {ran['session_id'][:8]} in a new worktree", 120)
        assert (tree / "made.txt").read_text() == MADE  # the merged base
        assert (
            subprocess.run(
                ["git", "-C", str(tree), "branch", "--show-current"], capture_output=True, text=True, check=True
            ).stdout.strip()
            == "agentlaunch/builder"
        )
        until(socket, lambda: "waiting" in row(socket, builder), "builder back", 90)
        live = json.loads(run_cli("status", "--json", env=env).stdout)
        assert [(r["session_id"], r["working_dir"]) for r in live if r["agent"] == builder] == [(ran["session_id"], str(tree))]

        keys(socket, "q")
        until(socket, lambda: "deck" not in tmux(socket, "list-sessions", "-F", "#{session_name}").split(), "the deck gone")
        assert tmux(socket, "display-message", "-p", "-t", pane_of(socket, shy), "#{pane_dead}").strip() == "0"
    finally:
        client.close(force=True)


def test_stop_b_then_r_restarts_b_not_the_agent_that_took_its_row_and_prefix_l_comes_back_to_a_deck_window(
    socket: str, anthropic: FakeAnthropic, isolated_home: Path, agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    """The trial's steps: B on top, `x` on B (its stopped row sorts below A), then `r` at once. The deck runs as a
    window of the team's own session: Enter and prefix l (last window) come back, as the message line says."""
    assert anthropic.server is not None
    env = claude_env(anthropic.server.url, isolated_home, {"CLAUDE_CODE_MAX_RETRIES": "0"})
    seed_home(isolated_home, [workdir], key=env["ANTHROPIC_API_KEY"])
    env.update(AGENTLAUNCH_AGENTS_DIR=str(agents_dir), AGENTLAUNCH_TMUX_SOCKET=socket)
    bee, zed = claude_agent(agents_dir, "bee", claude_bin, workdir), claude_agent(agents_dir, "zed", claude_bin, workdir)
    anthropic.push(text_reply("Ready."), text_reply("Ready."))
    started = run_cli(
        "tmux",
        "up",
        bee,
        zed,
        "--session",
        "team",
        "--socket",
        socket,
        "--no-attach",
        "--wait",
        "60",
        env=env,
        cwd=workdir,
        timeout=180,
    )
    assert started.returncode == 0, started.stderr
    full = {**os.environ, **env}
    tmux(
        socket,
        "new-window",
        "-t",
        "=team:",
        "-n",
        "deck",
        "-c",
        str(workdir),
        *[f"-e{k}={v}" for k, v in full.items() if k.startswith(("AGENTLAUNCH_", "HOME", "XDG_"))],
        sys.executable,
        "-m",
        "agentlaunch",
        "deck",
    )
    at = "=team:deck"
    client = pexpect.spawn("tmux", ["-L", socket, "attach", "-t", "=team"], dimensions=(40, 160), env=full, encoding="utf-8")

    def client_window() -> str:
        return tmux(socket, "list-clients", "-F", "#{window_name}").strip()

    def order() -> list[str]:
        screen = deck_screen(socket, at=at)
        lines = screen[: screen.find("╭─")].splitlines()  # the list, above the preview
        return [a for line in lines for a in (bee, zed) if re.match(rf"[│┃ ]*{a}\b", line.strip("│┃ "))]

    def launch_pid(agent: str) -> str:
        return tmux(socket, "display-message", "-p", "-t", pane_of(socket, agent, "team"), "#{pane_pid}").strip()

    try:
        until(socket, lambda: client_window() == "deck", "a client on the deck's window", at=at)
        until(socket, lambda: "waiting" in row(socket, bee, at) and "waiting" in row(socket, zed, at), "both waiting", 90, at)
        assert order() == [bee, zed], deck_screen(socket, at=at)  # bee on top
        keys(socket, "Home", at=at)
        shows(socket, f"{bee} · tmux team", at=at)  # bee selected (its preview)
        zed_pid = launch_pid(zed)

        keys(socket, "x", at=at)
        shows(socket, f"stop {bee}? (y/n)", at=at)
        keys(socket, "y", at=at)
        until(socket, lambda: "stopped" in row(socket, bee, at), "bee stopped", 60, at)
        assert order() == [zed, bee], deck_screen(socket, at=at)  # bee's stopped row sorted below: zed has bee's row
        keys(socket, "r", at=at)
        shows(socket, f"restart {bee}? (y/n)", at=at)  # the key names whom it acts on
        keys(socket, "y", at=at)
        until(socket, lambda: "waiting" in row(socket, bee, at), "bee back", 90, at)
        shows(socket, f"restarted {bee}", 60, at=at)
        assert launch_pid(zed) == zed_pid and "waiting" in row(socket, zed, at)  # zed untouched

        assert order() == [bee, zed], deck_screen(socket, at=at)  # bee back on top, still selected
        shows(socket, f"{bee} · tmux team", at=at)
        keys(socket, "Down", at=at)
        shows(socket, f"{zed} · tmux team", at=at)
        keys(socket, "Enter", at=at)
        until(socket, lambda: client_window() == zed, "the client on zed's window", at=at)
        shows(socket, f"back from {zed}: prefix l (last window)", at=at)
        client.send("\x02l")  # prefix l: tmux's last window, the deck
        until(socket, lambda: client_window() == "deck", "back on the deck", at=at)
        keys(socket, "?", at=at)
        shows(socket, "the deck is a window of tmux session team", at=at)
    finally:
        client.close(force=True)
