"""One prompt of ``agentlaunch acp``: a headless turn of the definition, ``agentlaunch run AGENT - --json``, as a child.

The child is the same headless turn a script runs (the instructions delivered, the startup message on a new session
only, ``-r`` on later prompts, every call in the usage store, the budgets checked, the session in ``status``). Its
normalized events (``--json``, docs/scripting.md) come back line by line; its permission questions come on stderr
and are answered on a pipe (``--ask-fd``: one line, y, a or n). This module imports no ACP SDK: the server
(:mod:`agentlaunch.cli.acp_server`) turns the events into the editor's updates.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

EVENT_LINE = 4 << 20  # bytes of one event line from the child, at most (a longer one is skipped)
STDERR_KEPT = 16 << 10  # the last bytes of the child's stderr kept for the message of a failed turn
END_GRACE = 10.0  # seconds a child has to end after SIGTERM (it ends its CLI first) before SIGKILL
ANSWERS = {"once": b"y\n", "always": b"a\n", "deny": b"n\n"}


def run_argv(
    agent: str,
    *,
    cwd: str,
    resume: str | None,
    ask_fd: int,
    agents_dir: Path | None,
    templates_dir: Path | None,
    extra: Sequence[str] = (),
) -> list[str]:
    """The child's command line: one headless turn, the prompt on its stdin, events as JSON lines."""
    argv = [sys.executable, "-m", "agentlaunch", "run", agent, "-", "--json", "--working-dir", cwd, "--ask-fd", str(ask_fd)]
    if resume is not None:
        argv += ["--resume", resume]
    if agents_dir is not None:
        argv += ["--agents-dir", str(agents_dir)]
    if templates_dir is not None:
        argv += ["--templates-dir", str(templates_dir)]
    return [*argv, *extra]


class TurnProcess:
    """The running child of one prompt: its events, its permission answers, its interruption and its end."""

    def __init__(self, proc: asyncio.subprocess.Process, ask_write: int) -> None:
        self.proc = proc
        self._ask_write: int | None = ask_write
        self._stderr = bytearray()
        self._stderr_task = asyncio.ensure_future(self._read_stderr())
        self.interrupted = False

    @classmethod
    async def start(cls, argv_of: Any, prompt: str, env: dict[str, str] | None = None) -> TurnProcess:
        """Start the child (``argv_of(ask_fd)`` its command line) and hand it ``prompt`` on its stdin.

        Raises OSError when it cannot start."""
        ask_read, ask_write = os.pipe()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv_of(ask_read),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                pass_fds=(ask_read,),
                env=env,
                limit=EVENT_LINE,
            )
        except BaseException:
            os.close(ask_write)
            raise
        finally:
            os.close(ask_read)
        turn = cls(proc, ask_write)
        assert proc.stdin is not None
        try:
            with contextlib.suppress(OSError):  # a child that ended at once says why on stderr
                proc.stdin.write(prompt.encode("utf-8"))
                await proc.stdin.drain()
        except asyncio.CancelledError:  # the client went away meanwhile: no child left behind
            await asyncio.shield(turn.end())
            raise
        proc.stdin.close()
        return turn

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """The child's events as they come (a line that is no JSON object, or over EVENT_LINE bytes, is skipped)."""
        out = self.proc.stdout
        assert out is not None
        skipping = False  # inside a line over the bound: dropped up to its end
        while True:
            try:
                line = await out.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                if skipping or not exc.partial:
                    return
                line = exc.partial
            except asyncio.LimitOverrunError as exc:
                await out.readexactly(exc.consumed)
                skipping = True
                continue
            if skipping:
                skipping = False
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and isinstance(event.get("event"), str):
                yield event

    def answer(self, decision: str) -> None:
        """Answer the open permission question: once, always or deny (nothing when the child is gone)."""
        if self._ask_write is None:
            return
        with contextlib.suppress(OSError):
            os.write(self._ask_write, ANSWERS.get(decision, ANSWERS["deny"]))

    def interrupt(self) -> None:
        """End the turn as Ctrl-C does (SIGINT: the calls so far are stored, the session stays resumable)."""
        self.interrupted = True
        self._signal(signal.SIGINT)

    def _signal(self, sig: int) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(sig)

    async def wait(self) -> tuple[int, str]:
        """The child's exit code and the end of what it said on stderr."""
        code = await self.proc.wait()
        await self._stderr_task
        self._close_ask()
        return code, self._stderr.decode("utf-8", "replace")

    async def end(self, grace: float = END_GRACE) -> None:
        """End the child however it is (the client went away): SIGTERM, which ends its CLI, then SIGKILL."""
        self._signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), grace)
        except TimeoutError:
            self._signal(signal.SIGKILL)
            await self.proc.wait()
        self._close_ask()

    def _close_ask(self) -> None:
        if self._ask_write is not None:
            os.close(self._ask_write)
            self._ask_write = None

    async def _read_stderr(self) -> None:
        err = self.proc.stderr
        assert err is not None
        while chunk := await err.read(65536):
            self._stderr += chunk
            del self._stderr[:-STDERR_KEPT]


def failure_text(stderr: str) -> str:
    """What a child that failed said, in a few lines: its ``error:`` lines, else its last lines."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    said = [line for line in lines if line.lower().startswith(("error", "hint", "budget"))]
    return "\n".join(said or lines[-3:]) or "the turn failed with no message"
