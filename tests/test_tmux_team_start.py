"""`tmux up` throttled through a private tmux server, with agents on the offline fake provider."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli_runs import run_cli
from tests.support.required import need
from tests.support.waits import wait_for
from tests.test_tmux import add_agent_copies, panes, screen, send_line, up

need("tmux")


def test_up_resume_throttles_the_whole_team_across_its_tmux_sessions(socket: str, agents_dir: Path, workdir: Path) -> None:
    add_agent_copies(agents_dir, ["r1", "r2", "r3"])
    assert up(socket, agents_dir, workdir, "r1", "r2", "--session", "one").returncode == 0
    assert up(socket, agents_dir, workdir, "r3", "--session", "two").returncode == 0
    for agent, where in (("r1", "one"), ("r2", "one"), ("r3", "two")):
        pane = panes(socket, where)[agent]["pane"]
        wait_for(lambda pane=pane: "›" in screen(socket, pane), what=f"{agent}'s prompt")
        send_line(socket, pane, f"hello {agent}")
        wait_for(lambda pane=pane, agent=agent: f'You said: "hello {agent}"' in screen(socket, pane), what="the answer")
    for where in ("one", "two"):
        assert run_cli("tmux", "down", where, "--socket", socket).returncode == 0

    again = up(socket, agents_dir, workdir, "--resume", "r1", "r2", "r3", "--max-starting", "1")
    said = again.stderr.decode()
    assert again.returncode == 0, said
    lines = said.splitlines()
    assert "started 1 of 3, 1 starting… (at most 1 at a time)" in lines
    assert "started 2 of 3, 1 starting…" in lines and "started 3 of 3, 1 starting…" in lines
    assert [line.split()[0] for line in lines if " is up (" in line] == ["r1", "r2", "r3"]  # one at a time, in order
    assert "tmux session one (socket" in said and "started r1, r2" in said and "started r3" in said
    assert sorted(panes(socket, "one")) == ["r1", "r2"] and sorted(panes(socket, "two")) == ["r3"]
    for where in ("one", "two"):
        assert run_cli("tmux", "down", where, "--socket", socket).returncode == 0


def test_wait_zero_starts_the_team_at_once_and_says_the_throttle_did_not_apply(
    socket: str, agents_dir: Path, workdir: Path
) -> None:
    add_agent_copies(agents_dir, ["w1", "w2", "w3"])
    result = up(socket, agents_dir, workdir, "w1", "w2", "w3", "--max-starting", "2", "--wait", "0")
    said = result.stderr.decode()
    assert result.returncode == 0, said
    assert "--wait 0: all 3 started at once (the throttle of 2 waits for each agent to report that it is up" in said
    assert said.count("not checked: --wait 0") == 3 and sorted(panes(socket)) == ["w1", "w2", "w3"]
    assert run_cli("tmux", "down", "--socket", socket).returncode == 0
