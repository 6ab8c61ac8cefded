"""The deck with two hosts over SSH: its first frame, the hosts' rows, its idle CPU and the SSH traffic while idle.

Run: ``python bench/bench_deck_hosts.py [--agents 4] [--rounds 5] [--idle 20]``

The world of ``bench_deck.py`` (a private tmux server, 2 live agents on this machine) and a real sshd on
127.0.0.1 (tests/support/ssh_server.py) standing for two hosts, ``h1`` and ``h2`` (the same remote side, each its
own name and connection), with ``--agents`` live agents there (``sleep`` panes of its tmux server, a record each).
The hosts' shared connections are opened first (``agentlaunch hosts``): the issue's budget is "0.5 s plus one round
trip over an open connection".

- first frame: from starting ``agentlaunch deck`` to its first row and footer, and then to the last host's rows (its
  watch started after the first frame; the first over the network is one ssh session and the host's agentlaunch
  start); beside the round trip, ``ssh HOST true`` over the open connection, and ``agentlaunch fleet --json --local``
  there (the host's own read, what a watch's first lines cost).
- idle: the deck's CPU over ``--idle`` seconds with nothing changing (its process and the ssh clients it runs), and
  the bytes the hosts' connections carried meanwhile (the ssh masters' /proc/PID/io): only keep-alives (one every
  15 s each way) when nothing changes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_deck import World, cpu_seconds  # noqa: E402
from harness import machine_line  # noqa: E402

from agentlaunch.live.status import process_start  # noqa: E402
from tests.support.ssh_server import start_sshd  # noqa: E402


def remote_agents(remote: Path, socket: str, count: int) -> None:
    """``count`` live agents on the host's tmux server: a ``sleep`` pane and a record each."""
    status = remote / "state" / "status"
    status.mkdir(parents=True, exist_ok=True)
    run = lambda *a: subprocess.run(["tmux", "-L", socket, *a], capture_output=True, text=True, check=True).stdout  # noqa: E731
    run("new-session", "-d", "-s", "agents", "sleep", "3600")
    now = datetime.now(UTC)
    for i in range(count):
        if i:
            run("new-window", "-t", "agents", "sleep", "3600")
        pane, pid = run("display-message", "-p", "-t", "agents", "#{pane_id} #{pane_pid}").split()
        run("set-option", "-p", "-t", pane, "@agentlaunch_agent", f"far{i:02d}")
        record = {
            "version": 1,
            "agent": f"far{i:02d}",
            "provider": "claude",
            "pid": int(pid),
            "pid_start": process_start(int(pid)),
            "state": "waiting",
            "state_since": (now - timedelta(seconds=30)).isoformat(timespec="seconds"),
            "session_id": f"far-{i}",
        }
        (status / f"{pid}.json").write_text(json.dumps(record))


def master_bytes(env: dict[str, str]) -> tuple[int, int]:
    """Bytes read and written by the two hosts' ssh masters (``ssh: CONTROL_PATH [mux]``, found by their sockets), and
    how many were found."""
    paths = [
        next(o for o in control(env, name) if o.startswith("ControlPath=")).removeprefix("ControlPath=") for name in ("h1", "h2")
    ]
    total = found = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            title = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace")
            if not title.startswith("ssh: ") or not any(path in title for path in paths):
                continue
            io = dict(line.split(": ") for line in Path(f"/proc/{entry}/io").read_text().splitlines())
        except OSError:
            continue
        total += int(io["rchar"]) + int(io["wchar"])
        found += 1
    return total, found


def median_ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=4, help="live agents on each host (2 here); all fit on the screen")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--idle", type=float, default=20.0)
    args = parser.parse_args()
    print(machine_line())
    folder = Path(tempfile.mkdtemp(prefix="bench-deck-hosts-"))
    servers = start_sshd(folder)
    sshd = next(servers)
    world = World(2)
    try:
        remote_agents(sshd.remote, sshd.remote_socket, args.agents)
        config = world.tmp / "config"
        config.mkdir()
        hosts = {name: sshd.host(socket=sshd.remote_socket) for name in ("h1", "h2")}
        (config / "config.yaml").write_text(json.dumps({"hosts": hosts}))  # JSON is YAML
        world.env["AGENTLAUNCH_CONFIG_DIR"] = str(config)
        env = {**world.env}
        subprocess.run([sys.executable, "-m", "agentlaunch", "hosts"], env=env, capture_output=True, check=True)  # open
        trips, reads, frames, remote = [], [], [], []
        for i in range(args.rounds):
            start = time.perf_counter()
            subprocess.run([*control(env, "h1"), "true"], env=env, check=True)
            trips.append(time.perf_counter() - start)
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "agentlaunch", "fleet", "--json"], env=env, capture_output=True, check=True
            )
            reads.append(time.perf_counter() - start)
            assert b'"h2"' in done.stdout, done.stdout[-600:] + done.stderr
            started, target = world.start(f"deck{i}", sys.executable, "-m", "agentlaunch", "deck")
            world.until(target, "agent00")
            frames.append(world.until(target, "⏎ attach") - started)
            remote.append(world.until(target, f"far{args.agents - 1:02d}    h2") - started)
            print(
                f"  round {i + 1}: first frame {frames[-1] * 1000:5.0f} ms, both hosts' rows {remote[-1] * 1000:5.0f} ms; "
                f"ssh true over the open connection {trips[-1] * 1000:4.0f} ms, "
                f"fleet --json of both hosts {reads[-1] * 1000:5.0f} ms",
                flush=True,
            )
            if i < args.rounds - 1:
                world.tmux("kill-session", "-t", target[:-1])
        print(
            f"first frame with 2 hosts (2 agents here, {args.agents} on each host): {median_ms(frames)}; "
            f"the hosts' rows {median_ms(remote)} (round trip {median_ms(trips)}; fleet --json of both hosts "
            f"{median_ms(reads)})"
        )
        pid = int(world.tmux("display-message", "-p", "-t", target, "#{pane_pid}").strip())
        time.sleep(3.0)
        cpu0, (bytes0, _), t0 = cpu_seconds(pid), master_bytes(env), time.perf_counter()
        time.sleep(args.idle)
        cpu1, (bytes1, masters), t1 = cpu_seconds(pid), master_bytes(env), time.perf_counter()
        print(
            f"idle {t1 - t0:.0f} s with 2 hosts: deck {(cpu1 - cpu0) * 100 / (t1 - t0):.2f} % of a core (target 1 %); "
            f"the hosts' {masters} ssh connections carried {bytes1 - bytes0} bytes "
            "(keep-alives only: no line while nothing changes)"
        )
    finally:
        world.close()
        servers.close()
        subprocess.run(["tmux", "-L", sshd.remote_socket, "kill-server"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def control(env: dict[str, str], name: str) -> list[str]:
    """The ssh command line of host ``name`` of this world, on its shared connection (as agentlaunch opened it), up to
    its destination: what follows is the command."""
    os.environ.update(env)
    from agentlaunch.definitions.settings import load_settings
    from agentlaunch.hosts import ssh

    host = next(h for h in load_settings().hosts if h.name == name)
    return ["ssh", *ssh.ssh_options(host), "--", host.ssh]


if __name__ == "__main__":
    main()
