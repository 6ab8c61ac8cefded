"""The CLI's own report (OSC 7501) merged with what hooks, transcripts and the app-server say: which source wins.

The rule (docs/status-and-tmux.md, "Which source wins"):

- ``idle`` and ``done`` win over every other source: the CLI sits at its prompt. That ends the states no hook
  ends: ``retrying`` after Esc out of Claude Code's retry loop, ``asking`` after Esc out of a dialog, ``stalled``.
  ``idle`` where a turn was under way says why (:data:`INTERRUPTED`; :data:`RETRY_INTERRUPTED` out of a retry loop):
  the turn did not finish (its ``waiting`` is not ``done``); the CLIs say ``done`` at a turn's end (Codex says
  ``done``, then ``idle``: an ``idle`` after a ``done`` is that ``done`` again).
- A ``done`` where a turn is under way waits :data:`NAMED_WAIT` seconds for the other source to end it: that
  source's ``waiting`` comes with the turn's last call read (Claude Code 2.1.332 can say ``done`` before its ``Stop``
  hook; Codex 0.171's hooks can come in one batch after its ``done``, and their ``thinking`` read after the turn
  ended opened a second turn). The CLI's word ends the turn only when that source does not. An ``idle`` waits so
  too where the state is the app-server's (:data:`LEADS`).
- The app-server leads the CLI's report: agentlaunch relays it to Codex's interface, which reports what it was
  told (measured 4-8 ms later on a quiet machine, more under load). A ``working`` after the app-server's
  ``waiting`` is the turn that just ended, told late: it starts no turn.
- A question a source named (``asking`` set by the hooks or the app-server: the tool and its input) keeps its
  reason and its one notification: the CLI's ``blocked`` and ``working`` change nothing while it is open.
- ``blocked`` ``kind=permission|question`` waits :data:`NAMED_WAIT` seconds for that source to name it (measured
  on Claude Code 2.1.332: its ``blocked`` comes about 0.1 s before its ``PermissionRequest`` command hook, which
  starts a process); only when none does (a dialog no hook reports) is it ``asking``, with the kind and the CLI's
  message as the reason. Any other ``blocked`` (``kind=auth``: a login expired; no kind: Claude's trust dialog)
  is ``asking`` at once.
- ``working`` only starts a turn (``thinking``) from ``waiting``, a dialog only the CLI reported, ``asking`` as
  agentlaunch's own guess, or ``stalled`` (not from ``starting``: Codex 0.171 says ``working`` then ``idle`` as it
  starts, no turn): in a turn the hooks and the transcript say more (``tool``, ``retrying`` with its cause).
- ``error`` changes no state: its message becomes the row's reason.
- ``clear`` (the CLI leaving) and reports for a child (``id=``) change nothing.
- ``paused`` (a budget) and ``exited`` are agentlaunch's own: no report changes them.

Where the CLI says it is at its prompt (or blocked) while another source said it works, asks or stalled, the
merge says so (:attr:`Merged.disagrees`): the status record keeps the latest such disagreement.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

from agentlaunch.datarecord import datarecord
from agentlaunch.launch.native.interrupt_watch import RETRY_INTERRUPTED
from agentlaunch.launch.native.program_status import ProgramStatus, Report, encode

CLI_SOURCE = "cli"  # the state_source of a state the CLI's own report set
BUSY = frozenset({"thinking", "tool", "retrying"})
OWN = frozenset({"paused", "exited"})  # agentlaunch's own states: no report changes them
STARTS_TURN = frozenset({"waiting", "asking", "stalled"})  # not starting: Codex says working, then idle, as it starts
KIND_WORDS = {"auth": "login", "permission": "permission", "question": "question"}
INTERRUPTED = "its turn was interrupted: the CLI is at its prompt"
NAMING = frozenset({"hooks", "transcript", "app-server"})  # the sources that name a question (the tool and its input)
NAMED_KINDS = frozenset({"permission", "question"})  # the kinds of blocked those sources name
LEADS = frozenset({"app-server"})  # the sources the CLI's interface hears the turn from: its report comes after theirs
NAMED_WAIT = 5.0
"""Seconds a ``blocked`` of :data:`NAMED_KINDS` waits for a source to name its question before it is ``asking`` on
the CLI's word alone (a hook process started on a loaded machine: measured 0.1 s on a quiet one); and a ``done``
for that source to end the turn."""


@datarecord(frozen=True)
class Merged:
    """What a report does: the state to set (None: none) and its reason; ``disagrees``: it contradicts ``current``."""

    state: str | None
    reason: str | None = None
    disagrees: bool = False
    wait: bool = False  # a blocked a source may name yet: it waits NAMED_WAIT for that source


def reason_of(report: Report) -> str | None:
    """The row's reason a ``blocked`` or ``error`` report gives (``login: Not signed in``), or None."""
    word = KIND_WORDS.get(report.kind or "", "")
    if report.state == "error":
        return f"error: {report.msg}" if report.msg else "error"
    if report.state != "blocked":
        return None
    text = report.msg or report.title
    return f"{word}: {text}" if word and text else word or text


