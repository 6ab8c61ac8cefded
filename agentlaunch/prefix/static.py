"""The prefix doctor, pure part: what in the instructions changes per session, and where two requests part.

Prompt caching pays only while the bytes in front of the model repeat exactly.
The static check renders an agent's instructions with different session facts
and finds every byte that moved; the live check (``doctor_live``) captures
real request bodies, and this module serializes them in the provider's prefix
order (tools, then system, then messages) and finds the first differing byte.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from agentlaunch import datarecord as records
from agentlaunch.definitions.breakdown import PartSize, breakdown
from agentlaunch.definitions.names import agent_names
from agentlaunch.definitions.render import Rendered, estimate_tokens, render_instructions
from agentlaunch.definitions.spec import AgentSpec, load_agent
from agentlaunch.errors import DefinitionError
from agentlaunch.providers.descriptors import GEMINI_API, RESPONSES_API

CONTEXT = 80  # bytes of context shown on each side of the first difference
# Two working directories that no definition can name on purpose.
WORKDIR_A = Path("/doctor/session-a/work")
WORKDIR_B = Path("/doctor/session-b/elsewhere")

# -- the static check ------------------------------------------------------------


@dataclass(frozen=True)
class VolatileHit:
    """One place where a template variable's per-session value lands in the instructions."""

    variable: str
    offset: int
    section: str
    pinned: bool = False
    """True when agent.yaml pins ``working_dir``: the value is the same launch after launch."""


@dataclass(frozen=True)
class CrossAgent:
    """How much of its prefix this agent shares with another one that uses the same bundles or skills."""

    agent: str
    provider: str
    same_provider: bool
    shared_bundles: tuple[str, ...]
    own_first_bytes: int
    shared_first_bytes: int


@dataclass(frozen=True)
class StaticReport:
    agent: str
    provider: str
    model: str | None
    delivery: str
    prefix_order: str
    filename: str
    size: int
    tokens: int
    volatile: tuple[VolatileHit, ...]
    stable_bytes: int
    """Bytes before the first volatile byte (the whole text when nothing is volatile)."""
    stable_tokens: int
    verdict: str
    cross: tuple[CrossAgent, ...] = ()
    parts: tuple[PartSize, ...] = ()
    """Where the instructions' bytes go: each section, the skills index, the template's own text."""

    @property
    def ok(self) -> bool:
        return not any(not hit.pinned for hit in self.volatile)


def _byte_offset(text: str, index: int) -> int:
    return len(text[:index].encode("utf-8"))


def differing_offsets(a: str, b: str) -> list[int]:
    """Byte offsets in ``a`` where a region that differs from ``b`` starts."""
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [_byte_offset(a, i1) for tag, i1, _, _, _ in matcher.get_opcodes() if tag != "equal"]


def section_spans(rendered: Rendered) -> list[tuple[int, int, str]]:
    """Byte ranges of each section in the rendered text, found in order; the rest is template and skills index."""
    data = rendered.data
    spans: list[tuple[int, int, str]] = []
    cursor = 0
    for label, text in rendered.parts:
        needle = text.strip().encode("utf-8")
        at = data.find(needle, cursor) if needle else -1
        if at >= 0:
            spans.append((at, at + len(needle), label))
            cursor = at + len(needle)
    return spans


def label_at(spans: list[tuple[int, int, str]], offset: int) -> str:
    for start, end, label in spans:
        if start <= offset < end:
            return label
    return "template or skills index"


def static_check(agents_dir: Path, name: str, templates_dir: Path | None = None, today: date | None = None) -> StaticReport:
    """Render ``name``'s instructions with other session facts; report every byte that moves, and cross-agent sharing."""
    spec = load_agent(agents_dir, name)
    day = today or date.today()
    base = render_instructions(spec, WORKDIR_A, day, templates_dir=templates_dir)
    spans = section_spans(base)
    pinned_dir = spec.working_dir is not None
    hits: list[VolatileHit] = []
    variants = {
        "DATE": render_instructions(spec, WORKDIR_A, day + timedelta(days=1), templates_dir=templates_dir),
        "WORKING_DIR": render_instructions(spec, WORKDIR_B, day, templates_dir=templates_dir),
    }
    for variable, other in variants.items():
        for offset in differing_offsets(base.text, other.text):
            pinned = variable == "WORKING_DIR" and pinned_dir
            hits.append(VolatileHit(variable, offset, label_at(spans, offset), pinned))
    hits.sort(key=lambda h: h.offset)
    moving = [h for h in hits if not h.pinned]
    stable = moving[0].offset if moving else base.size
    if not moving:
        verdict = f"stable: all {base.size:,} bytes are the same in every session"
    else:
        where = moving[0]
        verdict = (
            f"volatile: {{{{{where.variable}}}}} in the {where.section} at byte {where.offset:,} ends the cacheable prefix; "
            f"the {base.size - stable:,} bytes after it are written to the cache again whenever it changes"
        )
    return StaticReport(
        agent=spec.name,
        provider=spec.provider,
        model=spec.model,
        delivery=spec.delivery,
        prefix_order=spec.prefix_order,
        filename=base.filename,
        size=base.size,
        tokens=base.tokens,
        volatile=tuple(hits),
        stable_bytes=stable,
        stable_tokens=estimate_tokens(stable),
        verdict=verdict,
        cross=tuple(cross_agent(spec, agents_dir, templates_dir, day)),
        parts=tuple(breakdown(spec, base, WORKDIR_A, day, None, templates_dir)),
    )


