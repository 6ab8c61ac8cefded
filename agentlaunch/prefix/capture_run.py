"""One capture run of the prefix doctor: a new session of the real provider CLI against the capture endpoint.

The session is started exactly as ``agentlaunch run`` starts it (the adapter's argv and flags, the environment shaped
by the same ``child_env``, the CLI on a PTY with stdin a pipe through the launch's transport, the instructions
delivered the same way, the startup message at the head of the first user message), in a fresh temporary working
directory and HOME. The CLI is pointed at a fake provider API on 127.0.0.1 with a dummy key; HTTP(S)_PROXY points at
the same endpoint (with NO_PROXY for loopback), so any attempt to reach another host shows up as a refused CONNECT.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from agentlaunch.definitions.render import RunFacts, render_startup
from agentlaunch.definitions.spec import AgentSpec
from agentlaunch.errors import DefinitionError, ProviderMissing, TurnFailed, TurnTimeout
from agentlaunch.launch.driver_choice import driver_for
from agentlaunch.launch.placement import Placement
from agentlaunch.launch.probe import probe
from agentlaunch.launch.start import plan_start
from agentlaunch.prefix.capture import CAPTURE_ENV, Capture, CaptureEnv, Recorded, bind, make_capture
from agentlaunch.prefix.static import Serialized, serialize
from agentlaunch.providers import DESCRIPTORS, describe, get_adapter
from agentlaunch.providers.descriptors import ProviderDescriptor

PROMPT = "Reply with the single word: ok."
RUN_TIMEOUT = 60.0
EXIT_GRACE = 10.0  # seconds a CLI gets to finish after its request was captured
# Provider settings of the user's own (every provider's, whichever runs) that must not leak into a capture run.
SCRUBBED = (*(prefix for d in DESCRIPTORS.values() for prefix in d.settings_env), "HTTP_PROXY", "HTTPS_PROXY")


@contextlib.contextmanager
def capture_endpoint(provider: str, port: int = 0) -> Iterator[Capture]:
    """A started capture endpoint for ``provider``'s API family (on ``port``, or another when it is busy)."""
    api, _ = live_api(describe(provider))
    capture = bind(lambda p: make_capture(api, p), port)
    capture.server.start()
    try:
        yield capture
    finally:
        capture.server.stop()


@dataclass
class RunResult:
    label: str
    working_dir: str
    exit_code: int | None
    seconds: float
    body: dict[str, Any]
    serialized: Serialized
    instructions: str


def live_api(descriptor: ProviderDescriptor) -> tuple[str, CaptureEnv]:
    """The API family of a provider the live check can run, and how to point its CLI at the endpoint;
    a DefinitionError for a provider it cannot run."""
    if descriptor.api is None or descriptor.api not in CAPTURE_ENV:
        real = ", ".join(d.name for d in DESCRIPTORS.values() if d.api is not None)
        raise DefinitionError(f"provider: the live check needs a real provider CLI ({real}), not {descriptor.name!r}")
    return descriptor.api, CAPTURE_ENV[descriptor.api]


def _scrubbed_env() -> dict[str, str]:
    """The environment `run` starts the CLI from, without the user's own provider settings (the capture
    endpoint's settings go on top)."""
    return {k: v for k, v in os.environ.items() if not k.upper().startswith(SCRUBBED)}


def _proxy_env(url: str) -> dict[str, str]:
    loopback = "127.0.0.1,localhost,::1"
    return {
        "HTTP_PROXY": url,
        "HTTPS_PROXY": url,
        "http_proxy": url,
        "https_proxy": url,
        "NO_PROXY": loopback,
        "no_proxy": loopback,
    }


Where = tuple[Path, Path, Path | None]
"""A capture run's working directory, state directory and templates directory."""


