"""The prefix doctor, live part: run the real provider CLI against a capture endpoint and compare what it sent.

Each run is a new session in a fresh temporary working directory and HOME,
started exactly as ``agentlaunch run`` starts it (the adapter's argv and
flags, the environment shaped by the same ``child_env``, the CLI on a PTY
with stdin a pipe through the launch's transport, the instructions delivered
the same way, the startup message at the head of the first user message). The CLI is pointed at a fake provider API on
127.0.0.1 with a dummy key; HTTP(S)_PROXY points at the same endpoint (with
NO_PROXY for loopback), so any attempt to reach another host shows up as a
refused CONNECT. Nothing reaches a real provider.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from agentlaunch import datarecord as records
from agentlaunch.definitions.breakdown import PartSize
from agentlaunch.definitions.fingerprint import cli_version
from agentlaunch.definitions.render import RunFacts, render_startup
from agentlaunch.definitions.spec import AgentSpec, load_agent
from agentlaunch.errors import AgentlaunchError, DefinitionError, ProviderMissing, TurnFailed, TurnTimeout
from agentlaunch.launch.driver_choice import driver_for
from agentlaunch.launch.placement import Placement
from agentlaunch.launch.probe import probe
from agentlaunch.launch.start import plan_start
from agentlaunch.prefix.capture import CAPTURE_ENV, Capture, CaptureEnv, Recorded, bind, make_capture
from agentlaunch.prefix.interactive import InteractiveReport, interactive_once
from agentlaunch.prefix.static import (
    Difference,
    InstructionsPlace,
    Serialized,
    compare,
    place_instructions_in,
    request_parts,
    serialize,
)
from agentlaunch.processes import resolve_command
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
    api, _ = _live_api(describe(provider))
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


def _live_api(descriptor: ProviderDescriptor) -> tuple[str, CaptureEnv]:
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


def _launch_plan(
    spec: AgentSpec, command: str, capture: Capture, home: Path, message: str, session_id: str, where: Where | None,
) -> tuple[list[str], dict[str, str], bytes, Placement | None]:  # fmt: skip
    """argv, environment, stdin and placement of one capture run, started as `run` starts it
    (:func:`~agentlaunch.launch.start.plan_start`), pointed at the endpoint.

    The capture environment exists before the instructions are placed (a gemini-home
    links the capture HOME's settings, as `run` links the user's). Without ``where``,
    the adapter's argv alone (no instructions' arguments, no environment).
    """
    driver = driver_for(get_adapter(spec.provider))
    _, point_at = _live_api(driver.adapter.descriptor)
    if where is None:
        argv, stdin = driver.first_turn(spec, command, session_id, [], message)
        return argv, {}, stdin, None
    proxy = _proxy_env(capture.server.url)
    workdir, state, templates_dir = where
    start = plan_start(
        spec, driver, working_dir=workdir, state_dir=state, session_id=session_id, resumed=False, today=date.today(),
        templates_dir=templates_dir, hold=False, environ=_scrubbed_env(), command=command, record=False,
        point=lambda env: {**point_at(capture.base_url, home, env, spec.model), **proxy},
    )  # fmt: skip
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
    argv, env, stdin, placement = _launch_plan(spec, command, capture, home, message, session_id, (workdir, state, templates_dir))
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
            argv, env, workdir, stdin, seen=lambda: len(capture.model_calls()) > seen, wake_fd=wake_read,
            timeout=timeout, grace=EXIT_GRACE, transcript=run_dir / "output.txt",
        )  # fmt: skip
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
        serialized=serialize(_live_api(describe(spec.provider))[0], body),
        instructions=placement.rendered.text,
    )


@dataclass
class PairReport:
    """Two new sessions in two working directories, and where their requests part."""

    difference: Difference
    instructions: InstructionsPlace
    working_dirs: tuple[str, str]
    seconds: tuple[float, float]


def _pair(a: RunResult, b: RunResult) -> PairReport:
    diff = compare(a.serialized, b.serialized)
    place = place_instructions_in(a.serialized, a.instructions, diff.shared_bytes)
    return PairReport(diff, place, (a.working_dir, b.working_dir), (a.seconds, b.seconds))


@dataclass
class ControlReport:
    """The negative control: a unique marker at the head of the soul must shrink the shared prefix."""

    marker: str
    marker_offset: int | None
    same_dir_bytes: int
    """Shared prefix of two plain sessions in the same directory."""
    marked_bytes: int
    """Shared prefix of a plain session and a marked one, same directory."""
    passed: bool
    message: str
    unstable_at: int | None = None
    """Where two plain sessions in the same directory parted before the marker's place, when they did: the CLI's
    own prompt is not the same from run to run there (Gemini CLI 0.61 lists its skills in no fixed order)."""
    unstable_section: str | None = None


@dataclass
class Variant:
    delivery: str
    exclude_dynamic: bool
    shared_bytes: int
    shared_tokens: int
    section: str
    instructions_inside: int
    instructions_size: int


@dataclass
class LiveReport:
    provider: str
    cli: str
    cli_version: str
    argv: list[str]
    delivery: str
    pair: PairReport
    control: ControlReport
    proxy_attempts: list[str]
    other_calls: list[str]
    port_note: str | None = None
    variants: list[Variant] = field(default_factory=list)
    request_parts: list[PartSize] = field(default_factory=list)
    """Where the first session's request bytes go (the CLI's tools and system prompt, the instructions, messages)."""
    interactive: InteractiveReport | None = None
    """The CLI's own interface (the native mode) against the headless run b, in one project."""

    @property
    def ok(self) -> bool:
        return self.control.passed

    @property
    def verdict(self) -> str:
        """The measurement in plain words, with advice (see :func:`verdict`)."""
        return verdict(self.provider, self.delivery, self.pair, self.control)


