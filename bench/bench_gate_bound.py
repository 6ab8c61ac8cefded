"""Benchmark the wait a budget gate adds to a tool whose call Claude Code has not written yet (issue 41).

Run: ``python bench/bench_gate_bound.py [--runs N]``

Claude Code 2.1.332 starts a tool while its call still streams and writes the call's line only after the tool ran.
The gate now decides such a tool at once on a bound (the call at its worst: :mod:`agentlaunch.usage.call_bound`).
Measured here, end to end through the real hook command (``hook_ask`` started by ``sh -c`` as Claude Code starts it,
with a PreToolUse payload), the launch's source (:class:`ClaudeNativeSource`, its held hooks' socket) and the
launch's decision (:meth:`ToolGates.asked` with a real :class:`Pricer` on genai-prices' table for Sonnet 4.5 and a
guard with $0.01 spent of $5): the wall time from the hook's start to its exit, for

- ``bound``: the line is written only once the hook has exited (the streaming case): the bound allows at once;
- ``line``: the call's line is appended as the hook starts (the case the gate was first built for);
- ``hook floor``: the same hook command answered by the source with no decision at all (a tool the gate lets go
  without looking), the cost of the hook's process alone.

and the CPU time of one decision on the bound (``ToolGates.asked``: the four worst usages priced, the limits read).
Before this change the ``bound`` case waited ``GATE_READ_WAIT`` (10 s) and was then refused. Prints medians and
quartiles. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agentlaunch import datarecord as records  # noqa: E402
from agentlaunch.launch.tool_gates import ToolGates  # noqa: E402
from agentlaunch.providers.native.claude import native_extras  # noqa: E402
from agentlaunch.providers.native.claude_settings import transcript_path  # noqa: E402
from agentlaunch.providers.native.claude_source import ClaudeNativeSource  # noqa: E402
from agentlaunch.providers.native.source import ToolAsked  # noqa: E402
from agentlaunch.usage.call_meter import CallMeter  # noqa: E402
from agentlaunch.usage.meter import Meter  # noqa: E402
from agentlaunch.usage.pricing import Pricer  # noqa: E402
from tests.support.claude_native_replay import SESSION, context  # noqa: E402

MODEL = "claude-sonnet-4-5"


class Guard:
    def check(self, launch: Any) -> None:
        pass

    def headroom(self, launch: Any) -> list[tuple[str, float, float, str]]:
        return [("session_usd", 0.01, 5.0, "the session budget")]


class Launch:
    stopped: Any = None
    paused: Any = None
    child: Any = object()


def call_line(tool_id: str) -> str:
    usage = {"input_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 3}
    content = [{"type": "tool_use", "id": tool_id, "name": "Write", "input": {}}]
    message = {"id": f"msg_{tool_id}", "model": MODEL, "stop_reason": "tool_use", "usage": usage, "content": content}
    return json.dumps({"type": "assistant", "timestamp": "2099-01-01T00:00:00.000Z", "message": message}) + "\n"


def one(source: ClaudeNativeSource, gates: ToolGates | None, command: str, path: Path, n: int, line: bool) -> tuple[float, float]:
    """(the hook's wall time in ms, the decision's CPU time in ms)."""
    tool = f"toolu_{n}"
    payload = json.dumps({"session_id": SESSION, "tool_name": "Write", "tool_use_id": tool, "transcript_path": str(path)})
    start = time.perf_counter()
    hook = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert hook.stdin is not None
    hook.stdin.write(payload.encode())
    hook.stdin.close()
    if line:
        with path.open("a") as f:
            f.write(call_line(tool))
    cpu = 0.0
    while hook.poll() is None:
        select.select([source.fileno(), hook.stdout], [], [], 0.05)
        for item in source.read():
            if isinstance(item, ToolAsked):
                began = time.process_time()
                if gates is None:
                    item.answer(True, "")
                else:
                    gates.asked(Launch(), item)  # type: ignore[arg-type]
                cpu += time.process_time() - began
    wall = time.perf_counter() - start
    if not line:  # written after the tool ran, as Claude Code does: read before the next tool
        with path.open("a") as f:
            f.write(call_line(tool))
        source.read()
    out = hook.stdout.read() if hook.stdout is not None else b""
    assert out == b"", out
    return wall * 1000, cpu * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory(prefix="algb-") as name:
        root = Path(name)
        ctx = records.replace(context(root), gated=True, python=sys.executable)
        extras = native_extras(ctx)
        (source,) = extras.sources
        assert isinstance(source, ClaudeNativeSource)
        command = json.loads(extras.argv[1])["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        path = transcript_path(ctx.env, ctx.working_dir, SESSION)
        path.parent.mkdir(parents=True)
        path.write_text("")
        pricer = Pricer(config_dir=root, env={}, state_dir=root)
        calls = CallMeter(Meter(model=MODEL), pricer, agent="bench", provider="claude", model=MODEL)
        gates = ToolGates(Guard(), calls)  # type: ignore[arg-type]
        calls.worst_call()  # genai-prices imported and the rates kept once, as the launch's warm-up does
        try:
            n = 0
            for label, decide, line in (("hook floor", None, False), ("line", gates, True), ("bound", gates, False)):
                walls, cpus = [], []
                for _ in range(runs):
                    n += 1
                    wall, cpu = one(source, decide, command, path, n, line)
                    walls.append(wall)
                    cpus.append(cpu)
                q = statistics.quantiles(walls, n=4)
                print(
                    f"{label:>10}: hook start to exit median {statistics.median(walls):.1f} ms "
                    f"(quartiles {q[0]:.1f}-{q[2]:.1f}), decision CPU median {statistics.median(cpus):.2f} ms"
                )
        finally:
            source.close()


if __name__ == "__main__":
    main()
