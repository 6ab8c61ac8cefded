"""The one interface everything that follows a launch implements: a sink of events.

The launch hands every event, in order, to each of its sinks: the provider's
normalized events (:mod:`agentlaunch.events`) and the launch's own facts
below (a notice, a state change, a priced call, a turn's end, the session's
end). The terminal view, JSON lines, the usage recorder and the live status
writer are sinks; a budget guard or a telemetry exporter is one more, and
touches nothing else. A sink reads what it needs of the launch from the
:class:`LaunchView` it is given, and may ask it to interrupt the turn.

Sinks run in the launch's loop, one after the other, in the order given
(the recorder first, so a call is stored before it is shown).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from agentlaunch.datarecord import datarecord
from agentlaunch.events import Event

if TYPE_CHECKING:
    from agentlaunch.definitions.spec import AgentSpec
    from agentlaunch.errors import AgentlaunchError
    from agentlaunch.usage.meter import CompactionWarning, Meter
    from agentlaunch.usage.records import CallRecord


class Cancellable(Protocol):
    """A deadline set with :meth:`LaunchView.call_later`."""

    def cancel(self) -> None: ...


class ForkedFrom(Protocol):
    """What a view reads of the session a fork starts from (the launch's ``ForkSource``)."""

    @property
    def session_id(self) -> str: ...


class LaunchView(Protocol):
    """What a sink may read of the launch (and the one thing it may ask of it)."""

    @property
    def spec(self) -> AgentSpec: ...
    @property
    def session_id(self) -> str: ...
    @property
    def resumed(self) -> bool: ...
    @property
    def working_dir(self) -> Path: ...
    @property
    def state(self) -> str: ...
    @property
    def turns(self) -> int: ...
    @property
    def meter(self) -> Meter: ...
    @property
    def stopped(self) -> AgentlaunchError | None: ...
    @property
    def control_path(self) -> str | None:
        """The socket ``agentlaunch send`` reaches this session through (a chat's or an interface's), else None."""

    @property
    def cli_pid(self) -> int | None: ...

    @property
    def fork(self) -> ForkedFrom | None:
        """The session this one is a fork of (``run --fork ID``, ``agentlaunch fork``), else None."""

    def request_interrupt(self, reason: str) -> None:
        """Interrupt the running turn as Ctrl-C would (shown as ``reason``); nothing when no turn runs."""
        ...

    def stop(self, error: AgentlaunchError) -> None:
        """End the session with ``error`` (its exit code): the running turn is interrupted, no new turn starts."""
        ...

    def pause(self, error: AgentlaunchError) -> None:
        """Pause the session (a budget's ``on_spent: pause``): the running turn is interrupted, the CLI and its
        session stay, no new turn starts until the person resumes it."""
        ...

    def notice(self, message: str) -> None:
        """Tell the person ``message`` (one line, through the launch's views)."""
        ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> Cancellable:
        """Call ``callback`` on the launch's loop ``delay`` seconds from now (a sink's deadline: no thread of its own).

        The loop runs whenever the launch waits (a turn, the chat's prompt, the interface); a deadline that
        falls while it does not (starting, closing) is kept until it next runs.
        """
        ...


class Sink(Protocol):
    """Takes each event of a launch."""

    def event(self, event: SinkEvent, launch: LaunchView) -> None:
        """Handle ``event``; ``launch`` is the launch as it stands once the event is counted."""
        ...


class LaunchEvent:
    """A fact of the launch itself, not of the provider: not an :class:`~agentlaunch.events.Event`, so it is
    never part of the ``--json`` vocabulary or output (each a ``@datarecord``, as events are: no dataclass to create)."""

    __slots__ = ()
    kind: ClassVar[str] = "launch"


SinkEvent = Event | LaunchEvent
"""What a sink takes: the provider's normalized events and the launch's own."""


@datarecord(frozen=True, slots=True)
class Notice(LaunchEvent):
    """Something the person should know (a file moved aside, a flag not passed, a dropped line)."""

    message: str


@datarecord(frozen=True, slots=True)
class StateChanged(LaunchEvent):
    """The launch's state: starting, waiting (for input), thinking, tool (running one), asking (a permission
    prompt or a question waits for the person: native mode), exited."""

    state: str
    reason: str | None = None
    """Why, when the state alone does not say it (``asking`` because the CLI never reported that it is up)."""
    source: str | None = None
    """Who said it: ``cli`` (its own OSC 7501 report), ``hooks``, ``transcript``, ``app-server``, ``agentlaunch``
    (its own inference: a stall, a start that never reported, a headless run's stream); None: the launch names it."""


@datarecord(frozen=True, slots=True)
class CompactionWarned(LaunchEvent):
    warning: CompactionWarning


@datarecord(frozen=True, slots=True)
class PrefixChanged(LaunchEvent):
    """This launch's instructions prefix differs from the agent's previous launch in ``parts`` (named for a person)."""

    parts: tuple[str, ...]


@datarecord(frozen=True, slots=True)
class PricedCall(LaunchEvent):
    """One model call as it is to be stored: its usage, turn and price (sent before its CallUsage)."""

    record: CallRecord


@datarecord(frozen=True, slots=True)
class ProviderStateKept(LaunchEvent):
    """What a per-turn provider carries to its next turn and launch (a thread id, say)."""

    state: dict[str, Any]


@datarecord(frozen=True, slots=True)
class PromptSent(LaunchEvent):
    """The person's text of a turn, as typed (without the startup message): the session's title comes from the first."""

    text: str


@datarecord(frozen=True, slots=True)
class TurnDone(LaunchEvent):
    """A turn is over, finished or not (its footer, its count)."""


@datarecord(frozen=True, slots=True)
class SessionClosed(LaunchEvent):
    """The launch is over; ``exit_status`` is agentlaunch's exit code."""

    exit_status: int


def fan_out(sinks: Sequence[Sink], event: SinkEvent, launch: LaunchView) -> None:
    """``event`` to every sink, in order."""
    for sink in sinks:
        sink.event(event, launch)
