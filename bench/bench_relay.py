"""Benchmark the native mode's relay: what agentlaunch adds between a person's terminal and a CLI's interface.

Run: ``python bench/bench_relay.py [--keys 300] [--idle 30] [--mb 1]``

The CLI is ``tests/support/fake_tui.py`` (a small interface that answers each
read of keys with ``KEY <hex>``), run twice in one go, side by side: bare on a
PTY, and as the ``command`` of a claude agent through ``agentlaunch run`` on a
PTY (the relay, its loop and sinks in between). Printed:

- key-to-echo latency: a byte written to the terminal until the interface's
  answer is read back, median and 90th percentile, bare and through agentlaunch,
  and the median added (target: under 2 ms);
- agentlaunch's own CPU (its process: user + system time, all its threads) while
  the interface sits idle for ``--idle`` seconds (target: under 0.5 % of a core);
- agentlaunch's CPU while the interface writes ``--mb`` MB in one go, and the
  wall time of that flood, bare and through agentlaunch.

HOME and the state directory are temporary folders; nothing touches the real ones.
"""

from __future__ import annotations

import argparse
import os
import select
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pexpect

REPO = Path(__file__).resolve().parent.parent
FAKE_TUI = REPO / "tests" / "support" / "fake_tui.py"
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid``, all its threads, also those that ended meanwhile (not its children);
    10 ms ticks, well under the 150 ms that 0.5 % of a core is in 30 s."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def read_until(fd: int, marker: bytes, buffer: bytearray, timeout: float = 30.0) -> None:
    """Read ``fd`` into ``buffer`` until ``marker`` is in it (then drop what came up to and with it)."""
    end = time.monotonic() + timeout
    while (at := buffer.find(marker)) < 0:
        left = end - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError(f"no {marker!r} within {timeout}s; got {bytes(buffer[-200:])!r}")
        buffer += os.read(fd, 1 << 16)
    del buffer[: at + len(marker)]


class Side:
    """One way of running the interface on a PTY: bare, or through agentlaunch."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        self.name = name
        self.child = pexpect.spawn(argv[0], argv[1:], env=env, dimensions=(40, 120))
        self.fd = self.child.child_fd
        self.buffer = bytearray()
        read_until(self.fd, b"TUI READY", self.buffer, 60)
        read_until(self.fd, b"\r\n", self.buffer)

    def key_latencies(self, count: int) -> list[float]:
        """Seconds from writing one key until the interface's answer for it is read, ``count`` times."""
        found = []
        for i in range(count):
            key = b"acfghjlnop"[i % 10 : i % 10 + 1]  # none of them a command of the fake interface
            started = time.perf_counter()
            os.write(self.fd, key)
            read_until(self.fd, b"KEY " + key.hex().encode() + b"\r\n", self.buffer)
            found.append(time.perf_counter() - started)
        return found

    def flood(self) -> float:
        """Wall seconds for the interface's 1 MB answer to reach the terminal."""
        started = time.perf_counter()
        os.write(self.fd, b"b")
        read_until(self.fd, b"FLOOD DONE", self.buffer, 120)
        return time.perf_counter() - started

    def close(self) -> None:
        os.write(self.fd, b"q")
        self.child.expect(pexpect.EOF, timeout=30)
        self.child.close()


def agentlaunch_pid(shell: pexpect.spawn) -> int:
    return shell.pid  # agentlaunch is the spawned process itself


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=300)
    parser.add_argument("--idle", type=float, default=30.0)
    parser.add_argument("--mb", type=int, default=1, help="how many 1 MB answers (the fake interface writes 1 MB per request)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-relay-") as folder:
        root = Path(folder)
        agents, work = root / "agents" / "tui", root / "work"
        agents.mkdir(parents=True)
        work.mkdir()
        (agents / "agent.yaml").write_text(f"provider: claude\ncommand: {FAKE_TUI}\nworking_dir: {work}\n")
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")}
        env.update(
            {
                "HOME": str(root / "home"),
                "AGENTLAUNCH_STATE_DIR": str(root / "state"),
                "TERM": "xterm-256color",
                "AGENTLAUNCH_CONFIG_DIR": str(root / "config"),
                "XDG_STATE_HOME": str(root / "xdg"),
                "PYTHONPATH": str(REPO),
                "AGENTLAUNCH_TITLE": "0",
            }
        )
        bare = Side("bare", [sys.executable, str(FAKE_TUI)], env)
        relayed = Side(
            "agentlaunch", [sys.executable, "-m", "agentlaunch", "run", "tui", "--agents-dir", str(agents.parent)], env
        )
        try:
            for side in (bare, relayed):
                side.key_latencies(20)  # warm up
            lat = {side.name: side.key_latencies(args.keys) for side in (bare, relayed)}
            pid = agentlaunch_pid(relayed.child)
            before = cpu_seconds(pid)
            time.sleep(args.idle)  # the interface sits idle: agentlaunch should not wake at all
            idle_cpu = cpu_seconds(pid) - before
            floods: dict[str, list[float]] = {"bare": [], "agentlaunch": []}
            flood_cpu = 0.0
            for _ in range(args.mb):
                floods["bare"].append(bare.flood())
                before = cpu_seconds(pid)
                floods["agentlaunch"].append(relayed.flood())
                flood_cpu += cpu_seconds(pid) - before
        finally:
            bare.close()
            relayed.close()
    ms = {name: sorted(v) for name, v in lat.items()}
    print(f"key to echo ({args.keys} keys)    median      p90")
    for name, v in ms.items():
        print(f"  {name:<14} {statistics.median(v) * 1000:>9.3f} ms {v[int(len(v) * 0.9)] * 1000:>7.3f} ms")
    added = (statistics.median(ms["agentlaunch"]) - statistics.median(ms["bare"])) * 1000
    print(f"  added by agentlaunch: {added:.3f} ms median (target < 2 ms)")
    print(
        f"agentlaunch CPU while the interface idles {args.idle:g} s: {idle_cpu:.3f} s = "
        f"{100 * idle_cpu / args.idle:.3f} % of a core (target < 0.5 %)"
    )
    print(f"{args.mb} x 1 MB answer       wall bare  wall agentlaunch  agentlaunch CPU")
    print(f"  total           {sum(floods['bare']):>9.3f} s  {sum(floods['agentlaunch']):>14.3f} s  {flood_cpu:>13.3f} s")
    print(
        f"  per MB          {sum(floods['bare']) / args.mb:>9.3f} s  {sum(floods['agentlaunch']) / args.mb:>14.3f} s"
        f"  {flood_cpu / args.mb:>13.4f} s"
    )


if __name__ == "__main__":
    main()