def verdict(provider: str, delivery: str, pair: PairReport, control: ControlReport) -> str:
    """Whether the instructions are cached across projects, within one, or not at all, and what to do about it;
    and, when two identical sessions parted before them, that the CLI's own prompt changes there from run to run.

    ``pair`` ran in two differently named projects; ``control.same_dir_bytes`` is the
    prefix two sessions in one project share.
    """
    said = _placement(provider, delivery, pair, control)
    if control.passed and control.unstable_at is not None:
        said += (
            f"; but two identical sessions parted at byte {control.unstable_at:,} ({control.unstable_section}): the "
            "CLI's own prompt is not the same from run to run there, and the cache misses from that byte when it changes"
        )
    return said


def _placement(provider: str, delivery: str, pair: PairReport, control: ControlReport) -> str:
    place, section = pair.instructions, pair.difference.section_a or "the request"
    others = [d for d in describe(provider).deliveries if d != delivery]
    if not control.passed:
        return f"{provider}: the measurement failed its control, so it cannot say where the instructions are cached"
    if not place.found:
        return f"{provider}: the rendered instructions were not found in the request, so this cannot say whether they are cached"
    if place.inside_bytes >= place.size:
        return f"{provider}: all {place.size:,} bytes of the instructions are cached across projects"
    try_other = f"; try `delivery: {others[0]}`" if others else ""
    if place.end <= control.same_dir_bytes and delivery == "gemini-home":
        # `delivery: file` is no way out (the reference measures it outside the shared prefix altogether).
        return (
            f"{provider}: the instructions are cached within this project only; across projects Gemini's "
            f"own prompt differs before them ({section}); sessions in one project reuse them"
        )
    if place.end <= control.same_dir_bytes:
        return (
            f"{provider}: the instructions are cached within this project only; across projects the request "
            f"differs before them ({section}){try_other}"
        )
    if place.inside_bytes:
        return (
            f"{provider}: {place.inside_bytes:,} of {place.size:,} bytes of the instructions are cached across "
            f"projects; the request differs inside them ({section})"
        )
    return f"{provider}: none of the instructions are cached; the request differs before them ({section}){try_other}"


def marked_copy(spec: AgentSpec, root: Path, marker: str) -> Path:
    """A temporary copy of the agents directory whose agent has ``marker`` at the head of its soul."""
    dest = root / "agents-control"
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(spec.agents_dir, dest, symlinks=False)
    soul = dest / (spec.soul.path.relative_to(spec.agents_dir) if spec.soul else Path(spec.name) / "soul.md")
    old = soul.read_text("utf-8") if soul.exists() else ""
    soul.write_text(f"{marker}\n\n{old}", "utf-8")
    return dest


def _control(
    spec: AgentSpec, command: str, capture: Capture, root: Path, b: RunResult, templates_dir: Path | None, timeout: float
) -> ControlReport:
    """A plain session again and a marked one, in run b's folder: the marked one must part from the plain ones
    at the marker, where plain ones go on together.

    When the first two plain sessions part before the marker's place, the CLI's own prompt changed between two
    identical runs (Gemini CLI lists its skills in the order its file search meets them): one more plain run, and
    the pair that agrees longest is the reference. Of three runs of a prompt with two orders, two agree.
    """
    marker = f"agentlaunch-doctor-control-{uuid.uuid4().hex}"
    plain = [b, run_once(spec, command, capture, root, "b", templates_dir=templates_dir, timeout=timeout)]
    marked_spec = load_agent(marked_copy(spec, root, marker), spec.name)
    marked = run_once(marked_spec, command, capture, root, "b", templates_dir=templates_dir, timeout=timeout)
    at = marked.serialized.data.find(marker.encode())
    offset = at if at >= 0 else None
    first = compare(b.serialized, plain[1].serialized)
    unstable = first.shared_bytes if offset is not None and first.shared_bytes < offset else None
    if unstable is not None:
        plain.append(run_once(spec, command, capture, root, "b", templates_dir=templates_dir, timeout=timeout))
    same_dir = max(compare(x.serialized, y.serialized).shared_bytes for x, y in itertools.combinations(plain, 2))
    with_marker = max(compare(x.serialized, marked.serialized).shared_bytes for x in plain)
    section = first.section_a if unstable is not None else None
    drift = (
        f"; two plain sessions parted at byte {unstable:,} ({section}), before the marker: the CLI's own prompt "
        "changes from run to run there"
        if unstable is not None
        else ""
    )

    def report(passed: bool, message: str) -> ControlReport:
        return ControlReport(marker, offset, same_dir, with_marker, passed, message + drift, unstable, section)

    if offset is None:
        return report(False, "the marker never reached the request: the measurement is broken")
    if with_marker < same_dir:
        return report(
            True, f"passed: a marker in the soul cut the same-directory shared prefix from {same_dir:,} to {with_marker:,} bytes"
        )
    return report(
        False,
        f"the shared prefix did not shrink with a marker in the soul ({same_dir:,} -> {with_marker:,} bytes): "
        "the measurement is broken",
    )


