"""Hosts that cannot serve: down, slow, refusing the key, a changed host key, no agentlaunch or one of another
fleet contract. Each is one row "host unreachable: WHY" of the fleet (the rest read all the same), and `hosts check`
and `send --host` give it its exit code. One real sshd for the module (tests/support/ssh_server.py)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch.paths import bundled_agents_dir
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.required import need
from tests.support.ssh_server import SshServer, free_port
from tests.test_hosts_config import write_config

need("sshd")

pytestmark = pytest.mark.timeout(120)

OLD = """#!/bin/sh
case "$1" in
  --version) echo "agentlaunch 0.0.9" ;;
  fleet) echo '{"version": 2, "agents": [], "problems": []}' ;;
  *) echo "no such command" >&2; exit 2 ;;
esac
"""
"""An agentlaunch of another fleet contract on the host."""


@pytest.fixture(scope="module")
def silent_port() -> Iterator[int]:
    """A port that takes connections and never answers: a host too slow to say anything."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield int(listener.getsockname()[1])


@pytest.fixture
def faults(sshd: SshServer, silent_port: int, isolated_home: Path) -> SshServer:
    old = sshd.remote / "bin" / "old-agentlaunch"
    old.write_text(OLD)
    old.chmod(0o755)
    write_config(
        {
            "hosts": {
                "down": {"ssh": f"ssh://127.0.0.1:{free_port()}", "ssh_config": str(sshd.ssh_config())},
                "stranger": sshd.host(key="stranger"),
                "changed": sshd.host(known="known_hosts_changed"),
                "bare": sshd.host(agentlaunch="/nonexistent/agentlaunch"),
                "old": sshd.host(agentlaunch=str(old)),
                "slow": {"ssh": f"ssh://127.0.0.1:{silent_port}", "ssh_config": str(sshd.ssh_config()), "timeout": 1},
            }
        }
    )
    return sshd


EXPECTED = {
    "down": "connection refused (no ssh server listens there)",
    "stranger": "authentication refused (",
    "changed": "its host key has changed since known_hosts recorded it: refused",
    "bare": "agentlaunch is not installed there (`/nonexistent/agentlaunch` not found",
    "old": "its agentlaunch speaks fleet contract 2, this one 1: install the same version",
    "slow": "no answer within 1s",
}


def test_each_host_that_cannot_serve_is_one_row_saying_why_and_the_rest_are_read(faults: SshServer) -> None:
    done = run_cli("fleet", "--json")
    assert done.returncode == 0, done.stderr
    agents = json.loads(done.stdout)["agents"]
    local = [a for a in agents if a["host"] is None]
    assert local and all(a["state"] != "host-unreachable" for a in local)
    rows = {a["host"]: a for a in agents if a["host"] is not None}
    assert set(rows) == set(EXPECTED)
    for host, said in EXPECTED.items():
        assert rows[host]["state"] == "host-unreachable" and rows[host]["agent"] == host
        assert rows[host]["problem"].startswith(f"host unreachable: {host}: ") and said in rows[host]["problem"], rows[host]
    plain = run_cli_inprocess("fleet").stdout.decode()
    assert "slow · host unreachable · host unreachable: slow: no answer within 1s" in plain
    status = json.loads(run_cli_inprocess("status", "--json").stdout)
    assert {r["host"] for r in status if r["state"] == "host-unreachable"} == set(EXPECTED)
    table = run_cli_inprocess("status").stdout.decode()
    assert "connection refused" in table and "host" in table


def test_hosts_says_why_each_one_cannot_be_used(faults: SshServer) -> None:
    shown = {h["host"]: h for h in json.loads(run_cli_inprocess("hosts", "--json").stdout)}
    assert [h for h, s in shown.items() if s["reachable"]] == ["bare", "old"]
    assert shown["bare"]["agentlaunch"] is None and shown["bare"]["missing"][0]["what"] == "agentlaunch"
    assert shown["old"]["agentlaunch"] == "0.0.9" and shown["old"]["fleet_contract"] == 2
    assert "host key has changed" in shown["changed"]["problem"] and "ssh-keygen -R" in shown["changed"]["problem"]


