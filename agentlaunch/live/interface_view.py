"""What agentlaunch itself shows while a provider's own interface owns the screen (the native mode).

Nothing is printed into the CLI's screen: notices and warnings that come
while the relay runs wait, and are printed once the terminal is restored,
with the session's footer. While it runs, agentlaunch only adds what a
terminal shows outside the text: the bell when the context crosses the
compaction threshold (once; a compaction re-arms it, see
:class:`~agentlaunch.usage.meter.Meter`) and the terminal's title (the status
line of ``agentlaunch status --line``), each at a point between two of the
CLI's escape sequences. ``AGENTLAUNCH_TITLE=0`` leaves the title to the CLI.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Protocol, TextIO

from agentlaunch.events import Compaction, Warning
from agentlaunch.live.lazy_console import LazyConsole
from agentlaunch.live.view import compaction_warning, footer
from agentlaunch.sinks import CompactionWarned, LaunchView, Notice, PricedCall, SessionClosed, SinkEvent, StateChanged
from agentlaunch.visible import for_markup, visible

if TYPE_CHECKING:
    from agentlaunch.usage.meter import Meter

HELD_LIMIT = 50  # notices kept while the interface runs; more are counted
TITLE_ENV = "AGENTLAUNCH_TITLE"
PANE_TITLE_ENV = "AGENTLAUNCH_PANE_TITLE"  # agentlaunch.live.status.PANE_TITLE_ENV: set in a `tmux up` pane
BELL = b"\x07"


class Injector(Protocol):
    """The relay's way to add bytes between the CLI's (:meth:`~agentlaunch.launch.native.relay.Relay.inject`)."""

    def inject(self, data: bytes) -> None: ...


def title_sequence(text: str) -> bytes:
    """OSC 2: set the window title (and tmux's pane title) to ``text``, its escapes made visible."""
    return b"\x1b]2;" + visible(text).encode("utf-8", "replace")[:200] + b"\x07"


class InterfaceView:
    """A native launch's sink for the person: quiet while the CLI's interface runs, a summary afterwards."""

    def __init__(self, meter: Meter, *, stderr: TextIO | None = None, title: bool | None = None) -> None:
        self.meter = meter
        self.err = LazyConsole(file=stderr or sys.stderr, highlight=False, soft_wrap=True)
        self.relay: Injector | None = None
        self.held: list[str] = []
        self.dropped = 0
        # In a `tmux up` pane the border shows the line (the pane option the status writer keeps): the title is the CLI's.
        in_pane = os.environ.get(PANE_TITLE_ENV) == "1"
        self.title = (
            os.environ.get(TITLE_ENV) == "1" or (os.environ.get(TITLE_ENV) != "0" and not in_pane) if title is None else title
        )
        self._last_title: str | None = None

    def relaying(self, relay: Injector | None) -> None:
        """The relay that now owns the screen, or None once the terminal is restored (what waited is printed)."""
        self.relay = relay
        if relay is None:
            for line in self.held:
                self.err.print(line, markup=True, highlight=False)
            if self.dropped:
                self.err.print(f"[dim]… and {self.dropped} more notices[/]", markup=True)
            self.held, self.dropped = [], 0

    def event(self, event: SinkEvent, launch: LaunchView) -> None:
        if isinstance(event, Notice):
            self._say(f"[dim]{for_markup(event.message)}[/]")
        elif isinstance(event, Warning):
            self._say(f"[yellow]warning:[/] {for_markup(event.message)}")
        elif isinstance(event, CompactionWarned):
            if self.relay is not None:
                self.relay.inject(BELL)
            self._say(f"[bold yellow]⚠ {compaction_warning(event.warning)}[/]")
        elif isinstance(event, Compaction):
            self._say(f"[dim]the CLI compacted the context ({for_markup(event.trigger or 'auto')})[/]")
        elif isinstance(event, SessionClosed) and self.meter.calls:
            name, session = for_markup(launch.spec.name), for_markup(launch.session_id)
            self.err.print(f"[dim]{name} · session {session} · {footer(self.meter)}[/]", markup=True)
        if isinstance(event, StateChanged | PricedCall | CompactionWarned):
            self._retitle(launch)

    def _say(self, line: str) -> None:
        if self.relay is None:
            self.err.print(line, markup=True, highlight=False)
        elif len(self.held) < HELD_LIMIT:
            self.held.append(line)
        else:
            self.dropped += 1

    def _retitle(self, launch: LaunchView) -> None:
        if not self.title or self.relay is None:
            return
        from agentlaunch.live.status import one_line

        record = {
            "agent": launch.spec.name,
            "state": launch.state,
            "percent": self.meter.percent,
            "context": self.meter.context,
            "to_compaction": self.meter.to_compaction,
            "window_source": self.meter.window_source,
            "cost": _cost(self.meter),
        }
        text = one_line(record)
        if text != self._last_title:
            self._last_title = text
            self.relay.inject(title_sequence(text))


def _cost(meter: Meter) -> str | None:
    from agentlaunch.live.view import format_cost

    return format_cost(meter)