def named(current: str, source: str | None) -> bool:
    """``current`` is a question a source named (hooks, a transcript, the app-server): its reason says more."""
    return current == "asking" and source in NAMING


def merge(report: Report, current: str, source: str | None = None, *, waited: bool = False) -> Merged:
    """What the CLI's ``report`` makes of the launch's ``current`` state, set by ``source``; ``waited``: a blocked
    report after its :data:`NAMED_WAIT`."""
    if current in OWN:
        return Merged(None)
    if report.state in ("idle", "done"):
        if current == "waiting":
            return Merged(None)
        if current in BUSY and not waited and (report.state == "done" or source in LEADS):
            return Merged(None, wait=True)  # the source that follows the turn ends it, its last call read first
        cut = current in BUSY or current in ("asking", "stalled")
        # idle (not done) where a turn was under way: the person's Esc ended it (Claude Code says done at a turn's end)
        why = (RETRY_INTERRUPTED if current == "retrying" else INTERRUPTED) if cut and report.state == "idle" else None
        return Merged("waiting", why, disagrees=cut)
    if report.state == "blocked":
        if named(current, source):
            return Merged(None)  # the hooks named the question: their reason, their one notification
        if report.kind in NAMED_KINDS and not waited:
            return Merged(None, wait=True)
        return Merged("asking", reason_of(report), disagrees=current in BUSY)
    if report.state == "working":
        told_late = current == "waiting" and source in LEADS  # the turn the app-server just ended
        starts = current in STARTS_TURN and not named(current, source) and not told_late
        return Merged("thinking") if starts else Merged(None)
    if report.state == "error":
        return Merged(current, reason_of(report))
    return Merged(None)  # clear


def report_record(report: Report | None) -> dict[str, object] | None:
    """The CLI's latest report as the status record keeps it (``cli_report``)."""
    if report is None:
        return None
    return {
        "state": report.state,
        "kind": report.kind,
        "msg": report.msg,
        "title": report.title,
        "progress": report.progress,
        "app": report.app or None,
    }


def outer_report(state: str, last: Report | None) -> Report:
    """The merged state as a report for an outer terminal that speaks OSC 7501 (the CLI's kind and msg kept)."""
    if state in BUSY:
        return Report("working")
    if state in ("asking", "stalled", "paused"):
        blocked = last if last is not None and last.state == "blocked" else None
        return Report("blocked", kind=blocked.kind if blocked else None, msg=blocked.msg if blocked else state)
    if state == "exited":
        return Report("clear")
    return Report("idle")


class ReportsKept(Protocol):
    """What the merge keeps (:class:`~agentlaunch.launch.session_state.SessionState`)."""

    state_source: str | None
    cli_report: dict[str, object] | None
    disagreement: dict[str, object] | None


class ReportsLaunch(Protocol):
    """What the merge reads of the launch (:class:`~agentlaunch.launch.session.Launch`)."""

    @property
    def state(self) -> str: ...
    @property
    def state_reason(self) -> str | None: ...
    @property
    def session_state(self) -> ReportsKept: ...

    def set_state(self, state: str, *, always: bool = False, reason: str | None = None, source: str = "agentlaunch") -> None: ...


