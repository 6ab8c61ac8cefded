"""Gemini CLI 0.61.0's recorded session files (tests/data/native) replayed into a temporary per-agent Gemini home, and
the native source reading them (test_native_gemini*.py).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from agentlaunch.providers.native.gemini import project_hash
from agentlaunch.providers.native.source import NativeContext
from agentlaunch.sinks import StateChanged

DATA = Path(__file__).parent.parent / "data" / "native"
SESSION = "4bc96738-2f95-4ef8-9b32-e8c4d9d5018a"


class Bench:
    def __init__(self, root: Path, session_id: str | None = None, resumed: bool = False) -> None:
        self.home = root / "ghome"
        self.work = root / "work"
        self.work.mkdir(parents=True, exist_ok=True)
        self.chats = self.home / ".gemini" / "tmp" / "work" / "chats"
        self.file = self.chats / "session-2026-12-01T11-24-4bc96738.jsonl"
        self.session_id = session_id
        self.resumed = resumed
        self.started_at = time.time() - 5

    def ctx(self) -> NativeContext:
        env = {"HOME": str(self.home), "GEMINI_CLI_HOME": str(self.home)}
        return NativeContext("helper", self.session_id, self.resumed, self.work, env, self.home, self.started_at, "python3")

    def recorded(self, name: str) -> bytes:
        text = (DATA / name).read_text().replace("/WORK", str(self.work)).replace("/HOME", str(self.home))
        # The header's projectHash is of the recording's folder: make it this folder's, and its start time now.
        lines = []
        for line in text.splitlines():
            if line.startswith('{"sessionId"'):
                head = json.loads(line)
                head["projectHash"] = project_hash(self.work)
                head["startTime"] = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
                line = json.dumps(head)
            lines.append(line)
        return ("\n".join(lines) + "\n").encode()

    def write(self, data: bytes) -> None:
        self.chats.mkdir(parents=True, exist_ok=True)
        self.file.write_bytes(data)


def states(items: list[Any]) -> list[str]:
    return [i.state for i in items if isinstance(i, StateChanged)]
