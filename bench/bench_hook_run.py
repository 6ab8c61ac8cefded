"""Benchmark what one Claude Code hook costs a native launch: a command hook's process against the http hook it replaced.

Run: ``python bench/bench_hook_run.py [--runs N] [--http CHECKOUT]``

Since issue 41 every hook of a native Claude launch is a command hook (no other user can reach it): Claude Code
starts ``python -I -S -c`` importing ``hook_report`` (a state hook: one datagram to the launch's socket) or
``hook_ask`` (the budget's gate: it waits on the launch's held hooks' socket), with a ``PreToolUse`` payload
recorded from 2.1.332 (tests/data/claude_tui) on stdin. Measured: the user+sys CPU of each run (RUSAGE_CHILDREN),
against ``python -I -S -c pass`` (the floor of any Python hook). The launch's own side (the report read, the gate
answered by :class:`~agentlaunch.providers.native.hook_held.HeldHooks` in this process) is measured too, with
``time.process_time`` around its work. With ``--http CHECKOUT`` (a checkout that still has
``providers/native/hook_http.py``, e.g. ``git worktree add /tmp/http 6aaa3c3``) the http hook's cost in the launch
(one request read, parsed by h11 and answered; there was no process) is measured the same way; Claude Code's
own side of either (spawning the process, or its HTTP request) is not. Prints medians. Asserts nothing.
"""

from __future__ import annotations

import argparse
import importlib
import json
import resource
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agentlaunch.providers.native.claude_settings import ASKER  # noqa: E402
from agentlaunch.providers.native.hook_held import HeldHooks  # noqa: E402
from agentlaunch.providers.native.hook_socket import REPORTER, HookSocket, script_argv  # noqa: E402

DATA = REPO / "tests" / "data" / "claude_tui" / "tool_turn" / "reports.jsonl"


def child_cpu_ms(argv: list[str], stdin: bytes) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, input=stdin, capture_output=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv}: exit {done.returncode}: {done.stderr.decode()}")
    return (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000


class Answerer:
    """A thread that answers every held hook at once (allow), timing its own work."""

    def __init__(self, path: Path) -> None:
        self.held = HeldHooks(path)
        self.cpu: list[float] = []
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while not self.stop:
            if select.select(list(self.held.filenos()), [], [], 0.1)[0]:
                start = time.thread_time()
                for hook in self.held.receive():
                    self.held.answer(hook.reply, "")
                self.cpu.append((time.thread_time() - start) * 1000)

    def close(self) -> None:
        self.stop = True
        self.thread.join(5)
        self.held.close()


def http_side(checkout: Path, payload: bytes, runs: int) -> list[float]:
    """The launch's CPU per http hook with ``checkout``'s hook_http (h11 imported before the first)."""
    sys.path.insert(0, str(checkout))
    for name in [m for m in sys.modules if m.startswith("agentlaunch")]:
        del sys.modules[name]
    hook_http = importlib.import_module("agentlaunch.providers.native.hook_http")
    server = hook_http.HookServer("k" * 32)
    head = f"POST /PreToolUse HTTP/1.1\r\nHost: x\r\nContent-Length: {len(payload)}\r\nX-Agentlaunch-Key: {'k' * 32}\r\n\r\n"
    got: list[float] = []
    for _ in range(runs):
        client = socket.create_connection(("127.0.0.1", server.port))
        client.sendall(head.encode() + payload)
        cpu = 0.0
        found: list[object] = []
        while not found:
            select.select([server.fileno()], [], [], 1.0)
            start = time.process_time()
            found = server.receive()
            cpu += time.process_time() - start
        client.recv(1000)
        client.close()
        got.append(cpu * 1000)
    server.close()
    return got[1:]  # the first one imports h11


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="rounds (each runs every side once)")
    parser.add_argument("--http", type=Path, help="a checkout with providers/native/hook_http.py")
    args = parser.parse_args()
    reports = [json.loads(line) for line in DATA.read_text().splitlines()]
    payload = json.dumps([r["payload"] for r in reports if r["event"] == "PreToolUse"][-1]).encode()
    with tempfile.TemporaryDirectory(prefix="bench-hk-") as folder:
        report_sock = HookSocket(Path(folder) / "r.sock")
        answerer = Answerer(Path(folder) / "a-held.sock")
        sides: dict[str, list[str]] = {
            "hook_report (a state hook)": script_argv(sys.executable, REPORTER, str(Path(folder) / "r.sock"), "PreToolUse"),
            "hook_ask (the gate)": script_argv(sys.executable, ASKER, str(Path(folder) / "a-held.sock"), "PreToolUse"),
            "python -I -S -c pass": [sys.executable, "-I", "-S", "-c", "pass"],
        }
        got: dict[str, list[float]] = {name: [] for name in sides}
        read: list[float] = []
        for _ in range(args.runs):
            for name, argv in sides.items():
                got[name].append(child_cpu_ms(argv, payload))
            start = time.process_time()
            report_sock.receive()
            read.append((time.process_time() - start) * 1000)
        answerer.close()
        report_sock.close()
    print(f"{args.runs} rounds, CPU of one hook (median, ms):")
    for name, values in got.items():
        print(f"  {name:<30}{statistics.median(values):7.2f}  (the hook's process)")
    print(f"  {'the launch reads a report':<30}{statistics.median(read):7.3f}")
    print(f"  {'the launch answers the gate':<30}{statistics.median(answerer.cpu):7.3f}")
    if args.http:
        served: Callable[[], list[float]] = lambda: http_side(args.http, payload, args.runs + 1)  # noqa: E731
        print(f"  {'http hook, in the launch':<30}{statistics.median(served()):7.3f}  (no process)")


if __name__ == "__main__":
    main()