def live_check(
    agents_dir: Path,
    name: str,
    *,
    templates_dir: Path | None = None,
    port: int = 0,
    timeout: float = RUN_TIMEOUT,
    variants: bool = False,
    workspace: Path | None = None,
) -> LiveReport:
    """Capture two new sessions of the real CLI, compare them, run the negative control (and the claude variants)."""
    spec = load_agent(agents_dir, name)
    descriptor = describe(spec.provider)
    try:
        _live_api(descriptor)
    except DefinitionError as exc:
        raise DefinitionError(f"{spec.agent_dir / 'agent.yaml'}: {exc.message}") from None
    try:
        command = resolve_command(spec.command or descriptor.default_command)
    except ProviderMissing as exc:
        raise ProviderMissing(exc.message, hint=descriptor.install_hint) from None
    with contextlib.ExitStack() as stack:
        root = workspace or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="agentlaunch-doctor-")))
        capture = stack.enter_context(capture_endpoint(spec.provider, port))
        a = run_once(spec, command, capture, root, "a", templates_dir=templates_dir, timeout=timeout)
        b = run_once(spec, command, capture, root, "b", templates_dir=templates_dir, timeout=timeout)
        pair = _pair(a, b)
        control = _control(spec, command, capture, root, b, templates_dir, timeout)
        found: list[Variant] = []
        if variants and descriptor.variant_flags:
            for delivery in sorted(descriptor.deliveries):
                for exclude in (True, False):
                    vspec = records.replace(spec, delivery=delivery)
                    strip = () if exclude else descriptor.variant_flags
                    va = run_once(
                        vspec, command, capture, root, "va", templates_dir=templates_dir, timeout=timeout, strip_flags=strip
                    )
                    vb = run_once(
                        vspec, command, capture, root, "vb", templates_dir=templates_dir, timeout=timeout, strip_flags=strip
                    )
                    vp = _pair(va, vb)
                    found.append(
                        Variant(
                            delivery,
                            exclude,
                            vp.difference.shared_bytes,
                            vp.difference.shared_tokens,
                            vp.difference.section_a,
                            vp.instructions.inside_bytes,
                            vp.instructions.size,
                        )
                    )
        attempts = [f"{r.method} {r.path}" for r in capture.server.proxy_attempts]
        # Last: it reuses run b's folder names, so that the mode is the only difference.
        interactive = interactive_once(
            spec, command, capture, root, "b", b.body, plan=_launch_plan, prompt=PROMPT, templates_dir=templates_dir,
            timeout=timeout,
        )  # fmt: skip
        argv, _, _, _ = _launch_plan(spec, command, capture, root / "home", "PROMPT", "SESSION", None)
        report = LiveReport(
            provider=spec.provider,
            cli=command,
            cli_version=cli_version(command, root),
            argv=[*argv[1:]],
            delivery=spec.delivery,
            pair=pair,
            control=control,
            proxy_attempts=attempts,  # the headless runs' (the interface's own are in its report)
            other_calls=capture.other_calls(),
            port_note=capture.port_note,
            variants=found,
            request_parts=request_parts(a.serialized, place_instructions_in(a.serialized, a.instructions, 0)),
            interactive=interactive,
        )
    return report


def report_dict(report: Any) -> Any:
    """A JSON-ready dict of a report (dataclasses and records all the way down)."""
    if records.is_record(report):
        data = {f.name: report_dict(getattr(report, f.name)) for f in records.fields(report) if f.name != "serialized"}
        if hasattr(report, "ok"):
            data["ok"] = report.ok
        if isinstance(report, LiveReport):
            data["verdict"] = report.verdict
        return data
    if isinstance(report, list | tuple):
        return [report_dict(v) for v in report]
    return report


__all__ = ["AgentlaunchError", "LiveReport", "live_check", "report_dict", "run_once"]
