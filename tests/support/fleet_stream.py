"""``agentlaunch fleet --watch --json`` run for a test: its lines read in a thread, waited for by what they say."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any


class Stream:
    """The command as a real process (its stdout a pipe the test reads), until :meth:`close`."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentlaunch", "fleet", "--watch", "--json", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.put(json.loads(raw))
        self.lines.put(None)

    def until(self, matches: Callable[[dict[str, Any]], bool], timeout: float = 30.0, what: str = "a line") -> dict[str, Any]:
        """The next line ``matches`` accepts (those before it kept in :attr:`seen`); fails after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                said = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"no {what} within {timeout}s; seen: {self.seen[-8:]}") from None
            if said is None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise AssertionError(f"the stream ended before {what}: exit {self.proc.wait()}: {err}; seen: {self.seen[-8:]}")
            self.seen.append(said)
            if matches(said):
                return said

    def quiet(self, seconds: float) -> list[dict[str, Any]]:
        """What the stream said within ``seconds`` (a check that nothing comes while nothing changes)."""
        got: list[dict[str, Any]] = []
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                said = self.lines.get(timeout=left)
            except queue.Empty:
                break
            if said is not None:
                got.append(said)
        return got

    def close(self) -> int:
        """Close its stdin and end it (by its pid): its exit status."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(10)
        finally:
            for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                if pipe is not None:
                    pipe.close()


def change(kind: str, host: str | None = None, **fields: object) -> Callable[[dict[str, Any]], bool]:
    """A matcher: a line of ``kind`` for ``host`` whose fields (an agent's too, as ``agent__state``) are ``fields``."""

    def matches(said: dict[str, Any]) -> bool:
        if said.get("change") != kind or said.get("host") != host:
            return False
        for name, value in fields.items():
            top, _, sub = name.partition("__")
            got = said.get(top)
            if sub:
                got = got.get(sub) if isinstance(got, dict) else None
            if callable(value) and not isinstance(value, type):
                if not value(got):
                    return False
            elif got != value:
                return False
        return True

    return matches
