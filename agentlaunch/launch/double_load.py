"""At launch: instructions files in the working directory that load text the model already gets.

Three cases, each found by reading at most three small files in the working
directory: a CLAUDE.md / AGENTS.md / GEMINI.md that holds this agent's
rendered text (a leftover of ``render`` or of an earlier ``delivery: file``);
one that agentlaunch wrote earlier for any agent (the delivery ledger knows
it, and its bytes still match); a CLAUDE.md and an AGENTS.md with the same
content. The file the launch itself delivers into (``delivery: file``) is
never counted. The result is one line, with the tokens it costs per call
(estimated as ``render`` does), or None.
"""

from __future__ import annotations

from pathlib import Path

from agentlaunch.definitions.deliver import EXISTING_LIMIT, Ledger, sha256
from agentlaunch.definitions.rendered import estimate_tokens
from agentlaunch.errors import StateError
from agentlaunch.fsutil import read_regular
from agentlaunch.providers.descriptors import DESCRIPTORS

INSTRUCTION_FILES = tuple(dict.fromkeys(d.instructions_file for d in DESCRIPTORS.values()))
"""Every provider's instructions file (CLAUDE.md, AGENTS.md, GEMINI.md), as its descriptor names it."""


def _read(path: Path) -> bytes | None:
    try:
        return read_regular(path, EXISTING_LIMIT)
    except OSError:
        return None  # absent, unreadable, not a regular file or too large: nothing to say about it


def double_loading(working_dir: Path, rendered: bytes, state_dir: Path, delivered: Path | None) -> str | None:
    """One line about instructions that reach the model twice, or None; ``delivered`` is the file this launch writes."""
    found: dict[str, bytes] = {}
    for name in INSTRUCTION_FILES:
        path = working_dir / name
        if delivered is not None and path == delivered:
            continue
        data = _read(path)
        if data is not None:
            found[name] = data
    if not found:
        return None
    entries: dict[str, object] = {}
    try:
        with Ledger(state_dir).locked() as ledger:
            entries = dict(ledger)
    except (StateError, OSError):  # a notice never stops a launch; deliver reports the ledger's problems
        entries = {}
    reasons: list[str] = []
    cost = 0
    for name, data in found.items():
        entry = entries.get(str(working_dir / name))
        if data == rendered:
            reasons.append(f"{name} holds this agent's instructions")
        elif isinstance(entry, dict) and entry.get("sha256") == sha256(data):
            reasons.append(f"{name} was written by agentlaunch (agent {entry.get('agent')!r})")
        else:
            continue
        cost += estimate_tokens(len(data))
    claude_md, agents_md = found.get("CLAUDE.md"), found.get("AGENTS.md")
    if claude_md is not None and claude_md == agents_md and not any(r.startswith("AGENTS.md") for r in reasons):
        reasons.append("AGENTS.md repeats CLAUDE.md")
        cost += estimate_tokens(len(agents_md))
    if not reasons:
        return None
    return (
        f"double loading in {working_dir}: {'; '.join(reasons)}: ~{cost:,} tokens more per call "
        "for a CLI that reads them; remove what you do not mean to keep"
    )