@pytest.mark.parametrize(
    ("host", "code", "said"),
    [
        ("down", 11, "down: unreachable: connection refused"),
        ("changed", 11, "host key has changed"),
        ("stranger", 11, "authentication refused"),
        ("bare", 13, "missing: agentlaunch: `/nonexistent/agentlaunch` not found; pipx install agentlaunch"),
        ("old", 13, "missing: agentlaunch: agentlaunch 0.0.9 there speaks fleet contract 2, this one 1"),
    ],
)
def test_check_gives_each_fault_its_exit_code(faults: SshServer, host: str, code: int, said: str) -> None:
    done = run_cli_inprocess("hosts", "check", host)
    assert done.returncode == code, done.stderr
    assert said in (done.stdout + done.stderr).decode()


def test_a_command_on_a_host_that_cannot_be_reached_runs_nothing_and_says_so(faults: SshServer) -> None:
    down = run_cli("send", "demo", "hello", "--host", "down")
    assert down.returncode == 11, down.stderr
    assert "host unreachable: down: connection refused" in down.stderr.decode()
    assert "nothing ran there (send not done)" in down.stderr.decode()
    bare = run_cli("stop", "demo", "--host", "bare")
    assert bare.returncode == 13 and "agentlaunch is not installed there" in bare.stderr.decode(), bare.stderr
    fork = run_cli_inprocess("fork", "demo", "--host", "down")
    assert fork.returncode == 11 and "nothing ran there (fork not done)" in fork.stderr.decode(), fork.stderr
    shutil.copytree(bundled_agents_dir(), faults.remote / "home" / "agents", dirs_exist_ok=True)
    write_config({"hosts": {"notmux": faults.host(key="bare", agents_dir="~/agents")}})
    notmux = run_cli("tmux", "up", "demo", "--host", "notmux")  # agentlaunch's own 127 there: tmux missing
    assert notmux.returncode == 127 and "tmux" in notmux.stderr.decode(), notmux.stderr
    assert "agentlaunch is not installed" not in notmux.stderr.decode()
    write_config({"hosts": {"old": faults.host(agentlaunch=str(faults.remote / "bin" / "old-agentlaunch"))}})
    old = run_cli("tmux", "up", "demo", "--host", "old")
    assert old.returncode == 2 and "no such command" in old.stderr.decode(), old.stderr


def test_nothing_of_the_local_environment_travels(faults: SshServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # LANG and LC_* are what a user's ssh config forwards by default (Debian's SendEnv); the server accepts them and
    # ANTHROPIC_* here: ssh is started with none of them (agentlaunch.hosts.ssh.ssh_env), so none is sent.
    (faults.remote / "bin" / "envdump").write_text("#!/bin/sh\nenv\n")
    (faults.remote / "bin" / "envdump").chmod(0o755)
    config = faults.ssh_config()
    forwarding = config.with_name("ssh_config-sendenv")
    forwarding.write_text(config.read_text() + "  SendEnv LANG LC_* ANTHROPIC_API_KEY\n")
    write_config({"hosts": {"box": {"ssh": f"ssh://127.0.0.1:{faults.port}", "ssh_config": str(forwarding)}}})
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret-here")
    monkeypatch.setenv("LC_SECRET", "secret")
    from agentlaunch.definitions.settings import load_settings
    from agentlaunch.hosts import ssh

    shown = ssh.run_shell(load_settings().hosts[0], "envdump", timeout=30).stdout
    assert "sk-secret-here" not in shown and "LC_SECRET" not in shown and "HOME=" in shown
    plain = subprocess.run(["ssh", "-F", str(forwarding), "-p", str(faults.port), "127.0.0.1", "envdump"], capture_output=True)
    assert b"sk-secret-here" in plain.stdout  # the same ssh and server, started with the environment: it would travel
    shutil.rmtree(faults.remote / "state", ignore_errors=True)
