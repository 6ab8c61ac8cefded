"""The deck in a real terminal: a private tmux server with two real Claude Code agents against the fake Anthropic API.

The deck runs in a session of the agents' own server with a client attached (pexpect), is driven with
send-keys and read with capture-pane: an agent asking (Claude Code on its trust dialog) shows first, in
red; Enter switches the client to an agent's pane and prefix L comes back; `s` sends a prompt and its
answer shows in the preview; `x` stops and `r` restarts in the same pane; `q` leaves every agent running.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pexpect
import pytest

from agentlaunch.fakeapi.anthropic import FakeAnthropic, claude_env, text_reply
from tests.e2e.test_tmux_claude import claude_agent, pane_of, tmux
from tests.helpers import run_cli, wait_for
from tests.support.claude_tui import seed_home

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

RED = re.compile(r"\x1b\[[0-9;]*(?:31|91|38;5;(?:1|9|124|160|161|196|197|203)|38;2;2[0-5][0-9];[0-9]{1,2};[0-9]{1,2})[;m]")
"""A red foreground as tmux writes it back (Textual's theme gives "red" as 256-colour 197 in a tmux pane)."""


def deck_screen(socket: str, colours: bool = False) -> str:
    return tmux(socket, "capture-pane", "-p", *(["-e"] if colours else []), "-t", "=deck:")


def shows(socket: str, text: str, timeout: float = 60) -> None:
    try:
        wait_for(lambda: text in deck_screen(socket).replace("\n", ""), timeout=timeout, what=repr(text))
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the deck shows:\n{deck_screen(socket)}") from None


def until(socket: str, condition: Callable[[], object], what: str, timeout: float = 30) -> None:
    try:
        wait_for(condition, timeout=timeout, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the deck shows:\n{deck_screen(socket)}") from None


def row(socket: str, agent: str) -> str:
    return next((line for line in deck_screen(socket).splitlines() if re.match(rf"[│┃ ]*{agent}\b", line.strip("│┃ "))), "")


def keys(socket: str, *names: str) -> None:
    tmux(socket, "send-keys", "-t", "=deck:", *names)


def client_session(socket: str) -> str:
    return tmux(socket, "list-clients", "-F", "#{client_session}").strip()


def test_the_deck_with_two_claude_code_agents_asking_first_attach_send_stop_restart(
    socket: str, anthropic: FakeAnthropic, isolated_home: Path, agents_dir: Path, tmp_path: Path, claude_bin: Path
) -> None:
    trusted, untrusted, config = tmp_path / "trusted", tmp_path / "untrusted", tmp_path / "config"
    for folder in (trusted, untrusted, config):
        folder.mkdir()
    (config / "config.yaml").write_text("ready_timeout: 4\n")  # a Claude Code on its trust dialog is asking after 4 s
    assert anthropic.server is not None
    env = claude_env(anthropic.server.url, isolated_home, {"CLAUDE_CODE_MAX_RETRIES": "0"})
    seed_home(isolated_home, [trusted], key=env["ANTHROPIC_API_KEY"])  # untrusted/ is not: its agent stops on the dialog
    env.update(AGENTLAUNCH_AGENTS_DIR=str(agents_dir), AGENTLAUNCH_CONFIG_DIR=str(config), AGENTLAUNCH_TMUX_SOCKET=socket)
    worker = claude_agent(agents_dir, "worker", claude_bin, trusted)
    shy = claude_agent(agents_dir, "shy", claude_bin, untrusted)
    anthropic.push(text_reply("Ready."), text_reply("Pong from the deck."))
    started = run_cli("tmux", "up", worker, shy, "--socket", socket, "--no-attach", "--wait", "60", env=env, cwd=trusted,
                      timeout=180)  # fmt: skip
    assert started.returncode == 0, started.stderr

    full = {**os.environ, **env}
    tmux(socket, "new-session", "-d", "-s", "deck", "-x", "160", "-y", "40", "-c", str(trusted),
         *[f"-e{k}={v}" for k, v in full.items() if k.startswith(("AGENTLAUNCH_", "HOME", "XDG_"))],
         sys.executable, "-m", "agentlaunch", "deck")  # fmt: skip
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

        keys(socket, "s")
        shows(socket, "send to worker:")
        keys(socket, "-l", "ping")
        keys(socket, "Enter")
        shows(socket, "Pong from the deck.", 90)  # the answer in the preview (the agent's pane)

        keys(socket, "x")
        shows(socket, "stop worker? (y/n)")
        keys(socket, "y")
        until(socket, lambda: "stopped" in row(socket, "worker"), "worker stopped", 60)
        title = tmux(socket, "display-message", "-p", "-t", pane_of(socket, worker), "#{pane_title}")
        assert "stopped (agentlaunch stop)" in title
        keys(socket, "r")
        until(socket, lambda: "waiting" in row(socket, "worker"), "worker back", 90)
        assert tmux(socket, "display-message", "-p", "-t", pane_of(socket, worker), "#{pane_dead}").strip() == "0"

        keys(socket, "q")
        until(socket, lambda: "deck" not in tmux(socket, "list-sessions", "-F", "#{session_name}").split(), "the deck gone")
        assert tmux(socket, "display-message", "-p", "-t", pane_of(socket, shy), "#{pane_dead}").strip() == "0"
    finally:
        client.close(force=True)
