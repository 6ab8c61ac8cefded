"""Feeding lines to a provider's stream parser without its last-resort guard, and what came out: the calls counted,
the warnings (test_hostile_events*.py).
"""

from __future__ import annotations

from agentlaunch.events import CallUsage, Event, Usage, Warning
from agentlaunch.providers.base import JsonLineParser


def run(parser: JsonLineParser, lines: list[str]) -> list[Event]:
    events: list[Event] = []
    for line in lines:
        events += parser.read_line(line)
    return events + parser.finish()


def calls(events: list[Event]) -> list[Usage]:
    return [e.usage for e in events if isinstance(e, CallUsage)]


def warnings(events: list[Event]) -> list[str]:
    return [e.message for e in events if isinstance(e, Warning)]
