"""`tmux up` of a team on several hosts in one command (AGENT@HOST), against a real sshd: each host's agents start in
that host's tmux server, this machine's here, every line of a host's command labelled with its name; a host config.yaml
does not name, a malformed AGENT@HOST and --host beside it are refused before anything starts; a host that cannot be
reached gives its exit code while the rest start."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch.paths import bundled_agents_dir
from tests.support.cli_runs import run_cli
from tests.support.required import need
from tests.support.ssh_server import SshServer, free_port
from tests.test_hosts_config import write_config
from tests.test_tmux import panes

need("sshd", "tmux")

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def two_hosts(sshd: SshServer, isolated_home: Path) -> Iterator[tuple[SshServer, str]]:
    """Hosts ``box`` and ``build``: the same sshd, each its own tmux server there; demo and helper defined there."""
    agents = sshd.remote / "home" / "agents"
    shutil.rmtree(agents, ignore_errors=True)
    shutil.copytree(bundled_agents_dir(), agents)
    shutil.copytree(agents / "demo", agents / "helper")
    other = sshd.remote_socket + "-b"
    write_config(
        {
            "hosts": {
                "box": sshd.host(agents_dir="~/agents", socket=sshd.remote_socket),
                "build": sshd.host(agents_dir="~/agents", socket=other),
                "down": {"ssh": f"ssh://127.0.0.1:{free_port()}", "ssh_config": str(sshd.ssh_config())},
            }
        }
    )
    yield sshd, other
    sshd.kill_remote_tmux()
    subprocess.run(["tmux", "-L", other, "kill-server"], capture_output=True)


def agents_on(socket: str) -> set[str]:
    done = subprocess.run(
        ["tmux", "-L", socket, "list-panes", "-a", "-F", "#{@agentlaunch_agent} #{pane_dead}"], capture_output=True, text=True
    )
    return {line.split()[0] for line in done.stdout.splitlines() if line.endswith(" 0") and line.split()[0]}


def test_one_tmux_up_starts_a_team_on_two_hosts_and_here(
    two_hosts: tuple[SshServer, str], socket: str, agents_dir: Path, workdir: Path
) -> None:
    sshd, other = two_hosts
    team = ["demo", "demo@box", "helper@build"]
    done = run_cli("tmux", "up", *team, "--socket", socket, "--agents-dir", str(agents_dir), "--wait", "60", cwd=workdir)
    said = done.stderr.decode() + done.stdout.decode()
    assert done.returncode == 0, said
    assert agents_on(sshd.remote_socket) == {"demo"} and agents_on(other) == {"helper"}
    assert panes(socket)["demo"]["dead"] == "0"  # this machine's demo, in this machine's tmux server
    lines = said.splitlines()
    assert any(line.startswith("box: ") and "demo" in line for line in lines), said
    assert any(line.startswith("build: ") and "helper" in line for line in lines), said
    assert f"on build: ssh -t ssh://127.0.0.1:{sshd.port} tmux -L {other} attach -t agentlaunch" in said


def test_a_team_naming_a_host_that_is_down_starts_the_rest_and_says_why(
    two_hosts: tuple[SshServer, str], isolated_home: Path
) -> None:
    sshd, _ = two_hosts
    done = run_cli("tmux", "up", "demo@down", "demo@box", "--wait", "60")
    said = done.stderr.decode()
    assert done.returncode == 11, said
    assert "host unreachable: down: connection refused" in said and "nothing ran there (tmux up not done)" in said
    assert agents_on(sshd.remote_socket) == {"demo"}


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["demo@nowhere", "demo@box"], "no host 'nowhere' in config.yaml (hosts: box, build, down)"),
        (["@box"], "'@box': expected AGENT, or AGENT@HOST"),
        (["demo@"], "'demo@': expected AGENT, or AGENT@HOST"),
        (["demo@box", "--host", "box"], "--host starts every agent on one host, AGENT@HOST names each one's"),
    ],
)
def test_a_team_that_names_hosts_wrongly_is_refused_before_anything_starts(
    two_hosts: tuple[SshServer, str], args: list[str], said: str
) -> None:
    sshd, _ = two_hosts
    done = run_cli("tmux", "up", *args)
    assert done.returncode == 2 and said in done.stderr.decode(), done.stderr
    assert agents_on(sshd.remote_socket) == set()


def test_worktrees_of_a_host_are_listed_and_removed_there(two_hosts: tuple[SshServer, str]) -> None:
    listed = run_cli("worktrees", "--json", "--host", "box")  # a process: the host's stdout is its own
    assert listed.returncode == 0 and json.loads(listed.stdout) == [], listed.stderr
    gone = run_cli("worktrees", "remove", "demo", "--host", "box")
    assert gone.returncode == 2 and "no worktree of agent 'demo' known here" in gone.stderr.decode(), gone.stderr
    down = run_cli("worktrees", "--host", "down")
    assert down.returncode == 11 and "nothing ran there (worktrees not done)" in down.stderr.decode(), down.stderr
    misplaced = run_cli("worktrees", "--host", "box", "remove", "demo")
    assert misplaced.returncode == 2 and "--host goes after the subcommand" in misplaced.stderr.decode()
