"""The live check's report: two sessions compared, the negative control, the claude variants, and the verdict in
plain words (:class:`LiveReport`, :func:`report_dict` for ``--json``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentlaunch import datarecord as records
from agentlaunch.definitions.breakdown import PartSize
from agentlaunch.prefix.capture_run import RunResult
from agentlaunch.prefix.interactive import InteractiveReport
from agentlaunch.prefix.static import Difference, InstructionsPlace, compare, place_instructions_in
from agentlaunch.providers import describe


@dataclass
class PairReport:
    """Two new sessions in two working directories, and where their requests part."""

    difference: Difference
    instructions: InstructionsPlace
    working_dirs: tuple[str, str]
    seconds: tuple[float, float]


def pair_of(a: RunResult, b: RunResult) -> PairReport:
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
