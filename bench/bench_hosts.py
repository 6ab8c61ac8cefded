"""`status` across three hosts costs about the slowest host's round trip plus the local read, not the sum; and the
live watch of two hosts, idle: the bytes on the wire and the watch's CPU while nothing changes.

Run: ``python bench/bench_hosts.py [--rounds 7] [--delay 0.1] [--agents 4] [--idle 10]``

One real sshd on 127.0.0.1 (tests/support/ssh_server.py) with ``--agents`` live agents there (``sleep`` panes of its
tmux server and a record each, as bench_deck_hosts.py makes them) is reached under three host names: ``h0``
directly, ``h1`` and ``h2`` through a proxy that delays each chunk by ``--delay`` and twice that
(tests/support/slow_proxy.py: latency, each direction). This machine has 2 live agents (bench_deck.py's World).
Every host's shared connection is opened first (``agentlaunch hosts``), as a person's would be after first use.

- status: ``agentlaunch status --json`` with no host (the local read), with each host alone, and with all three, in an
  order rotating from round to round; the medians, and within each round the ratio all three / the slowest alone
  (target about 1: the hosts are read in parallel, meanwhile this machine's) and all three / the sum of the three
  alone. Beside them each host's round trip, ``ssh HOST true`` over its open connection.
- idle: ``agentlaunch fleet --watch --json`` across h1 and h2, once both said ``synced``: the bytes the two proxies
  carried over ``--idle`` seconds (only ssh keep-alives, one every 15 s each way, when nothing changes), and the CPU
  of the watch's process and its ssh clients (% of a core; target 1 %).
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
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_deck import TICK, World  # noqa: E402
from bench_deck_hosts import control, remote_agents  # noqa: E402
from harness import machine_line  # noqa: E402

from tests.support.slow_proxy import SlowProxy  # noqa: E402
from tests.support.ssh_server import SshServer, start_sshd  # noqa: E402

HOSTS = ("h0", "h1", "h2")


def configs(world: World, sshd: SshServer, proxies: dict[str, SlowProxy]) -> dict[str, dict[str, str]]:
    """An environment for each case: ``local`` (no host), each host alone, ``all`` three, ``watch`` (h1 and h2)."""
    entries = {
        name: (sshd.host_via(proxies[name].port) if name in proxies else sshd.host()) | {"socket": sshd.remote_socket}
        for name in HOSTS
    }
    cases = {"local": [], **{name: [name] for name in HOSTS}, "all": list(HOSTS), "watch": ["h1", "h2"]}
    envs = {}
    for case, names in cases.items():
        folder = world.tmp / f"config-{case}"
        folder.mkdir()
        (folder / "config.yaml").write_text(json.dumps({"hosts": {n: entries[n] for n in names}}))  # JSON is YAML
        envs[case] = {**world.env, "AGENTLAUNCH_CONFIG_DIR": str(folder)}
    return envs


def wall(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, cwd="/")
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr.decode()[-600:]}")
    if b"host-unreachable" in done.stdout:
        raise RuntimeError(f"{argv}: a host was not read: {done.stdout.decode()[-600:]}")
    return took


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of ``pid`` and its live descendants (the watch's ssh clients), each its own."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    mine, total = {pid}, 0.0
    for _ in range(4):  # the watch, its ssh clients (no deeper)
        mine |= {p for p, parent in parents.items() if parent in mine}
    for p in mine:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICK
    return total


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:6.0f} ms"


def bench_status(envs: dict[str, dict[str, str]], rounds: int) -> None:
    argv = [sys.executable, "-m", "agentlaunch", "status", "--json"]
    cases = ["local", *HOSTS, "all"]
    walls: dict[str, list[float]] = {case: [] for case in cases}
    trips: dict[str, list[float]] = {name: [] for name in HOSTS}
    ratios, of_sum = [], []
    for i in range(rounds):
        for name in HOSTS:
            trips[name].append(wall([*control(envs["all"], name), "true"], envs["all"]))
        for case in cases[i % len(cases) :] + cases[: i % len(cases)]:
            walls[case].append(wall(argv, envs[case]))
        alone = [walls[name][-1] for name in HOSTS]
        ratios.append(walls["all"][-1] / max(alone))
        of_sum.append(walls["all"][-1] / sum(alone))
        print(f"  round {i + 1}: " + ", ".join(f"{c} {walls[c][-1] * 1000:.0f} ms" for c in cases), flush=True)
    print("status --json (medians):")
    print(f"  local only                 {ms(walls['local'])}")
    for name in HOSTS:
        print(f"  {name} alone (+ local)       {ms(walls[name])}   (ssh {name} true over the open connection {ms(trips[name])})")
    print(f"  all three hosts (+ local)  {ms(walls['all'])}")
    print(
        f"  all three / slowest alone: {statistics.median(ratios):.2f} (target about 1); "
        f"all three / sum of the three alone: {statistics.median(of_sum):.2f}"
    )


def bench_idle(env: dict[str, str], proxies: dict[str, SlowProxy], idle: float) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentlaunch", "fleet", "--watch", "--json"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd="/",
    )
    synced: set[str] = set()
    both = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            said = json.loads(raw)
            if said.get("change") == "synced" and said.get("host") in ("h1", "h2"):
                synced.add(said["host"])
                if len(synced) == 2:
                    both.set()
            elif said.get("change") != "synced" and synced >= {"h1", "h2"}:
                print(f"  (a line while idle: {said.get('change')} {said.get('host')} {said.get('id')})")

    threading.Thread(target=read, daemon=True).start()
    try:
        if not both.wait(60):
            raise RuntimeError("the two hosts never synced")
        time.sleep(1.0)  # the last lines written and read
        bytes0, cpu0, t0 = proxies["h1"].carried + proxies["h2"].carried, tree_cpu(proc.pid), time.perf_counter()
        time.sleep(idle)
        bytes1, cpu1, t1 = proxies["h1"].carried + proxies["h2"].carried, tree_cpu(proc.pid), time.perf_counter()
        print(
            f"fleet --watch --json across h1 and h2, idle {t1 - t0:.0f} s: {bytes1 - bytes0} bytes through the two proxies "
            f"(ssh keep-alives only: one every 15 s each way per host); the watch and its ssh clients "
            f"{(cpu1 - cpu0) * 100 / (t1 - t0):.2f} % of a core (target 1 %)"
        )
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--delay", type=float, default=0.1, help="seconds h1's proxy delays each chunk (h2's: twice)")
    parser.add_argument("--agents", type=int, default=4, help="live agents on the host (2 here)")
    parser.add_argument("--idle", type=float, default=10.0)
    args = parser.parse_args()
    print(machine_line())
    folder = Path(tempfile.mkdtemp(prefix="bench-hosts-"))
    servers = start_sshd(folder)
    sshd = next(servers)
    world = World(2)
    proxies = {"h1": SlowProxy(sshd.port, args.delay), "h2": SlowProxy(sshd.port, 2 * args.delay)}
    try:
        remote_agents(sshd.remote, sshd.remote_socket, args.agents)
        envs = configs(world, sshd, proxies)
        subprocess.run([sys.executable, "-m", "agentlaunch", "hosts"], env=envs["all"], capture_output=True, check=True)
        print(f"h1's proxy delays each chunk {args.delay * 1000:.0f} ms each way, h2's {args.delay * 2000:.0f} ms; h0 direct")
        bench_status(envs, args.rounds)
        bench_idle(envs["watch"], proxies, args.idle)
    finally:
        for proxy in proxies.values():
            proxy.close()
        world.close()
        servers.close()
        subprocess.run(["tmux", "-L", sshd.remote_socket, "kill-server"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