def common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix of ``a`` and ``b``."""
    n = min(len(a), len(b))
    lo, hi = 0, n
    # Binary search on slices: C-speed comparisons, fine for bodies of a few hundred KB.
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def cross_agent(spec: AgentSpec, agents_dir: Path, templates_dir: Path | None, day: date) -> list[CrossAgent]:
    """Other agents that share a bundle or a skill with ``spec``: their common prefix in each order."""
    mine = {b.name for b in spec.bundles}
    my_skills = {s.name for s in spec.skills}
    found: list[CrossAgent] = []
    for other_name in agent_names(agents_dir):
        if other_name == spec.name:
            continue
        try:
            other = load_agent(agents_dir, other_name)
        except DefinitionError:
            continue
        shared = tuple(b.name for b in other.bundles if b.name in mine)
        if not shared and not (my_skills & {s.name for s in other.skills}):
            continue
        sizes = []
        for order in ("own-first", "shared-first"):
            a = render_instructions(records.replace(spec, prefix_order=order), WORKDIR_A, day, templates_dir=templates_dir)
            b = render_instructions(records.replace(other, prefix_order=order), WORKDIR_A, day, templates_dir=templates_dir)
            sizes.append(common_prefix(a.data, b.data))
        found.append(CrossAgent(other.name, other.provider, other.provider == spec.provider, shared, sizes[0], sizes[1]))
    return found


# -- serializing captured requests in prefix order ---------------------------------


@dataclass(frozen=True)
class Segment:
    start: int
    end: int
    label: str


@dataclass
class Serialized:
    """A request body as the bytes a prefix cache compares: each piece in order, with what it is."""

    data: bytes = b""
    segments: list[Segment] = field(default_factory=list)

    def add(self, value: Any, label: str) -> None:
        chunk = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        self.segments.append(Segment(len(self.data), len(self.data) + len(chunk), label))
        self.data += chunk

    def section_at(self, offset: int) -> str:
        for seg in self.segments:
            if seg.start <= offset < seg.end:
                return seg.label
        return "end of request"


def _add_message(out: Serialized, i: int, message: Any, parts_key: str, drop: tuple[str, ...] = ()) -> None:
    if not isinstance(message, dict):
        out.add(message, f"message {i}")
        return
    message = {k: v for k, v in message.items() if k not in drop}
    role = message.get("role") or message.get("type") or "?"
    label = f"message {i} ({role})"
    parts = message.get(parts_key)
    out.add({k: v for k, v in message.items() if k != parts_key}, label)
    if isinstance(parts, list):
        for j, part in enumerate(parts):
            out.add(part, f"{label} / content part {j}")
    elif parts is not None:
        out.add(parts, label)


def _tool_name(tool: Any) -> str:
    if isinstance(tool, dict):
        name = tool.get("name") or (tool.get("function") or {}).get("name") or tool.get("type")
        return f" ({name})" if name else ""
    return ""


def serialize(api: str, body: dict[str, Any]) -> Serialized:
    """``body`` in the provider's prefix order: Anthropic tools, system, messages; Responses tools,
    instructions, input; Gemini tools, systemInstruction, contents."""
    out = Serialized()
    if api == GEMINI_API:
        n = 0
        for tool in body.get("tools") or []:
            decls = tool.get("functionDeclarations") if isinstance(tool, dict) else None
            for decl in decls if isinstance(decls, list) else [tool]:
                out.add(decl, f"tool {n}{_tool_name(decl)}")
                n += 1
        system = body.get("systemInstruction") or body.get("system_instruction")
        if isinstance(system, dict) and isinstance(system.get("parts"), list):
            for j, part in enumerate(system["parts"]):
                out.add(part, f"system part {j}")
        elif system is not None:
            out.add(system, "system")
        for i, content in enumerate(body.get("contents") or []):
            _add_message(out, i, content, "parts")
        return out
    for i, tool in enumerate(body.get("tools") or []):
        out.add(tool, f"tool {i}{_tool_name(tool)}")
    if api == RESPONSES_API:
        if body.get("instructions") is not None:
            out.add(body["instructions"], "instructions")
        for i, item in enumerate(body.get("input") or []):
            # Item ids (Codex sends a fresh msg_<uuid> per session) are bookkeeping the model never reads.
            _add_message(out, i, item, "content", drop=("id",))
        return out
    system = body.get("system")
    if isinstance(system, list):
        for j, block in enumerate(system):
            out.add(block, f"system block {j}")
    elif system is not None:
        out.add(system, "system")
    for i, message in enumerate(body.get("messages") or []):
        _add_message(out, i, message, "content")
    return out


@dataclass(frozen=True)
class Difference:
    """Where two serialized requests part."""

    shared_bytes: int
    shared_tokens: int
    size_a: int
    size_b: int
    section_a: str
    section_b: str
    before: str
    after_a: str
    after_b: str
    identical: bool


def _show(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def compare(a: Serialized, b: Serialized) -> Difference:
    shared = common_prefix(a.data, b.data)
    identical = a.data == b.data
    return Difference(
        shared_bytes=shared,
        shared_tokens=estimate_tokens(shared),
        size_a=len(a.data),
        size_b=len(b.data),
        section_a=a.section_at(shared),
        section_b=b.section_at(shared),
        before=_show(a.data[max(0, shared - CONTEXT) : shared]),
        after_a=_show(a.data[shared : shared + CONTEXT]),
        after_b=_show(b.data[shared : shared + CONTEXT]),
        identical=identical,
    )


@dataclass(frozen=True)
class InstructionsPlace:
    """Where the rendered instructions sit in a serialized request, and how much of them is shared."""

    found: bool
    start: int = 0
    end: int = 0
    section: str = ""
    size: int = 0
    """Bytes of the instructions text (as rendered)."""
    inside_bytes: int = 0
    """Bytes of the instructions text that lie inside the shared prefix."""


def _escaped(text: str) -> bytes:
    return json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8")


def _unescaped_size(escaped: bytes) -> int:
    """Bytes of the text whose JSON-escaped form is (a prefix of) ``escaped``."""
    cut = len(escaped)
    while cut > 0:
        try:
            return len(json.loads(b'"' + escaped[:cut] + b'"').encode("utf-8"))
        except ValueError:
            cut -= 1  # cut inside an escape sequence: back off
    return 0


def place_instructions_in(ser: Serialized, text: str, shared: int) -> InstructionsPlace:
    """Find ``text`` (as JSON-escaped in the serialized request) and how much of it precedes byte ``shared``."""
    body = text.strip()
    size = len(body.encode("utf-8"))
    needle = _escaped(body)
    start = ser.data.find(needle)
    if start < 0:
        # The CLI may reflow the ends; anchor on the first line instead.
        first = _escaped(body.splitlines()[0]) if body else b""
        start = ser.data.find(first) if first else -1
        if start < 0:
            return InstructionsPlace(found=False, size=size)
    end = start + len(needle)
    inside = _unescaped_size(needle[: max(0, min(shared, end) - start)])
    return InstructionsPlace(True, start, end, ser.section_at(start), size, inside)


def request_parts(serialized: Serialized, place: InstructionsPlace) -> list[PartSize]:
    """Where a captured request's bytes go: the CLI's tool definitions, its own system prompt (the system field,
    developer and system messages), the agent's instructions (taken out of whichever holds them), the messages."""

    def size(segments: list[Segment]) -> int:
        return sum(s.end - s.start for s in segments)

    tools = [s for s in serialized.segments if s.label.startswith("tool ")]
    # The CLI's own prompt: the system field, and developer or system messages (Codex sends its prompt as those).
    system = [
        s
        for s in serialized.segments
        if s.label.startswith(("system", "instructions")) or "(developer)" in s.label or "(system)" in s.label
    ]
    messages = [s for s in serialized.segments if s not in tools and s not in system]
    ours = place.end - place.start if place.found else 0
    in_system = place.found and any(s.start <= place.start < s.end for s in system)
    parts = [
        PartSize.of(f"the CLI's tool definitions ({len(tools)})", size(tools)),
        PartSize.of("the CLI's own system prompt", size(system) - (ours if in_system else 0)),
    ]
    if place.found:
        parts.append(PartSize.of("the agent's instructions", ours))
    parts.append(PartSize.of("messages", size(messages) - (0 if in_system else ours)))
    return parts
