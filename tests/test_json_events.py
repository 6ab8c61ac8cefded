"""The `--json` vocabulary: the events agentlaunch emits are the ones events.JSON_EVENTS names and the docs list."""

from __future__ import annotations

import re
from pathlib import Path

from agentlaunch import events
from agentlaunch.token_usage import Usage
from tests.conftest import REPO

HEADING = re.compile(r"^#+ .*--json.* events", re.MULTILINE)


def event_classes() -> list[type[events.Event]]:
    found: list[type[events.Event]] = []
    todo = list(events.Event.__subclasses__())
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def test_every_event_class_but_unknown_is_named_in_json_events_and_nothing_else() -> None:
    kinds = {cls.kind for cls in event_classes()}
    assert "unknown" in kinds  # Unknown goes to stderr once, never to the JSON lines
    assert set(events.JSON_EVENTS) == kinds - {"unknown"}
    assert all(meaning.strip() for meaning in events.JSON_EVENTS.values())


def test_every_emitted_event_serializes_under_its_json_name() -> None:
    samples = [
        events.SessionStarted("s"),
        events.TextDelta("a"),
        events.ThinkingDelta("hm"),
        events.Text("ab"),
        events.ToolUse("t", "Bash"),
        events.ToolResult("t"),
        events.CallUsage(Usage(1, 2, 3, 4)),
        events.OutputFinal(9, "m"),
        events.ContextWindow(200_000),
        events.Compaction(),
        events.PermissionRequest("r", "Write"),
        events.Warning("w"),
        events.Diagnostic("x"),
        events.TurnEnd(),
        events.ToolGate("r"),
        events.RateLimits(events.RateWindow(42.0, 1796171692)),
        events.CacheTtl(3600),
    ]
    assert sorted(e.as_dict()["event"] for e in samples) == sorted(events.JSON_EVENTS)


def documented_kinds() -> tuple[Path, set[str]]:
    """The file whose section titled "--json events" documents them, and the event names its examples use."""
    sections = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("**/*.md"))]:
        text = path.read_text(encoding="utf-8")
        match = HEADING.search(text)
        if match is None:
            continue
        level = len(text[match.start() :].split(" ", 1)[0])
        rest = text[match.end() :]
        end = re.search(rf"^#{{1,{level}}} ", rest, re.MULTILINE)
        sections.append((path, rest[: end.start()] if end else rest))
    assert len(sections) == 1, f"exactly one doc section titled '--json events', found {[str(p) for p, _ in sections]}"
    path, section = sections[0]
    return path, set(re.findall(r'\{"event": "([a-z_]+)"', section))


def test_the_docs_list_exactly_the_json_events() -> None:
    path, documented = documented_kinds()
    assert documented == set(events.JSON_EVENTS), f"{path}: documented {sorted(documented)}"
