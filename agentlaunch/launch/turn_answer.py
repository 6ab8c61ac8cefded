"""The answer of one turn, as a headless run prints it: what ``agentlaunch send --wait`` hands back.

The line chat feeds it the turn's events (as a sink); a native interface feeds it the ``Text`` its
structured sources read from the transcript, and the turn's last message when the CLI reports it as the turn
ends (Claude Code's ``Stop`` hook, ``last_assistant_message``): the answer then has its end even when the
transcript lags or is missing. Either way the text is the model's, never the screen's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentlaunch.datarecord import datarecord
from agentlaunch.events import Text, TextDelta, TurnEnd
from agentlaunch.sinks import PromptSent
from agentlaunch.token_usage import Usage

if TYPE_CHECKING:
    from agentlaunch.sinks import LaunchView, SinkEvent
    from agentlaunch.usage.meter import Meter


class TurnAnswer:
    """The answer text of the turn under way (streamed deltas, or whole text blocks when nothing streamed)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self._streamed = False
        self.last_message: str | None = None
        """The turn's last message as the CLI itself reported it at the turn's end (Claude Code's ``Stop`` hook)."""

    def start(self) -> None:
        """A new turn: forget the last one's text."""
        self.parts, self._streamed, self.last_message = [], False, None

    def add(self, event: Any) -> None:
        if isinstance(event, TextDelta):
            self.parts.append(event.text)
            self._streamed = True
        elif isinstance(event, Text) and not self._streamed and event.text:
            if self.parts and not self.parts[-1].endswith("\n"):
                self.parts.append("\n\n")  # two messages of one turn (Codex's, a native transcript's)
            self.parts.append(event.text)
        elif isinstance(event, TurnEnd) and not self.parts and event.result:
            self.parts.append(event.result)  # a CLI that reports its answer only at the turn's end

    @property
    def text(self) -> str:
        """The turn's text; its last message (when the CLI reported it) at the end even if the transcript lacks it."""
        text = "".join(self.parts)
        last = self.last_message
        if last is None or not last.strip() or text.rstrip().endswith(last.strip()):
            return text
        return f"{text}\n\n{last}" if text and not text.endswith("\n") else text + last

    def event(self, event: SinkEvent, launch: LaunchView) -> None:
        """As a sink of the line chat: each prompt starts a turn."""
        if isinstance(event, PromptSent):
            self.start()
        else:
            self.add(event)


@datarecord(frozen=True)
class MeterTotals:
    """The meter's totals at one moment, to tell what one turn added."""

    usage: Usage
    cost_usd: float
    priced_calls: int

    @classmethod
    def of(cls, meter: Meter) -> MeterTotals:
        return cls(meter.total, meter.cost_usd, meter.priced_calls)

    def since(self, meter: Meter) -> tuple[dict[str, int], float | None]:
        """The tokens by kind and the cost (None: no call of the turn could be priced) added since.

        The cost is the difference of two float sums, rounded to 1e-12 USD: that drops the subtraction's noise
        (1e-17) and keeps every digit a call's price has (the usage store's figure; 1e-6 cut $0.0130305 to
        $0.013031)."""
        added = meter.total - self.usage
        usage = {"input": added.input, "cache_write": added.cache_write, "cache_read": added.cache_read, "output": added.output}
        priced = meter.priced_calls > self.priced_calls
        return usage, round(meter.cost_usd - self.cost_usd, 12) if priced else None
