"""Models Claude Code calls retired (or soon retired), and the current ones it offers instead: Claude's alone.

Source: Claude Code 2.1.332's own tables, read from its bundled program (``claude`` of the npm package
``@anthropic-ai/claude-code-linux-x64``): the table behind its banner ("⚠ Claude Sonnet 4.5 was retired on
November 30, 2026. Consider switching to a newer model.", first-party dates) and the list of model families
with their ids and ``current`` model (SONNET_ID ``claude-sonnet-5-5``, OPUS_ID ``claude-opus-5-5``,
HAIKU_ID ``claude-haiku-5-5``). Codex CLI 0.171.0's bundled catalog marks older models "Legacy" and offers
an upgrade, and Gemini CLI 0.61.0 has no such notion (its default is ``gemini-2.5-pro``): neither calls a
model retired, so only Claude's are listed. Update this module with the CLI pins (``tests/support/clis.py``);
``tests/e2e/test_retired_models_banner.py`` checks the banner against the real CLI.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

SOURCE = "Claude Code 2.1.332"


@dataclass(frozen=True)
class Retirement:
    """A model the CLI says is retired on ``retired`` (past or coming), named as the CLI names it."""

    name: str
    retired: date
    ids: tuple[str, ...]
    instead: str  # the CLI's current model of the same family

    def said(self, today: date) -> str:
        """What the CLI's banner says, as a sentence: ``Claude Sonnet 4.5 was retired on 2026-11-30``."""
        verb = "was retired on" if self.retired < today else "will be retired on"
        return f"{self.name} {verb} {self.retired.isoformat()}"


SONNET, OPUS, HAIKU = "claude-sonnet-5-5", "claude-opus-5-5", "claude-haiku-5-5"

RETIRED: dict[str, tuple[Retirement, ...]] = {
    "claude": (
        Retirement("Claude Opus 4.5", date(2027, 1, 22), ("claude-opus-4-5",), OPUS),
        Retirement("Claude Sonnet 4.5", date(2026, 11, 30), ("claude-sonnet-4-5", "claude-sonnet-4-5-20250929"), SONNET),
        Retirement("Claude Opus 4.1", date(2026, 8, 5), ("claude-opus-4-1", "claude-opus-4-1-20250805"), OPUS),
        Retirement("Claude Opus 4", date(2026, 6, 15), ("claude-opus-4-0", "claude-opus-4-20250514"), OPUS),
        Retirement("Claude Sonnet 4", date(2026, 6, 15), ("claude-sonnet-4-0", "claude-sonnet-4-20250514"), SONNET),
        Retirement("Claude Haiku 3", date(2026, 4, 20), ("claude-3-haiku-20240307",), HAIKU),
        Retirement(
            "Claude 3.7 Sonnet",
            date(2026, 2, 19),
            ("claude-3-7-sonnet", "claude-3-7-sonnet-latest", "claude-3-7-sonnet-20250219"),
            SONNET,
        ),
        Retirement(
            "Claude 3.5 Haiku",
            date(2026, 2, 19),
            ("claude-3-5-haiku", "claude-3-5-haiku-latest", "claude-3-5-haiku-20241022"),
            HAIKU,
        ),
        Retirement("Claude 3 Opus", date(2026, 1, 5), ("claude-3-opus", "claude-3-opus-latest", "claude-3-opus-20240229"), OPUS),
        Retirement(
            "Claude 3.5 Sonnet",
            date(2025, 10, 28),
            ("claude-3-5-sonnet", "claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022", "claude-3-5-sonnet-20240620"),
            SONNET,
        ),
        Retirement("Claude Sonnet 3", date(2025, 7, 21), ("claude-3-sonnet-20240229",), SONNET),
        Retirement("Claude 2", date(2025, 7, 21), ("claude-2.1", "claude-2.0"), OPUS),
    ),
}

_CONTEXT_SUFFIX = re.compile(r"\[[0-9]+m\]$")  # Claude Code's "[1m]" (a larger window) names the same model


def retirement(provider: str, model: str | None) -> Retirement | None:
    """The retirement the CLI of ``provider`` announces for ``model``, or None (a current model, or none named)."""
    if not model:
        return None
    wanted = _CONTEXT_SUFFIX.sub("", model.strip().lower())
    for entry in RETIRED.get(provider, ()):
        if wanted in entry.ids:
            return entry
    return None


def retirement_note(provider: str, model: str | None, today: date) -> str | None:
    """``validate``'s note for a definition naming such a model (a note: the CLI still runs it, or remaps it)."""
    entry = retirement(provider, model)
    if entry is None:
        return None
    return (
        f"model: {SOURCE} says {entry.said(today)} (it shows that banner in the agent's pane): "
        f"use a current model such as {entry.instead}"
    )
