"""The source of a native Claude launch fed by a test: hook and status-line reports sent to its socket as Claude Code
2.1.332 sent them (recorded in tests/data/claude_tui), its transcript written beside (test_claude_native*.py).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch.providers.native.claude import (
    ClaudeNativeSource,
    native_extras,
    transcript_path,
)
from agentlaunch.providers.native.hook_report import report
from agentlaunch.providers.native.source import NativeContext, NativeItem
from agentlaunch.sinks import StateChanged

DATA = Path(__file__).parent.parent / "data" / "claude_tui"
SESSION = "11111111-2222-3333-4444-555555555555"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="alnt-") as name:  # short: it holds a socket
        yield Path(name)


def context(root: Path, env: dict[str, str] | None = None, status: Path | None = None) -> NativeContext:
    work, runtime = root / "work", root / "rt"
    work.mkdir(parents=True, exist_ok=True)
    runtime.mkdir(exist_ok=True, mode=0o700)
    env = env or {"HOME": str(root / "home")}
    return NativeContext("reviewer", SESSION, False, work, env, runtime, 0.0, "/usr/bin/python3", status)


def send(sock_path: Path, event: str, payload: object) -> None:
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.sendto(report(event, json.dumps(payload)), str(sock_path))


def replay(root: Path, name: str, clock: Clock) -> tuple[list[NativeItem], Path]:
    """Each recorded report sent as the CLI sent it; the transcript appended in pieces between them."""
    ctx = context(root)
    extras = native_extras(ctx)
    (source,) = extras.sources
    assert isinstance(source, ClaudeNativeSource)
    source.clock = clock
    reports = [json.loads(line) for line in (DATA / name / "reports.jsonl").read_text().splitlines()]
    data = (DATA / name / "transcript.jsonl").read_bytes()
    path = transcript_path(ctx.env, ctx.working_dir, SESSION)
    path.parent.mkdir(parents=True)
    items: list[NativeItem] = []
    step = len(data) // max(len(reports), 1) + 1
    for n, entry in enumerate(reports):
        payload = dict(entry["payload"] or {})
        payload["transcript_path"] = str(path)  # the recording's own path, moved here
        with path.open("ab") as f:
            f.write(data[n * step : (n + 1) * step])
        send(ctx.runtime_dir / "claude.sock", entry["event"], payload)
        items += source.read()
        clock.now += 0.1
    with path.open("ab") as f:
        f.write(data[len(reports) * step :])
    clock.now += 10
    items += source.read()  # the read after the CLI exits
    source.close()
    assert not (ctx.runtime_dir / "claude.sock").exists()
    return items, path


def states(items: list[NativeItem]) -> list[str]:
    return [i.state for i in items if isinstance(i, StateChanged)]
