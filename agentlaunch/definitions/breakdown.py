"""Where the instructions prefix's tokens go: each part's bytes and estimated tokens.

The parts are the sections in prefix order (soul, agent instructions, each
bundle), the skills index, and the template's own text around them. Token
counts are estimates (bytes / 4, as everywhere in agentlaunch before the
provider counts them).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path

from agentlaunch import datarecord as records
from agentlaunch.definitions.render import Rendered, estimate_tokens, render_instructions
from agentlaunch.definitions.spec import AgentSpec


@dataclass(frozen=True)
class PartSize:
    """One part of a prefix: its name, size in bytes and estimated tokens."""

    label: str
    bytes: int
    tokens: int

    @classmethod
    def of(cls, label: str, size: int) -> PartSize:
        return cls(label, size, estimate_tokens(size))


def breakdown(
    spec: AgentSpec, rendered: Rendered, working_dir: Path, today: date, provider: str | None, templates_dir: Path | None
) -> list[PartSize]:
    """The parts of ``rendered`` (the agent's instructions as rendered for ``provider``), in prefix order.

    The skills index is measured as what the text loses without the skills; the
    template's own text is what is left. The sizes add up to ``rendered.size``.
    """
    parts = [PartSize.of(label, len(text.encode("utf-8"))) for label, text in rendered.parts]
    if spec.skills:
        bare = render_instructions(records.replace(spec, skills=()), working_dir, today, provider, templates_dir)
        parts.append(PartSize.of(f"skills index ({len(spec.skills)})", rendered.size - bare.size))
    framing = rendered.size - sum(p.bytes for p in parts)
    parts.append(PartSize.of("template (headings, framing)", framing))
    return parts
