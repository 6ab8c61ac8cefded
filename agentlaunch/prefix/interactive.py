"""The prefix doctor, interactive part: does the CLI's own interface send the prefix a headless run sends?

``agentlaunch run AGENT`` at a terminal starts the provider's own interface
(the native mode) with the same delivery and flags as a headless run. This
runs that interface exactly so (the adapter's ``interface_argv``, the startup
message and the doctor's prompt as its first prompt) on a PTY against the
capture endpoint, in a project named like the headless run it is compared
with, HOME seeded as a set-up user's (onboarding done, the folder trusted),
and compares the first model request with the headless one. Where they part
before the messages (a different tool list, say), a session's cache is not
shared between its headless and interactive turns.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import termios
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from agentlaunch.definitions.render import RunFacts, render_startup
from agentlaunch.definitions.spec import AgentSpec
from agentlaunch.launch.transport import Child
from agentlaunch.prefix.capture import Capture, Recorded
from agentlaunch.prefix.static import Difference, compare, serialize
from agentlaunch.providers import describe, get_adapter

SIZE = (120, 40)


@dataclass
class InteractiveReport:
    """The interface's first request against the headless run's, in one project."""

    measured: bool
    note: str  # what was measured, or why not
    difference: Difference | None = None
    tools_headless: int | None = None
    tools_interactive: int | None = None
    proxy_attempts: list[str] = field(default_factory=list)
    """Connections the interface tried beyond the capture endpoint (refused; its own update or plugin checks)."""
    no_interface: bool = False
    """The leg was skipped: the provider has no interface, or the CLI started as one exited before any request."""

    @property
    def same_prefix(self) -> bool:
        """The requests share everything before the conversation (tools, system prompt / instructions)."""
        return self.difference is not None and (self.difference.identical or self.difference.section_a.startswith("message"))


def _tools(body: Mapping[str, Any]) -> int | None:
    """How many tools a request offers (Gemini's are the declarations inside its one tools entry)."""
    tools = body.get("tools")
    if not isinstance(tools, list):
        return None
    count = 0
    for tool in tools:
        decls = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        count += len(decls) if isinstance(decls, list) else 1
    return count


def interactive_once(
    spec: AgentSpec,
    command: str,
    capture: Capture,
    root: Path,
    label: str,
    headless_body: dict[str, Any],
    *,
    plan: Any,
    prompt: str,
    templates_dir: Path | None,
    timeout: float,
) -> InteractiveReport:
    """Run the interface once in ``root/label`` (emptied first) and compare its first request with ``headless_body``.

    ``plan(spec, command, capture, home, message, session_id, (workdir, state, templates_dir))`` is the live
    check's start of a CLI (argv, env, stdin, placement, through ``plan_start``); only its env and placement are
    used here.
    """
    # The same HOME and state-dir paths as the headless runs (see run_once): only the mode differs.
    run_dir, home, state = root / label, root / "home", root / "state"
    for folder in (run_dir, home, state):
        shutil.rmtree(folder, ignore_errors=True)
    workdir = run_dir / f"project-{label}"
    for folder in (workdir, home, state):
        folder.mkdir(parents=True)
    adapter = get_adapter(spec.provider)
    if not adapter.has_interface:
        return InteractiveReport(False, f"{spec.provider} has no interface of its own", no_interface=True)
    session_id = str(uuid.uuid4())
    facts = RunFacts(spec.provider, spec.model, session_id, workdir, datetime.now().astimezone())
    message = render_startup(spec, facts, templates_dir) + "\n" + prompt

    _, env, _, placement = plan(spec, command, capture, home, message, session_id, (workdir, state, templates_dir))
    assert placement is not None
    argv = adapter.interface_argv(
        spec,
        command,
        session_id=session_id,
        resumed=False,
        state=adapter.new_state(session_id),
        placement_argv=placement.argv,
        extra_argv=[],
        prompt=message,
    )
    adapter.seed_interface_home(home, workdir, env, argv)
    # The interface, unlike headless runs, checks for updates: never from a measurement (no other host is reached).
    env = {**env, "TERM": "xterm-256color", "DISABLE_AUTOUPDATER": "1", "DISABLE_UPDATES": "1"}
    before = len(capture.server.proxy_attempts)
    tail = bytearray()
    exited: list[int] = []
    body = _first_request(
        argv, env, workdir, capture, prompt, timeout, tools=_tools(headless_body) is not None, tail=tail, exited=exited
    )
    tried = [f"{r.method} {r.path}" for r in capture.server.proxy_attempts[before:]]
    if body is None:
        from agentlaunch.launch.native.last_words import last_words

        said = " / ".join(last_words(bytes(tail), 4)) or "nothing"
        if exited:  # a CLI with no interface of its own (a headless-only build or wrapper): nothing to wait for
            note = f"started as its interface, the CLI exited (code {exited[0]}) before any request; it showed: {said}"
            return InteractiveReport(False, note, proxy_attempts=tried, no_interface=True)
        note = f"the interface sent no request with the prompt within {timeout:g}s (a first-run question?); it showed: {said}"
        return InteractiveReport(False, note, proxy_attempts=tried)
    api = describe(spec.provider).api or ""
    diff = compare(serialize(api, headless_body), serialize(api, body))
    return InteractiveReport(True, "measured", diff, _tools(headless_body), _tools(body), tried)


def _first_request(
    argv: list[str],
    env: Mapping[str, str],
    workdir: Path,
    capture: Capture,
    prompt: str,
    timeout: float,
    *,
    tools: bool,
    tail: bytearray,
    exited: list[int],
) -> dict[str, Any] | None:
    """The interface's first model request that carries ``prompt`` (and tools, when the headless one had them:
    its side calls, a title say, are skipped), or None; the CLI's exit code goes into ``exited`` when it ends first."""
    seen = len(capture.model_calls())

    def found() -> dict[str, Any] | None:
        for call in capture.model_calls()[seen:]:
            body = call.body
            if isinstance(body, dict) and prompt in json.dumps(body) and (not tools or _tools(body) is not None):
                return body
        return None

    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)

    def wake(_: Recorded) -> None:
        with contextlib.suppress(OSError):
            os.write(wake_write, b"!")

    master, slave = os.openpty()
    mode = termios.tcgetattr(slave)  # a fresh terminal's settings, as a terminal emulator gives them
    os.close(master)
    os.close(slave)
    capture.server.on_request.append(wake)
    child = Child(argv, env, workdir, size=SIZE, terminal=mode)
    try:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            if (body := found()) is not None:
                return body
            fds = [wake_read] + ([child.master] if not child.eof else [])
            if child.eof and child.pidfd is not None:
                fds.append(child.pidfd)  # its output ended: its exit comes next (the PTY closes before it is reaped)
            elif child.eof:
                left = min(left, 0.05)  # no pidfd: look again shortly
            ready = select.select(fds, [], [], left)[0]
            if wake_read in ready:
                with contextlib.suppress(OSError):
                    os.read(wake_read, 512)
            if child.master in ready:
                tail += child.read_bytes()  # drained so that it never blocks; its last text explains a failure
                del tail[:-4096]
            if child.eof and (code := child.poll()) is not None:
                body = found()
                if body is None:
                    exited.append(code)
                return body
        return found()
    finally:
        capture.server.on_request.remove(wake)
        child.stop(grace=1.0)
        child.close()
        os.close(wake_read)
        os.close(wake_write)
