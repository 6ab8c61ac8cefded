"""What a rendering gives (:class:`Rendered`), and the template files it reads, without importing Jinja.

The launch path keeps a rendering by the digest of its inputs
(:mod:`agentlaunch.definitions.render_cache`); an unchanged agent then never
imports Jinja, which :mod:`agentlaunch.definitions.render` needs.
"""

from __future__ import annotations

import math
import os
from datetime import date, datetime
from pathlib import Path

from agentlaunch.datarecord import datarecord
from agentlaunch.definitions.spec import PART_LIMIT, AgentSpec, Part
from agentlaunch.errors import DefinitionError
from agentlaunch.paths import package_data

INSTRUCTIONS_TEMPLATE = "instructions.md.j2"
STARTUP_TEMPLATE = "startup.md.j2"


def estimate_tokens(n_bytes: int) -> int:
    """A rough token estimate (about four bytes a token for English and code)."""
    return math.ceil(n_bytes / 4)


def template_variables(spec: AgentSpec, working_dir: Path, today: date) -> dict[str, str]:
    """The variables every part of the instructions may use."""
    return {
        "AGENT": spec.name,
        "AGENT_DISPLAY": spec.display,
        "AGENT_ID": spec.id,
        "DATE": today.isoformat(),
        "WORKING_DIR": str(working_dir),
    }


def sections(spec: AgentSpec) -> list[Part]:
    """The parts of the instructions, in prefix order.

    ``own-first`` (the default): soul, agent instructions, bundles.
    ``shared-first``: bundles, then soul and agent instructions, so agents that
    share bundles share the head of their prefix (the template puts the skills
    index between the two groups).
    """
    own = [part for part in (spec.soul, spec.instructions) if part is not None]
    if spec.prefix_order == "shared-first":
        return [*spec.bundles, *own]
    return [*own, *spec.bundles]


def part_label(spec: AgentSpec, part: Part) -> str:
    """How a person names a section: soul, agent instructions, or bundle NAME."""
    return "soul" if part is spec.soul else "agent instructions" if part is spec.instructions else f"bundle {part.name}"


def quantize_time(now: datetime) -> datetime:
    """Round down to ten minutes, so nearby launches say the same time."""
    return now.replace(minute=now.minute - now.minute % 10, second=0, microsecond=0)


def template_search(templates_dir: Path | None) -> list[str]:
    """The folders templates are looked up in: the user's (``--templates-dir``) before the defaults."""
    search = [str(templates_dir)] if templates_dir is not None else []
    search.append(str(package_data("templates")))
    return search


def template_source(search: list[str], pieces: list[str]) -> tuple[str, str] | None:
    """The text and file name of the template at ``pieces`` (its path, split) in the first folder of ``search``
    holding it; None when none does. Only a regular file within a definition part's size limit is read."""
    from agentlaunch.fsutil import FileTooLarge, NotRegularFile, read_regular

    for folder in search:
        filename = os.path.join(folder, *pieces)
        try:
            data = read_regular(Path(filename), PART_LIMIT)
        except FileNotFoundError:
            continue
        except (NotRegularFile, FileTooLarge) as exc:
            raise DefinitionError(f"{filename}: template: {exc.strerror}") from None
        except OSError as exc:
            raise DefinitionError(f"{filename}: template: cannot read ({exc.strerror})") from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DefinitionError(f"{filename}: template: not valid UTF-8 (offset {exc.start})") from None
        return text, os.path.normpath(filename)
    return None


@datarecord(frozen=True)
class VolatileUse:
    variable: str
    source: str


@datarecord(frozen=True)
class Rendered:
    """The instructions text for one provider, and what in it changes per launch."""

    text: str
    filename: str
    volatile: tuple[VolatileUse, ...]
    first_volatile_offset: int | None
    parts: tuple[tuple[str, str], ...] = ()
    """Each section's rendered text by the name a person knows it by (``soul``, ``bundle NAME``), in prefix order."""

    @property
    def data(self) -> bytes:
        return self.text.encode("utf-8")

    @property
    def size(self) -> int:
        return len(self.data)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.size)
