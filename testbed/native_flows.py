"""Real Codex and Gemini TUIs run with agentlaunch's native extras, their sources read as the relay would.

Used by the end-to-end tests (tests/e2e/test_native_sources.py) and by the
recording script (``python -m tests.support.record_tui codex gemini``), which
keeps the files and hook reports of such runs as unit-test data.

A flow starts the CLI on a PTY with ``native_extras(ctx)``'s argv and env,
and between screen reads does what the relay loop does with each source:
``read()`` when its descriptor is readable or its deadline has passed.
"""

from __future__ import annotations

import os
import select
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentlaunch.providers.native.hook_socket import HookReport, HookSocket
from agentlaunch.providers.native.source import NativeContext, NativeExtras, NativeItem, NativeSource
from testbed.pty_screen import Screen, spawn


@dataclass
class Followed:
    """What a flow saw: every item the sources reported, and every hook report (for recordings)."""

    items: list[NativeItem] = field(default_factory=list)
    reports: list[HookReport] = field(default_factory=list)

    def of(self, kind: type) -> list[Any]:
        return [i for i in self.items if isinstance(i, kind)]


def runtime_dir() -> Path:
    """A short private folder (a socket path is at most 107 bytes), as the relay makes one."""
    return Path(tempfile.mkdtemp(prefix="agentlaunch-", dir="/tmp"))


def context(agent: str, env: dict[str, str], workdir: Path, runtime: Path, session_id: str | None = None) -> NativeContext:
    return NativeContext(
        agent=agent,
        session_id=session_id,
        resumed=session_id is not None,
        working_dir=workdir,
        env=env,
        runtime_dir=runtime,
        started_at=time.time(),
        python=sys.executable,
    )


def record_reports(extras: NativeExtras, followed: Followed) -> None:
    """Keep a copy of every hook report the sources take (the recording script saves them)."""
    for source in extras.sources:
        sock = getattr(source, "sock", None)
        if isinstance(sock, HookSocket):
            receive = sock.receive

            def logged(receive: Callable[[], list[HookReport]] = receive) -> list[HookReport]:
                got = receive()
                followed.reports.extend(got)
                return got

            sock.receive = logged  # type: ignore[method-assign]


def follower(sources: list[NativeSource], followed: Followed) -> Callable[[], None]:
    """What the relay loop does once: read each source whose descriptor is readable or deadline passed."""

    def step() -> None:
        waits = {source: source.filenos() for source in sources}  # asked again each time, as the relay does
        ready, _, _ = select.select(sorted({fd for fds in waits.values() for fd in fds}), [], [], 0)
        now = time.monotonic()
        for source, fds in waits.items():
            deadline = source.deadline()
            if set(fds) & set(ready) or (deadline is not None and deadline <= now):
                followed.items.extend(source.read())

    return step


def finish(sources: list[NativeSource], followed: Followed) -> None:
    """After the CLI exits: one last read, then close (the contract's order)."""
    for source in sources:
        followed.items.extend(source.read())
        source.close()


def run_tui(argv: list[str], env: dict[str, str], workdir: Path, extras: NativeExtras, followed: Followed) -> Screen:
    full_env = {**env, **extras.env}
    return spawn(argv, full_env, workdir)


def cleanup(runtime: Path) -> None:
    shutil.rmtree(runtime, ignore_errors=True)


def drain_until(tui: Screen, step: Callable[[], None], check: Callable[[], bool], timeout: float = 60.0) -> bool:
    """Pump the screen and the sources until ``check()`` holds."""
    return tui.within(check, timeout, every=step)


def env_without(env: dict[str, str], *names: str) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in names}


def cli_path(name: str) -> Path:
    """The cached CLI for the recording script (the tests use ensure_cli)."""
    cache = Path(os.environ.get("AGENTLAUNCH_TEST_CLI_CACHE", "/tmp/agentlaunch-provider-clis"))
    found = sorted(cache.glob(f"{name}-*/node_modules/.bin/{name}")) or sorted(cache.glob(f"node_modules/.bin/{name}"))
    if not found:
        raise SystemExit(f"no cached {name} under {cache}")
    return found[-1]


# -- Codex ---------------------------------------------------------------------------------------


@dataclass
class CodexRun:
    followed: Followed
    rollout: Path | None
    screen: str


