"""What every provider adapter provides: argv, environment, instructions file name, a parser."""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentlaunch.events import CallUsage, Diagnostic, Event, Usage, Warning
from agentlaunch.providers.values import loads


@dataclass(frozen=True)
class TurnPlan:
    """How to start the CLI for a session (persistent) or for one turn (per-turn providers)."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)
    stdin: bytes | None = None
    """Per-turn CLIs: what to write to stdin before closing it (b"" = at EOF at once)."""


def parse_json_line(line: str) -> dict[str, Any] | Diagnostic | None:
    """A JSON object from ``line``, a Diagnostic for anything else (also JSON nested too deep), None for a blank line."""
    stripped = line.strip()
    if not stripped:
        return None
    if stripped[0] == "{":
        try:
            obj = loads(stripped)
        except ValueError:
            return Diagnostic(stripped[:2000])
        if isinstance(obj, dict):
            return obj
    return Diagnostic(stripped[:2000])


class JsonLineParser(abc.ABC):
    """The shared front of the provider parsers: blank lines are skipped, lines that are not
    JSON objects become Diagnostics, and each JSON object goes to :meth:`event`."""

    def feed(self, line: str) -> list[Event]:
        obj = parse_json_line(line)
        if obj is None:
            return []
        if isinstance(obj, Diagnostic):
            return [obj]
        try:
            return self.event(obj)
        except Exception as exc:  # a shape no handler foresaw is reported, never the end of the session
            return [Warning(f"agentlaunch could not read a provider event ({type(exc).__name__}); skipped it")]

    @abc.abstractmethod
    def event(self, obj: dict[str, Any]) -> list[Event]:
        """Normalized events for one of the CLI's JSON events."""

    def finish(self) -> list[Event]:
        """Events still pending when the output ends (e.g. a call whose final usage never came)."""
        return []


def json_lines(path: Path, marker: str) -> list[Any]:
    """What the lines of ``path`` that contain ``marker`` parse to, in order (lines that are not JSON are skipped).

    For the logs the per-turn CLIs keep (Codex's rollout, Gemini's session
    file): ``marker`` is a cheap filter before parsing. [] when unreadable.
    """
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            lines = [line for line in fh if marker in line]
    except OSError:
        return []
    parsed = []
    for line in lines:
        try:
            parsed.append(loads(line))
        except ValueError:  # not JSON, or nested too deep: not a record the CLI writes
            continue
    return parsed


def split_turn(turn: CallUsage, recorded: Sequence[CallUsage]) -> list[CallUsage]:
    """A turn's usage as its calls: the fewest of the last ``recorded`` calls that add up to it exactly.

    Codex and Gemini print one sum per turn; the figures of each call are only
    in the files they keep (Codex's rollout, Gemini's session file). Those are
    taken when the last of them add up to the printed sum, field by field, so a
    file that is missing, late or shaped otherwise never changes what is
    counted: the turn is then recorded as one call, as printed.
    """
    target = turn.usage.as_dict()
    total = Usage()
    for k in range(1, len(recorded) + 1):
        total = total + recorded[-k].usage
        summed = total.as_dict()
        if summed == target:
            return [CallUsage(c.usage, c.model or turn.model, c.call_id) for c in recorded[-k:]]
        if any(summed[f] > target[f] for f in target):
            break
    return [turn]


def child_env(base: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """The child's environment: the user's plus the agent's ``env``."""
    env = dict(base)
    env.update(extra)
    return env