class Cancellable(Protocol):
    def cancel(self) -> None: ...


Later = Callable[[float, Callable[[], None]], Cancellable]
"""The launch loop's ``call_later``."""


class CliReports:
    """A native launch's OSC 7501: the relay's :class:`ProgramStatus`, each report merged, the merged state passed on.

    ``set_state(state, reason, source)`` sets the launch's state as the sources do (a report that changes no state
    has the record written again, the state as it is: the report is the record's news); ``later`` (the loop's
    ``call_later``) times a ``blocked`` waiting for its question to be named; ``inject`` (the relay's) shows a report
    on the outer terminal, used only once that terminal answered agentlaunch's probe.
    """

    def __init__(self, launch: ReportsLaunch, set_state: Callable[[str, str | None, str], None], later: Later) -> None:
        self.launch, self.set_state, self.later = launch, set_state, later
        self.status = ProgramStatus(self.on_report, os.environ.get("TERM", ""))
        self.last: Report | None = None
        self.inject: Callable[[bytes], None] | None = None
        self._shown: bytes | None = None  # the report the outer terminal shows now
        self._pending: Report | None = None  # a blocked or done waiting for a source to say it (NAMED_WAIT)
        self._waiting: Cancellable | None = None  # its timer
        self._done = False  # the CLI said done and nothing but idle since

    def on_report(self, report: Report) -> None:
        """The CLI's ``report``, kept as its latest, and merged (unless it is the report a wait is for, again)."""
        self.last = report
        self.launch.session_state.cli_report = report_record(report)
        if report.state in ("working", "blocked"):
            self._done = False
        elif report.state == "done":
            self._done = True
        said = Report("done", app=report.app) if report.state == "idle" and self._done else report
        if self._pending is not None:
            if said == self._pending or said.state == self._pending.state == "done":
                self._refresh()  # the same again: it waits on, the record written with the report
                return
            self._end_wait()  # another report says more than the one waiting
        self._merge(said)

    def _merge(self, report: Report, *, waited: bool = False) -> None:
        launch, kept = self.launch, self.launch.session_state
        merged = merge(report, launch.state, kept.state_source, waited=waited)
        if merged.disagrees and kept.state_source != CLI_SOURCE:
            kept.disagreement = {
                "cli": report.state,
                "state": launch.state,
                "source": kept.state_source,
                "at": datetime.now(UTC).isoformat(timespec="seconds"),
            }
        if merged.wait:
            self._pending = report
            self._waiting = self.later(NAMED_WAIT, lambda: self._waited_out(report))
        if merged.state is not None:
            self.set_state(merged.state, merged.reason, CLI_SOURCE)
        else:
            self._refresh()

    def _refresh(self) -> None:
        """The record written again, the state as it is (the report is its news), and passed on."""
        launch = self.launch
        source = launch.session_state.state_source or "agentlaunch"
        launch.set_state(launch.state, reason=launch.state_reason, always=True, source=source)
        self.passed_on()

    def _waited_out(self, report: Report) -> None:
        """:data:`NAMED_WAIT` is over for ``report``: the CLI's word, unless a source said it meanwhile."""
        if self._pending is report:
            self._pending = self._waiting = None
            self._merge(report, waited=True)

    def _end_wait(self) -> None:
        if self._waiting is not None:
            self._waiting.cancel()
        self._pending = self._waiting = None

    def state_set(self) -> None:
        """The launch's state was set (by any source): ``waiting`` or a question a source named ends a wait."""
        if self._pending is not None:
            state = self.launch.state
            if state == "waiting" or named(state, self.launch.session_state.state_source):
                self._end_wait()
        self.passed_on()

    def passed_on(self) -> None:
        """Show the merged state on the outer terminal, when it speaks OSC 7501 (never on one that did not answer)."""
        if self.inject is None or not self.status.outer_answered:
            return
        data = encode(outer_report(self.launch.state, self.last))
        if data != self._shown:
            self._shown = data
            self.inject(data)