def launch_plan(
    spec: AgentSpec,
    command: str,
    capture: Capture,
    home: Path,
    message: str,
    session_id: str,
    where: Where | None,
) -> tuple[list[str], dict[str, str], bytes, Placement | None]:
    """argv, environment, stdin and placement of one capture run, started as `run` starts it
    (:func:`~agentlaunch.launch.start.plan_start`), pointed at the endpoint.

    The capture environment exists before the instructions are placed (a gemini-home
    links the capture HOME's settings, as `run` links the user's). Without ``where``,
    the adapter's argv alone (no instructions' arguments, no environment).
    """
    driver = driver_for(get_adapter(spec.provider))
    _, point_at = live_api(driver.adapter.descriptor)
    if where is None:
        argv, stdin = driver.first_turn(spec, command, session_id, [], message)
        return argv, {}, stdin, None
    proxy = _proxy_env(capture.server.url)
    workdir, state, templates_dir = where
    start = plan_start(
        spec,
        driver,
        working_dir=workdir,
        state_dir=state,
        session_id=session_id,
        resumed=False,
        today=date.today(),
        templates_dir=templates_dir,
        hold=False,
        environ=_scrubbed_env(),
        command=command,
        record=False,
        point=lambda env: {**point_at(capture.base_url, home, env, spec.model), **proxy},
    )
    argv, stdin = driver.first_turn(spec, command, session_id, start.placement_argv, message)
    return argv, start.env, stdin, start.placement


def run_once(
    spec: AgentSpec,
    command: str,
    capture: Capture,
    root: Path,
    label: str,
    *,
    templates_dir: Path | None = None,
    timeout: float = RUN_TIMEOUT,
    strip_flags: tuple[str, ...] = (),
) -> RunResult:
    """One new session of the real CLI in ``root/label``; the first model request it sent."""
    run_dir = root / label
    # One HOME path for every run, emptied each time: a user's HOME is the same from session to
    # session, so paths under it (memory files, CODEX_HOME) are no per-session difference.
    # The state directory too: the agent's installed skills and its Gemini or Codex home live there, and
    # the CLIs name those paths in their prompts (skill locations, skill roots).
    home, state = root / "home", root / "state"
    for folder in (run_dir, home, state):
        shutil.rmtree(folder, ignore_errors=True)
    # Differently named per run (project-a, project-b): a CLI that names its project in the prompt
    # (a per-project path, say) shows that cut instead of hiding it behind two folders both named `work`.
    workdir = run_dir / f"project-{label}"
    for folder in (workdir, home, state):
        folder.mkdir(parents=True)
    session_id = str(uuid.uuid4())
    facts = RunFacts(spec.provider, spec.model, session_id, workdir, datetime.now().astimezone())
    message = render_startup(spec, facts, templates_dir) + "\n" + PROMPT

    # A gemini-home links the user's Gemini home, and a codex agent with skills gets a Codex home that
    # links the user's: here the capture HOME's, never the real one.
    argv, env, stdin, placement = launch_plan(spec, command, capture, home, message, session_id, (workdir, state, templates_dir))
    assert placement is not None
    argv = [a for a in argv if a not in strip_flags]
    seen = len(capture.model_calls())
    started = time.monotonic()
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)

    def wake(_: Recorded) -> None:
        with contextlib.suppress(OSError):
            os.write(wake_write, b"!")

    capture.server.on_request.append(wake)
    try:
        # Started as `run` starts it: the PTY transport, stdin a pipe (see agentlaunch.launch.probe).
        ran = probe(
            argv,
            env,
            workdir,
            stdin,
            seen=lambda: len(capture.model_calls()) > seen,
            wake_fd=wake_read,
            timeout=timeout,
            grace=EXIT_GRACE,
            transcript=run_dir / "output.txt",
        )
    except ProviderMissing as exc:
        raise ProviderMissing(exc.message, hint=describe(spec.provider).install_hint) from None
    finally:
        capture.server.on_request.remove(wake)
        os.close(wake_read)
        os.close(wake_write)
    said = " / ".join(ran.last_output)[:600] or "nothing"
    if ran.timed_out:
        raise TurnTimeout(
            f"{spec.provider}: the CLI did not call the capture endpoint within {timeout:g}s "
            f"(run {label}); its last output: {said}",
            hint="a CLI that needs a login or network first never reaches the endpoint; check `command` and `env`",
        )
    calls = capture.model_calls()[seen:]
    if not calls:
        raise TurnFailed(
            f"{spec.provider}: the CLI exited with code {ran.exit_code} before calling the capture endpoint "
            f"(run {label}); it said: {said}"
        )
    body = calls[0].body
    assert isinstance(body, dict)
    return RunResult(
        label=label,
        working_dir=str(workdir),
        exit_code=ran.exit_code,
        seconds=round(time.monotonic() - started, 2),
        body=body,
        serialized=serialize(live_api(describe(spec.provider))[0], body),
        instructions=placement.rendered.text,
    )
