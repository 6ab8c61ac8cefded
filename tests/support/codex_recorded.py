"""Codex CLI 0.171.0's recorded rollout files and hook reports (tests/data/native) replayed into a temporary
CODEX_HOME, and the native source reading them (test_native_codex*.py).
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from agentlaunch.events import CallUsage, Usage
from agentlaunch.providers.native import hook_report
from agentlaunch.providers.native.codex import CodexNativeSource
from agentlaunch.providers.native.hook_socket import HookSocket
from agentlaunch.providers.native.source import NativeContext
from agentlaunch.sinks import StateChanged

DATA = Path(__file__).parent.parent / "data" / "native"
THREAD = "01a23159-06b0-7eb3-8a1e-98642d967f31"
EXPECTED = [
    (Usage(input=1000, cache_read=8000, output=7, reasoning=3), "resp_fake_1"),
    (Usage(input=100, cache_read=9000, output=5), "resp_fake_2"),
    (Usage(input=100, cache_read=9100, output=4), "resp_fake_3"),
]
RESUMED = [(Usage(input=100, cache_read=9200, output=6, reasoning=1), "resp_fake_4")]


# Codex files a rollout under the day it started: the recordings' day folder (2026/12/01) becomes today's, where
# the source lists (the hooks' transcript_path names the folder too; replayed as recorded it failed on any other day).
TODAY = time.strftime("%Y/%m/%d")


def recorded(name: str, home: Path, work: Path) -> bytes:
    text = (DATA / name).read_text().replace("/sessions/2026/12/01/", f"/sessions/{TODAY}/")
    return text.replace("/HOME", str(home)).replace("/WORK", str(work)).encode()


class Bench:
    """A CODEX_HOME, a working dir, a runtime dir with the source's socket, and the rollout path Codex would use."""

    def __init__(self, root: Path, resumed: bool = False, started_at: float | None = None) -> None:
        self.home = root / "home"
        self.work = root / "work"
        self.work.mkdir(parents=True, exist_ok=True)
        self.rollout = self.home / ".codex" / "sessions" / TODAY / f"rollout-2026-12-01T11-24-07-{THREAD}.jsonl"
        self.rollout.parent.mkdir(parents=True, exist_ok=True)
        self.runtime = root / "rt"
        self.runtime.mkdir(exist_ok=True)
        self.resumed = resumed
        self.started_at = time.time() - 5 if started_at is None else started_at

    def ctx(self) -> NativeContext:
        env = {"HOME": str(self.home), "CODEX_HOME": str(self.home / ".codex")}
        return NativeContext(
            "coder", THREAD if self.resumed else None, self.resumed, self.work, env, self.runtime, self.started_at, "python3"
        )

    def source(self, with_socket: bool = True) -> CodexNativeSource:
        sock = HookSocket(self.runtime / "s.sock") if with_socket else None
        return CodexNativeSource(self.ctx(), sock)

    def send(self, event: str, payload: dict[str, Any]) -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendto(hook_report.report(event, json.dumps(payload)), str(self.runtime / "s.sock"))


def calls(items: list[Any]) -> list[tuple[Usage, str | None]]:
    return [(i.usage, i.call_id) for i in items if isinstance(i, CallUsage)]


def states(items: list[Any]) -> list[str]:
    return [i.state for i in items if isinstance(i, StateChanged)]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)


def event_msg(payload: dict[str, Any]) -> bytes:
    return json.dumps({"type": "event_msg", "payload": payload}).encode() + b"\n"