def codex_turns(
    codex: Path,
    env: dict[str, str],
    workdir: Path,
    prompts: list[str],
    done_marks: list[str],
    session_id: str | None = None,
    answer: str | None = None,
) -> CodexRun:
    """``codex [resume ID] PROMPT`` with the native extras, then each further prompt typed; exit with Ctrl-C."""
    from agentlaunch.fakeapi.responses import codex_quiet_args
    from agentlaunch.providers.native.codex import CodexNativeSource, native_extras

    runtime = runtime_dir()
    followed = Followed()
    try:
        ctx = context("coder", env, workdir, runtime, session_id)
        extras = native_extras(ctx)
        record_reports(extras, followed)
        argv = [str(codex), *codex_quiet_args(), *extras.argv]
        argv += ["resume", session_id] if session_id else []
        argv += [prompts[0]] if prompts and not session_id else []
        typed = prompts[1:] if not session_id else prompts
        tui = run_tui(argv, env, workdir, extras, followed)
        step = follower(extras.sources, followed)
        try:
            if answer is not None:
                # A permission prompt first: answered once the source said "asking".
                assert drain_until(tui, step, lambda: "asking" in [getattr(i, "state", "") for i in followed.items]), tui.text()
                tui.within(lambda: False, 0.5, every=step)
                tui.child.send(answer)
            if prompts and not session_id:
                assert drain_until(tui, step, lambda: done_marks[0] in tui.text()), tui.text()
                marks = done_marks[1:]
            else:
                assert drain_until(tui, step, lambda: "Ask Codex" in tui.text() or "›" in tui.text()), tui.text()
                marks = done_marks
            for prompt, mark in zip(typed, marks, strict=True):
                tui.within(lambda: False, 0.5, every=step)
                tui.child.send(prompt)
                tui.within(lambda: False, 0.3, every=step)
                tui.child.send("\r")
                assert drain_until(tui, step, lambda m=mark: m in tui.text()), tui.text()  # type: ignore[misc]
            # Let the Stop hook and the last rollout lines arrive.
            drain_until(tui, step, lambda: any(getattr(i, "state", None) == "waiting" for i in followed.items[-3:]), 10)
            tui.within(lambda: False, 2.0, every=step)
            screen = tui.text()
        finally:
            tui.close()
        finish(extras.sources, followed)
        source = next(s for s in extras.sources if isinstance(s, CodexNativeSource))
        return CodexRun(followed, source.tail.path if source.tail else None, screen)
    finally:
        cleanup(runtime)


# -- Gemini --------------------------------------------------------------------------------------


@dataclass
class GeminiRun:
    followed: Followed
    files: list[Path]
    screen: str


def gemini_turns(
    gemini: Path,
    env: dict[str, str],
    workdir: Path,
    model: str,
    prompts: list[str],
    done_marks: list[str],
    session_id: str | None = None,
) -> GeminiRun:
    """``gemini -m MODEL [--resume ID] -i PROMPT`` with the native extras, then each further prompt typed."""
    from agentlaunch.providers.native.gemini import GeminiNativeSource, native_extras

    runtime = runtime_dir()
    followed = Followed()
    try:
        ctx = context("helper", env, workdir, runtime, session_id)
        extras = native_extras(ctx)
        argv = [str(gemini), "-m", model, *extras.argv]
        argv += ["--resume", session_id] if session_id else []
        argv += ["-i", prompts[0]]
        tui = run_tui(argv, env, workdir, extras, followed)
        step = follower(extras.sources, followed)
        try:
            assert drain_until(tui, step, lambda: done_marks[0] in tui.text()), tui.text()
            for prompt, mark in zip(prompts[1:], done_marks[1:], strict=True):
                tui.within(lambda: False, 0.5, every=step)
                tui.child.send(prompt)
                tui.within(lambda: False, 0.3, every=step)
                tui.child.send("\r")
                assert drain_until(tui, step, lambda m=mark: m in tui.text()), tui.text()  # type: ignore[misc]
            tui.within(lambda: False, 2.0, every=step)
            screen = tui.text()
        finally:
            tui.close()
        finish(extras.sources, followed)
        source = next(s for s in extras.sources if isinstance(s, GeminiNativeSource))
        return GeminiRun(followed, list(source.tails), screen)
    finally:
        cleanup(runtime)
