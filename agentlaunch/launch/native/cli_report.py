"""The CLI's own report (OSC 7501) merged with what hooks, transcripts and the app-server say: which source wins.

The rule (docs/status-and-tmux.md, "Which source wins"):

- ``idle`` and ``done`` win over every other source: the CLI sits at its prompt. That ends the states no hook
  ends: ``retrying`` after Esc out of Claude Code's retry loop, ``asking`` after Esc out of a dialog, ``stalled``.
- ``blocked`` wins too: ``asking``, with the kind and the CLI's message as the reason (``kind=auth``: a login
  expired). A question the hooks named already (the tool and its input) keeps their reason: it says more.
- ``working`` only starts a turn (``thinking``) from ``waiting``, ``asking`` or ``stalled`` (not from
  ``starting``: Codex 0.171 says ``working`` then ``idle`` as it starts, no turn): in a turn the hooks and the
  transcript say more (``tool``, ``retrying`` with its cause) and keep their word.
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
from agentlaunch.launch.native.program_status import ProgramStatus, Report, encode

CLI_SOURCE = "cli"  # the state_source of a state the CLI's own report set
BUSY = frozenset({"thinking", "tool", "retrying"})
OWN = frozenset({"paused", "exited"})  # agentlaunch's own states: no report changes them
STARTS_TURN = frozenset({"waiting", "asking", "stalled"})  # not starting: Codex says working, then idle, as it starts
KIND_WORDS = {"auth": "login", "permission": "permission", "question": "question"}


@datarecord(frozen=True)
class Merged:
    """What a report does: the state to set (None: none) and its reason; ``disagrees``: it contradicts ``current``."""

    state: str | None
    reason: str | None = None
    disagrees: bool = False


def reason_of(report: Report) -> str | None:
    """The row's reason a ``blocked`` or ``error`` report gives (``login: Not signed in``), or None."""
    word = KIND_WORDS.get(report.kind or "", "")
    if report.state == "error":
        return f"error: {report.msg}" if report.msg else "error"
    if report.state != "blocked":
        return None
    text = report.msg or report.title
    return f"{word}: {text}" if word and text else word or text


def merge(report: Report, current: str, current_reason: str | None = None) -> Merged:
    """What the CLI's ``report`` makes of the launch's ``current`` state (set by any source)."""
    if current in OWN:
        return Merged(None)
    if report.state in ("idle", "done"):
        if current == "waiting":
            return Merged(None)
        return Merged("waiting", None, disagrees=current in BUSY or current in ("asking", "stalled"))
    if report.state == "blocked":
        if current == "asking" and current_reason:
            return Merged(None)  # the hooks named the question: their reason says more
        return Merged("asking", reason_of(report), disagrees=current in BUSY)
    if report.state == "working":
        return Merged("thinking") if current in STARTS_TURN else Merged(None)
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


class CliReports:
    """A native launch's OSC 7501: the relay's :class:`ProgramStatus`, each report merged, the merged state passed on.

    ``set_state(state, reason, source)`` sets the launch's state as the sources do (a report that changes no state
    has the record written again, the state as it is: the report is the record's news); ``inject`` (the relay's)
    shows a report on the outer terminal, used only once that terminal answered agentlaunch's probe.
    """

    def __init__(self, launch: ReportsLaunch, set_state: Callable[[str, str | None, str], None]) -> None:
        self.launch, self.set_state = launch, set_state
        self.status = ProgramStatus(self.on_report, os.environ.get("TERM", ""))
        self.last: Report | None = None
        self.inject: Callable[[bytes], None] | None = None
        self._shown: bytes | None = None  # the report the outer terminal shows now

    def on_report(self, report: Report) -> None:
        launch, kept = self.launch, self.launch.session_state
        self.last = report
        kept.cli_report = report_record(report)
        merged = merge(report, launch.state, launch.state_reason)
        if merged.disagrees and kept.state_source != CLI_SOURCE:
            kept.disagreement = {
                "cli": report.state,
                "state": launch.state,
                "source": kept.state_source,
                "at": datetime.now(UTC).isoformat(timespec="seconds"),
            }
        if merged.state is not None:
            self.set_state(merged.state, merged.reason, CLI_SOURCE)
            return
        source = kept.state_source or "agentlaunch"
        launch.set_state(launch.state, reason=launch.state_reason, always=True, source=source)
        self.passed_on()

    def passed_on(self) -> None:
        """Show the merged state on the outer terminal, when it speaks OSC 7501 (never on one that did not answer)."""
        if self.inject is None or not self.status.outer_answered:
            return
        data = encode(outer_report(self.launch.state, self.last))
        if data != self._shown:
            self._shown = data
            self.inject(data)
