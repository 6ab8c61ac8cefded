"""What every provider adapter provides: argv, environment, instructions file name, a parser."""

from __future__ import annotations

import abc
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentlaunch.events import Diagnostic, Event


@dataclass(frozen=True)
class TurnPlan:
    """How to start the CLI for a session (persistent) or for one turn (per-turn providers)."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)
    stdin: bytes | None = None
    """Per-turn CLIs: what to write to stdin before closing it (b"" = at EOF at once)."""


def parse_json_line(line: str) -> dict[str, Any] | Diagnostic | None:
    """A JSON object from ``line``, a Diagnostic for anything else, None for a blank line."""
    stripped = line.strip()
    if not stripped:
        return None
    if stripped[0] == "{":
        try:
            obj = json.loads(stripped)
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
        return self.event(obj)

    @abc.abstractmethod
    def event(self, obj: dict[str, Any]) -> list[Event]:
        """Normalized events for one of the CLI's JSON events."""

    def finish(self) -> list[Event]:
        """Events still pending when the output ends (e.g. a call whose final usage never came)."""
        return []


def child_env(base: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """The child's environment: the user's plus the agent's ``env``."""
    env = dict(base)
    env.update(extra)
    return env
