"""The prefix doctor, live part: run the real provider CLI against a capture endpoint and compare what it sent.

Two new sessions in two projects, then the negative control (a marker at the head of the soul must shrink the shared
prefix) and, asked for, the claude variants; each session is one capture run (:mod:`agentlaunch.prefix.capture_run`:
started exactly as ``agentlaunch run`` starts it, nothing reaching a real provider), the report and its verdict are
:mod:`agentlaunch.prefix.live_report`'s.
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
import tempfile
import uuid
from pathlib import Path

from agentlaunch import datarecord as records
from agentlaunch.definitions.fingerprint import cli_version
from agentlaunch.definitions.spec import AgentSpec, load_agent
from agentlaunch.errors import DefinitionError, ProviderMissing
from agentlaunch.prefix.capture import Capture
from agentlaunch.prefix.capture_run import PROMPT, RUN_TIMEOUT, RunResult, capture_endpoint, launch_plan, live_api, run_once
from agentlaunch.prefix.interactive import interactive_once
from agentlaunch.prefix.live_report import ControlReport, LiveReport, Variant, pair_of
from agentlaunch.prefix.static import compare, place_instructions_in, request_parts
from agentlaunch.processes import resolve_command
from agentlaunch.providers import describe


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
        live_api(descriptor)
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
        pair = pair_of(a, b)
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
                    vp = pair_of(va, vb)
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
            spec,
            command,
            capture,
            root,
            "b",
            b.body,
            plan=launch_plan,
            prompt=PROMPT,
            templates_dir=templates_dir,
            timeout=timeout,
        )
        argv, _, _, _ = launch_plan(spec, command, capture, root / "home", "PROMPT", "SESSION", None)
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
