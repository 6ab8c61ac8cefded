"""What a native (TUI) launch follows besides the screen: the CLI's structured sources, per provider.

In native mode agentlaunch relays the provider CLI's own interface byte for
byte and never reads the screen. Meters and states come from what the CLI
writes for programs: Claude Code's transcript, status-line JSON and hooks;
Codex's rollout file and ``notify`` program; Gemini's session file and hooks.

Each provider offers them through one function, ``native_extras(ctx)`` in
``agentlaunch/providers/native/<provider>.py``: the flags and environment the
CLI needs to report (a ``--settings`` object, a notify program), and the
sources the relay loop waits on. A source turns what is new into the same
normalized events a headless run produces (``CallUsage`` with its call id,
``ContextWindow``, ``Compaction``, ``SessionStarted``) and into states; the
launch meters, prices, stores and shows them as it does headless.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from agentlaunch.datarecord import datarecord, field
from agentlaunch.events import Event
from agentlaunch.sinks import StateChanged

T = TypeVar("T")


@datarecord(frozen=True)
class PromptTyped:
    """The text of a prompt the CLI's interface submitted (its UserPromptSubmit hook): the session's title."""

    kind: ClassVar[str] = "prompt_typed"
    text: str


@datarecord(frozen=True)
class ToolAsked:
    """The CLI holds a tool until the launch answers (a budget applies).

    ``answer(allow, reason)``: the tool runs, or it is refused and the CLI's turn ends without a further call.
    """

    kind: ClassVar[str] = "tool_asked"
    answer: Callable[[bool, str], None]
    undecided: str = ""
    """Why the budget cannot be checked with the asking call counted (its line was not read yet); "" when it is.
    The tool then runs only if the calls not read cannot cross a limit at their worst (``unread``); else it is
    refused with this reason and the bound's, which the agent's row shows (a gate that cannot decide fails closed)."""
    unread: int = 0
    """How many model calls that may have asked for tools let run are not counted yet (0 when ``undecided`` is "")."""
    early: bool = False
    """Asked as the tool is held, before waiting for its call's line: a bound that does not allow it leaves it
    unanswered (the source asks again once the line is read or the wait is over)."""


class Pending(Generic[T]):
    """What is known only later (an answer the CLI takes in a moment: a reply typed, then its submission seen on the
    screen): :meth:`settle` once with the value, :meth:`then` calls back with it (at once when it is known)."""

    def __init__(self) -> None:
        self.value: T | None = None
        self.settled = False
        self._then: list[Callable[[T], None]] = []

    def settle(self, value: T) -> None:
        if self.settled:
            return
        self.value, self.settled = value, True
        then, self._then = self._then, []
        for callback in then:
            callback(value)

    def then(self, callback: Callable[[T], None]) -> None:
        if self.settled:
            callback(self.value)  # type: ignore[arg-type]  # settled: value is a T
        else:
            self._then.append(callback)


@datarecord(frozen=True)
class QuestionAsked:
    """The CLI asks the person (a permission, a question) and takes the answer from the launch as well as from its
    own interface (:mod:`agentlaunch.launch.questions`).

    ``options``: the answers the CLI offers (of ``once``, ``always``, ``deny``, ``reply``); ``answer(decision,
    text)`` tells the CLI (``text``: a reply's words); False when the CLI no longer waits for it, or a
    :class:`Pending` that says it later (a reply typed, then seen submitted, or not).
    """

    kind: ClassVar[str] = "question_asked"
    tool: str
    tool_input: Any
    options: tuple[str, ...]
    answer: Callable[[str, str], bool | Pending[bool]] | None
    keys: Mapping[str, str] = field(default_factory=dict)
    """For a CLI answered with keys (``answer`` None): the keys of each option, typed by the launch only while the
    screen shows every text of ``shows`` (:mod:`agentlaunch.launch.native.screen_keys`)."""
    shows: tuple[str, ...] = ()
    asks: str = ""
    """What it asks in one line, as the session's state reason says it (default: the tool and its input's telling
    part, :func:`~agentlaunch.providers.asked.tool_question`)."""


NativeItem = Event | StateChanged | PromptTyped | ToolAsked | QuestionAsked
"""What a source reports: a provider event for the launch to handle, the CLI's new state, or a prompt submitted."""


class NativeSource(Protocol):
    """One structured source of a native launch (a transcript, a hook socket).

    The relay waits on :meth:`filenos` (readable: something may be new) and
    until :meth:`deadline`; then it calls :meth:`read`. It calls :meth:`read`
    once more after the CLI exits, then :meth:`close`. A source never raises on
    what it reads (a late, rotated, truncated file, a line of unknown shape):
    it skips what it cannot use, and never reports one call twice.
    """

    def filenos(self) -> tuple[int, ...]:
        """The descriptors that become readable when there may be something new (none: timers only), each handed to
        the loop on its own (no epoll set standing for several: Linux's alone); asked again after each read."""
        ...

    def deadline(self) -> float | None:
        """The monotonic time at which :meth:`read` is wanted even if the descriptor stays quiet, or None."""
        ...

    def read(self) -> list[NativeItem]:
        """What is new since the last call, in order."""
        ...

    def close(self) -> None:
        """Release what the source holds (descriptors, sockets, the files it created)."""
        ...


@datarecord(frozen=True)
class NativeContext:
    """What a provider needs to know to make its CLI report, and to find what it writes."""

    agent: str
    session_id: str | None
    """The session's id when agentlaunch chose it or resumes it (Claude Code's ``--session-id``); None: learn it."""
    resumed: bool
    working_dir: Path
    env: Mapping[str, str]
    """The environment the CLI runs with (HOME, CLAUDE_CONFIG_DIR, CODEX_HOME, GEMINI_CLI_HOME as the launch sets them)."""
    runtime_dir: Path
    """A private folder for this launch (sockets, generated scripts), created with mode 0700, removed afterwards."""
    started_at: float
    """Wall-clock time (``time.time()``) just before the CLI starts: files older than this belong to other sessions."""
    python: str
    """The interpreter running agentlaunch, for commands the CLI runs (status line, hooks)."""
    status_path: Path | None = None
    """The live status record of this launch, when one is written."""
    forked: bool = False
    """The session is a fork (``run --fork``): the CLI copies the earlier session's lines, older than ``started_at``,
    into the new session's file, and they are history, however close to the start."""
    forked_from: tuple[str, ...] = ()
    """A fork's parent: its session id and the thread its provider keeps. Their files, however recently written
    (the parent runs on beside the fork), are never the fork's own."""
    gated: bool = False
    """A budget applies: the CLI holds each tool until the launch answers (:class:`ToolAsked`)."""
    provider_state: Mapping[str, object] = field(default_factory=dict)
    """What the session store keeps for the provider (Codex's ``thread_id``: a session started headless has an id
    of agentlaunch's own, and its thread is named only here)."""
    bound: Mapping[str, Any] = field(default_factory=dict)
    """Sockets the early start bound in ``runtime_dir`` already (by path), for the native extras to take over."""


@datarecord
class NativeExtras:
    """What a provider adds to its native launch."""

    argv: list[str] = field(default_factory=list)
    """Flags that go after the CLI's own flags and before the first prompt."""
    env: dict[str, str] = field(default_factory=dict)
    sources: list[NativeSource] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
