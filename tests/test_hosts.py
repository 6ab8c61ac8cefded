"""Agents on another host over a real OpenSSH server (tests/support/ssh_server.py): `hosts`, `hosts check`, the
fleet and `status` across hosts, and `tmux up`, `send --wait`, `stop`, `restart` with --host, on the fake provider.

One sshd for the module; one remote launch (the fake demo) for the whole life of an agent on a host.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentlaunch import __version__, paths
from agentlaunch.fleet.contract import AGENT_FIELDS, VERSION
from agentlaunch.hosts import ssh
from agentlaunch.hosts.config import Host
from agentlaunch.paths import bundled_agents_dir
from agentlaunch.usage.store import Store
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.required import need
from tests.support.ssh_server import SshServer, children, demo_alone, free_port
from tests.support.store_rows import call
from tests.support.waits import wait_for
from tests.test_hosts_config import WEIRD, write_config

need("sshd", "tmux")

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def box(sshd: SshServer, isolated_home: Path) -> Iterator[SshServer]:
    """Host ``box`` (the demo agent alone in its agents directory, ``~/agents``) and ``all`` (every example agent)."""
    shutil.copytree(bundled_agents_dir(), sshd.remote / "home" / "all-agents", dirs_exist_ok=True)
    demo_alone(sshd)
    write_config(
        {
            "hosts": {
                "box": sshd.host(agents_dir="~/agents", socket=sshd.remote_socket),
                "all": sshd.host(agents_dir="~/all-agents"),
            }
        }
    )
    yield sshd
    sshd.kill_remote_tmux()


def fleet_rows(host: str | None) -> list[dict[str, Any]]:
    done = run_cli_inprocess("fleet", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["version"] == VERSION
    return [a for a in data["agents"] if a["host"] == host]


def remote_state(agent: str) -> str | None:
    return next((a["state"] for a in fleet_rows("box") if a["agent"] == agent and a["running"]), None)


def test_hosts_lists_each_host_with_its_agentlaunch(box: SshServer) -> None:
    done = run_cli_inprocess("hosts", "--json")
    assert done.returncode == 0, done.stderr
    shown = {h["host"]: h for h in json.loads(done.stdout)}
    assert shown["box"]["reachable"] is True and shown["box"]["agentlaunch"] == __version__
    assert shown["box"]["fleet_contract"] == VERSION and shown["box"]["missing"] == []
    plain = run_cli_inprocess("hosts").stdout.decode()
    assert f"box · ssh://127.0.0.1:{box.port} · reachable · agentlaunch {__version__} · fleet contract {VERSION}" in plain


def test_check_says_what_a_host_lacks_and_how_to_install_it(box: SshServer) -> None:
    ready = run_cli("hosts", "check", "box")
    assert ready.returncode == 0, ready.stderr
    assert "nothing missing" in ready.stdout.decode() and "tmux" in ready.stdout.decode()
    lacking = run_cli_inprocess("hosts", "check", "all", "--json")
    assert lacking.returncode == 13, lacking.stderr
    missing = {m["what"]: m for m in json.loads(lacking.stdout)["missing"]}
    assert set(missing) == {"claude", "codex"}  # the example reviewer and planner; demo is the fake provider
    assert "npm install -g @anthropic-ai/claude-code" in missing["claude"]["install"]
    assert "agents reviewer" in missing["claude"]["why"]
    write_config({"hosts": {"bare": box.host(key="bare")}})
    bare = run_cli_inprocess("hosts", "check", "bare")
    assert bare.returncode == 13 and "missing: tmux: tmux is not on the PATH there" in bare.stdout.decode()


def test_a_host_s_agent_lives_through_tmux_up_fleet_status_send_stop_restart(box: SshServer) -> None:
    up = run_cli_inprocess("tmux", "up", "demo", "--host", "box", "--wait", "60")
    assert up.returncode == 0, up.stderr
    said = up.stderr.decode()
    assert "demo" in said and f"on box: ssh -t ssh://127.0.0.1:{box.port} tmux -L {box.remote_socket} attach" in said
    wait_for(lambda: remote_state("demo") == "waiting", timeout=60, what="demo waiting on box", every=0.5)

    # The fleet: this machine's agents first (host null), then box's, each with every field of the contract.
    rows = json.loads(run_cli_inprocess("fleet", "--json").stdout)["agents"]
    assert all(tuple(r) == AGENT_FIELDS for r in rows)
    hosts = [r["host"] for r in rows]
    assert hosts == sorted(hosts, key=lambda h: h is not None) and "box" in hosts and None in hosts
    demo = next(r for r in rows if r["host"] == "box" and r["agent"] == "demo")
    assert demo["running"] is True and demo["tmux"]["session"] == "agentlaunch"
    status = json.loads(run_cli_inprocess("status", "--json").stdout)
    assert [r["state"] for r in status if r.get("host") == "box" and r["agent"] == "demo"] == ["waiting"]
    assert all("host" in r for r in status)
    table = run_cli_inprocess("status").stdout.decode()
    assert "host" in table.splitlines()[0] and "box" in table and "demo" in table

    # A prompt a shell would misread reaches the agent as written (stdin, never the host's shell).
    prompt = 'it\'s "$HOME" `id` $(id) ; \\ * ~\nsecond line'
    answer = run_cli("send", "demo", prompt, "--host", "box", "--wait", "--json")
    assert answer.returncode == 0, answer.stderr
    assert prompt in json.loads(answer.stdout)["answer"]

    stop = run_cli("stop", "demo", "--host", "box", "--json")
    assert stop.returncode == 0, stop.stderr
    assert json.loads(stop.stdout)["ended"] is True
    wait_for(lambda: any(r["state"] == "stopped" for r in fleet_rows("box") if r["agent"] == "demo"), what="stopped", every=0.5)
    again = run_cli_inprocess("restart", "demo", "--host", "box", "--wait", "60")
    assert again.returncode == 0, again.stderr
    wait_for(lambda: remote_state("demo") == "waiting", timeout=60, what="demo back on box", every=0.5)

    # The connection drops during `send --wait`, after the prompt was typed: said so, exit 12.
    writer = run_cli_in_background("send", "demo", "take it /slow " + "word " * 80, "--host", "box", "--wait")
    wait_for(lambda: remote_state("demo") == "thinking", timeout=60, what="demo in the slow turn", every=0.5)
    for pid in children(box.proc.pid if box.proc else 0):
        os.kill(pid, signal.SIGTERM)  # the host's side of every connection: as a network that went away
    out, err = writer.communicate(timeout=60)
    assert writer.returncode == 12, err
    assert "the prompt was typed in demo's session" in err.decode() and "the turn goes on there" in err.decode()


def run_cli_in_background(*args: str) -> Any:
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-m", "agentlaunch", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_names_a_shell_would_misread_reach_the_host_as_written(box: SshServer) -> None:
    # Every word, through the real sshd and the host's shell, to a program that prints its arguments.
    argv = box.remote / "bin" / "argv0"
    argv.write_text("#!/bin/sh\nprintf '%s\\0' \"$@\"\n")
    argv.chmod(0o755)
    host = Host(name="argv", ssh=f"ssh://127.0.0.1:{box.port}", ssh_config=str(box.ssh_config()), agentlaunch=str(argv))
    done = ssh.run(host, WEIRD, timeout=30)
    assert done.returncode == 0 and done.stdout.split("\0")[:-1] == WEIRD
    # And an agent's name with them, to agentlaunch there: named back as written.
    name = "it's $(id) `id`;\n*"
    refused = run_cli_inprocess("stop", name, "--host", "box")
    assert refused.returncode == 3 and f"agent {name!r} not found" in refused.stderr.decode(), refused.stderr


def test_usage_of_one_host_and_of_every_host_merged(box: SshServer) -> None:
    for old in (box.remote / "state").glob("usage.sqlite3*"):
        old.unlink()  # the calls of the agents other tests ran there
    with Store.open(box.remote / "state" / "usage.sqlite3") as store:  # the host's own store, written there
        store.record_call(call(agent="far", session_id="far-1", cost=0.5))
    with Store.open(paths.store_path()) as store:
        store.record_call(call(agent="near", session_id="near-1", cost=0.25))
    there = run_cli("usage", "--host", "box", "--by", "agent", "--json")
    assert there.returncode == 0, there.stderr
    assert [r["agent"] for r in json.loads(there.stdout)] == ["far"]
    merged = run_cli_inprocess("usage", "--all-hosts", "--by", "agent", "--json")
    assert merged.returncode == 0, merged.stderr
    rows = json.loads(merged.stdout)
    assert [(r["agent"], r["host"], r["cost_usd"]) for r in rows] == [
        ("near", None, 0.25),
        ("far", "box", 0.5),
        ("far", "all", 0.5),
    ]
    table = run_cli_inprocess("usage", "--all-hosts", "--by", "agent").stdout.decode()
    shown = [line.split("│")[1:4] for line in table.splitlines() if line.startswith("│")]
    assert [[c.strip() for c in row] for row in shown] == [
        ["local", "near", "1"],
        ["box", "far", "1"],
        ["all", "far", "1"],  # the same server as box: its store again
        ["total", "", "3"],
    ]
    lines = run_cli_inprocess("usage", "--all-hosts", "--by", "agent", "--csv").stdout.decode().splitlines()
    assert lines[0].endswith(",host") and lines[1].startswith("near,") and lines[2].endswith(",box")
    write_config({"hosts": {"box": box.host(), "down": {"ssh": f"ssh://127.0.0.1:{free_port()}"}}})
    partial = run_cli_inprocess("usage", "--all-hosts", "--by", "agent", "--json")
    assert partial.returncode == 0 and [r["host"] for r in json.loads(partial.stdout)] == [None, "box"]
    assert "warning: host unreachable: down: connection refused" in partial.stderr.decode()
    for refused in (["--session", "far-1"], ["--chart", "cost"], ["--host", "box"]):
        done = run_cli_inprocess("usage", "--all-hosts", *refused)
        assert done.returncode == 2, (refused, done.stderr)
