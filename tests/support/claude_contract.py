"""The pinned Claude Code CLI in stream-json mode against the scripted fake Anthropic API, for the contract tests
(tests/e2e/test_claude*_contract.py): a process with its stdin and event stream, and a harness that stops them.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.fakeapi.anthropic import (
    ApiUsage,
    FakeAnthropic,
    Planned,
    claude_env,
)
from testbed.clis import ensure_cli

MODEL = "claude-sonnet-4-5"
Event = dict[str, Any]


def usage_of(u: ApiUsage, output: int) -> dict[str, int]:
    return {
        "input_tokens": u.input_tokens,
        "cache_creation_input_tokens": u.cache_creation_input_tokens,
        "cache_read_input_tokens": u.cache_read_input_tokens,
        "output_tokens": output,
    }


def pick(usage: Mapping[str, Any]) -> dict[str, int]:
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
    return {k: int(usage[k]) for k in keys}


class Claude:
    """One ``claude -p`` stream-json process: JSON lines in on stdin, events out on stdout."""

    def __init__(
        self,
        binary: Path,
        base_url: str,
        home: Path,
        cwd: Path,
        *,
        session_id: str | None = None,
        resume: str | None = None,
        model: str = MODEL,
        extra: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.session_id = session_id or str(uuid.uuid4())
        args = [str(binary), "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
        args += ["--include-partial-messages", "--exclude-dynamic-system-prompt-sections", "--model", model]
        args += ["--resume", resume] if resume else ["--session-id", self.session_id]
        args += list(extra)
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
        full_env.update(claude_env(base_url, home, env))
        self.proc = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=full_env
        )
        self.events: list[Event] = []
        self._queue: queue.Queue[Event | None] = queue.Queue()
        self._stderr: list[bytes] = []
        self._readers = [threading.Thread(target=read, daemon=True) for read in (self._read_stdout, self._read_stderr)]
        for reader in self._readers:
            reader.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            event = json.loads(raw)  # with stdout a pipe, every line is JSON
            self.events.append(event)
            self._queue.put(event)
        self._queue.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        self._stderr.extend(self.proc.stderr)

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode(errors="replace")

    def send(self, message: Mapping[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def user(self, text: str) -> None:
        self.send({"type": "user", "message": {"role": "user", "content": text}})

    def next(self, pred: Callable[[Event], bool], timeout: float = 60) -> Event:
        """The next event matching ``pred``; fails on timeout or end of output."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                event = self._queue.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no matching event within {timeout}s; stderr: {self.stderr}")
            if event is None:
                pytest.fail(f"claude ended its output early (exit {self.proc.poll()}); stderr: {self.stderr}")
            if pred(event):
                return event

    def rest(self, timeout: float = 60) -> list[Event]:
        """Every event still to come, until the end of output."""
        events = []
        while (event := self._queue.get(timeout=timeout)) is not None:
            events.append(event)
        return events

    def result(self, timeout: float = 60) -> Event:
        return self.next(lambda e: e["type"] == "result", timeout)

    def turn(self, text: str) -> Event:
        self.user(text)
        return self.result()

    def close(self, timeout: float = 30) -> int:
        """Close stdin (ends the session) and return the exit code, once all it printed has been read.

        The exit can come before the reader threads took the last of its output (CI run 45: an exit 1 whose error
        line was not in ``stderr`` yet).
        """
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        code = self.proc.wait(timeout)
        for reader in self._readers:
            reader.join(5)  # a helper Claude Code left running may hold the pipes: not for ever
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def of_type(self, kind: str, subtype: str | None = None) -> list[Event]:
        return [e for e in self.events if e["type"] == kind and (subtype is None or e.get("subtype") == subtype)]

    def stream(self, kind: str) -> list[Event]:
        return [e["event"] for e in self.events if e["type"] == "stream_event" and e["event"]["type"] == kind]


@pytest.fixture(scope="module")
def claude_bin() -> Path:
    return ensure_cli("claude")


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    return home, work


class Harness:
    """Starts the fake API and claude processes; stops them all at the end of a test."""

    def __init__(self, binary: Path, home: Path, cwd: Path) -> None:
        self.binary, self.home, self.cwd = binary, home, cwd
        self.api = FakeAnthropic()
        self.server = self.api.serve().start()
        self.procs: list[Claude] = []

    def script(self, *plans: Planned) -> None:
        self.api.push(*plans)

    def claude(self, **kwargs: Any) -> Claude:
        kwargs.setdefault("cwd", self.cwd)
        proc = Claude(self.binary, self.server.url, self.home, **kwargs)
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in self.procs:
            proc.kill()
        self.server.stop()


@pytest.fixture
def h(claude_bin: Path, dirs: tuple[Path, Path]) -> Iterator[Harness]:
    harness = Harness(claude_bin, *dirs)
    try:
        yield harness
    finally:
        harness.stop()
