"""The source of a native Claude Code launch: its hooks' reports (the hook socket, the held hooks' socket) and its
transcript, read as they come, their descriptors on the launch's loop (:class:`ClaudeNativeSource`)."""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentlaunch.dir_watch import (
    IN_CLOSE_WRITE,
    IN_CREATE,
    IN_IGNORED,
    IN_MODIFY,
    IN_MOVED_TO,
    DirWatch,
    open_watch,
)
from agentlaunch.events import CallUsage, ContextWindow, Event, SessionStarted, Text, TurnEnd, Warning
from agentlaunch.providers import untrusted
from agentlaunch.providers.claude_hooks import tool_refusal
from agentlaunch.providers.native.claude_held import GATE_READ_WAIT, GATE_REREAD, UNDECIDED, held_report
from agentlaunch.providers.native.claude_hook_states import CALL_OVER, question_of, state_of
from agentlaunch.providers.native.claude_question import QUESTION_OVER, question_items
from agentlaunch.providers.native.claude_status_report import StatusReport
from agentlaunch.providers.native.claude_transcript import CallsFromTranscript, last_cost_state, salvage_line
from agentlaunch.providers.native.hook_held import HeldHooks
from agentlaunch.providers.native.hook_socket import HookReport, HookSocket
from agentlaunch.providers.native.jsonl_tail import JsonlTail
from agentlaunch.providers.native.source import NativeItem, PromptTyped, ToolAsked
from agentlaunch.providers.untrusted import count, opt_label, string
from agentlaunch.sinks import StateChanged

RETRIES = (0.25, 1.0, 3.0)
"""After a hook that says a call ended, the transcript is read again this long after (it is written lazily)."""
UNMETERED = "this session's model calls will not be metered"
SESSION_WAIT = 5.0
"""Seconds a SessionStart hook's session waits for the status line's report (it has the CLI version). A call
sends it at once (the store registers the session before any call); the status line comes within a second on an
idle machine, and took over 1.5 s on a loaded one, where the session then went out without its version."""
NO_WATCH_LOOK = 1.0
"""Seconds between reads of the transcript where no folder watch wakes the source (no inotify: macOS): a retry
loop's ``api-request`` lines and the calls between reports are seen within this long."""


class ClaudeNativeSource:
    """The hook socket and the transcript of one native Claude Code launch, as one source."""

    def __init__(
        self,
        sock: HookSocket,
        transcript: Path | None,
        started_at: float,
        clock: Callable[[], float] = time.monotonic,
        *,
        wake: bool = False,
        forked: bool = False,
        server: HeldHooks | None = None,
    ) -> None:
        self.sock = sock
        self.server = server
        self.clock = clock
        self.tail: JsonlTail | None = JsonlTail(transcript, start_at_end=True, salvage=salvage_line) if transcript else None
        # A resumed session's file already holds its totals: the calls beyond them are this launch's.
        base = last_cost_state(transcript) if transcript is not None and self.tail and self.tail.offset else None
        # A fork's file starts with the earlier session's lines, copied with their own stamps: all before the start.
        self.calls = CallsFromTranscript(started_at, base, skew=0.0) if forked else CallsFromTranscript(started_at, base)
        self.state: str | None = None
        self._session: SessionStarted | None = None
        self._session_sent = False
        self._session_due: float | None = None
        self._window: tuple[int, str | None] | None = None
        self._status = StatusReport()
        self._retries: list[float] = []
        self._missing_said = False
        self._calls_in_step = 0  # calls counted since the model was last set thinking (a prompt, a tool's result)
        self._held: str | None = None
        """``waiting`` from a Stop hook that came before the turn's last call was read: sent after that call."""
        self._question: str | None = None
        """The held ``PermissionRequest`` hook of the dialog open now (:mod:`.claude_question`)."""
        self._gates: list[tuple[str, str, float]] = []
        """Held tools (the held hook's request, the tool's id, when to stop waiting for its call's line)."""
        self._early: set[str] = set()  # the held tools asked about early (before their call's line was read)
        self._unread: list[str] = []
        """The tools let run before their call's line was read, until it is: each counts as a call not counted yet."""
        self._watch: DirWatch | None = open_watch() if wake and self.tail is not None else None
        self._look_due: float | None = None
        """Without a watch (no inotify: macOS) but asked to wake: when the transcript is read next (a bounded poll)."""
        if self._watch is not None:
            self._rewatch()
        elif wake and self.tail is not None:
            self._look_due = clock() + NO_WATCH_LOOK

    def filenos(self) -> tuple[int, ...]:
        """The hooks' socket, the held hooks' listener and connections, and the transcript's watch, each on its own."""
        held = self.server.filenos() if self.server is not None else ()
        return (self.sock.fileno(), *held, *((self._watch.fd,) if self._watch is not None else ()))

    def _rewatch(self) -> None:
        """Watch the transcript's writes and its folder, or (not made yet: a new session's first prompt makes them)
        the nearest parent that exists; no other folder.

        The transcript is read as it is written, not only when a hook or the status line reports: during an API
        failure loop nothing reports, while the transcript gets one ``api-request`` line per attempt (``retrying``);
        and every line read is a sign the session is alive (``stalled`` is told from silence).

        Only what leads to the transcript is watched: the file's own writes (``IN_MODIFY``, ``IN_CLOSE_WRITE``), a
        file or folder made or moved in (``IN_CREATE``, ``IN_MOVED_TO``) in the folders on its path, and of those
        only the next one down is read (:meth:`_woken`). A team's CLIs share one home and often one working
        directory: watching the whole folder woke every agent's launch at every write of every other CLI there
        (its ``.claude.json`` and ``history.jsonl`` while the session's folder did not exist yet, then each
        other transcript's lines), some 20 times a second each for a team of 20 starting (measured).
        """
        if self._watch is None or self.tail is None:
            return
        path = self.tail.path
        wanted = {path} if self._watch.watch(path, IN_MODIFY | IN_CLOSE_WRITE, again=True) else set()
        for folder in path.parents:  # its folder too: a file made again (a new inode) is seen there
            if self._watch.watch(folder, IN_CREATE | IN_MOVED_TO):
                wanted.add(folder)
                break
            if folder.exists():
                break  # exists, cannot be watched (the watch limit): the transcript is read on reports
        for watched in set(self._watch.watched) - wanted:
            self._watch.unwatch(watched)

    def _woken(self) -> tuple[bool, bool, bool]:
        """What the watch saw: (any event, the transcript may have changed, the watches must move).

        The transcript changed when it was written, or made or moved in; the watches move when that file is a new
        one, when the next folder on its path was made, when a watch is gone, or when events were lost.
        """
        if self._watch is None or self.tail is None:
            return False, False, False
        path = self.tail.path
        below = {p.parent: p.name for p in (path, *path.parents) if p.parent != p}  # each folder -> the next part
        changed = move = False
        seen, events = self._watch.events()
        for watched, name, mask in events:
            if watched is None or mask & IN_IGNORED:
                changed = move = True
            elif watched == path:
                changed = True
            elif below.get(watched) == name:
                changed = move = True  # the file is new, or a folder on its path was made: it may hold lines already
        return seen, changed, move

    def deadline(self) -> float | None:
        due = (self._session_due, self._retries[0] if self._retries else None, self._look_due)
        times = [t for t in due if t is not None]
        if self._gates:
            times.append(self.clock() + GATE_REREAD)
        if self.tail is not None and self.tail.more:
            times.append(self.clock())
        if self.server is not None and (served := self.server.deadline()) is not None:
            times.append(served)
        return min(times) if times else None

    def read(self) -> list[NativeItem]:
        """What the reports and the transcript tell since the last call."""
        items: list[NativeItem] = []
        seen, woken, move = self._woken()
        if self._look_due is not None:
            self._look_due = self.clock() + NO_WATCH_LOOK
        if move:
            self._rewatch()
        reports = self.sock.receive() + (list(map(held_report, self.server.receive())) if self.server else [])
        # Woken by the watch for nothing of this session's (a folder's event the watch cannot leave out): no read.
        noise = seen and not woken and not reports and not (self.tail is not None and self.tail.more)
        if not noise and (reports or not woken or self._session_sent or self._session is None):
            # Woken by the transcript alone while the session waits for the status line's report (its CLI version):
            # read when that is due, so the session is registered whole before the calls read now.
            items += self._transcript()
        for report in reports:
            items += self._report(report)
        now = self.clock()
        if self._retries and self._retries[0] <= now:
            while self._retries and self._retries[0] <= now:
                self._retries.pop(0)
            items += self._transcript(close=True)
        if self._held is not None and (self._calls_in_step or not self._retries):
            items += self._release()
        if self._session_due is not None and self._session_due <= now:
            items += self._session_items()
        if self._gates:
            items += self._gates_ready(now)
        return self._ordered(items)

    def _gates_ready(self, now: float) -> list[NativeItem]:
        """The held tools whose call is read (counted first), new ones asked about at once on a bound (their call not
        read yet), and those that waited for it long enough (:data:`GATE_READ_WAIT`)."""
        items: list[NativeItem] = list(self._transcript()) if self.tail is not None else []
        self._unread = [tool for tool in self._unread if not self.calls.asked_for(tool)]
        read = [g for g in self._gates if self.tail is None or not g[1] or self.calls.asked_for(g[1])]
        late = [g for g in self._gates if g not in read and g[2] <= now]
        early = [g for g in self._gates if g not in read and g not in late and g[0] not in self._early]
        if not read and not late and not early:
            return items
        self._gates = [g for g in self._gates if g not in read and g not in late]  # answered now (early: if allowed)
        self._early.update(reply for reply, _, _ in early)
        if read or late:
            items += self._transcript(close=True)  # the asking call is over as far as its usage goes: counted now
        items += [ToolAsked(functools.partial(self._answer_gate, reply, "")) for reply, _, _ in read]
        # Each tool let run unread counts as one more call not counted (two tools of one call: counted twice).
        unread = len(self._unread)
        for n, (reply, tool, _) in enumerate(early + late, start=1):
            answer = functools.partial(self._answer_gate, reply, tool)
            items.append(ToolAsked(answer, UNDECIDED, unread + n, early=n <= len(early)))
        return items

    def _answer_gate(self, reply: str, tool: str, allow: bool, reason: str) -> None:
        """The held tool runs (no output), or is refused and the turn ends (:func:`tool_refusal`)."""
        self._gates = [g for g in self._gates if g[0] != reply]
        self._early.discard(reply)
        if allow and tool and not self.calls.asked_for(tool):
            self._unread.append(tool)
        if self.server is not None:
            self.server.answer(reply, "" if allow else json.dumps(tool_refusal(reason)))

    def _close_question(self) -> list[NativeItem]:
        """The dialog closed (answered in the interface): its held hook is let go with no decision."""
        reply, self._question = self._question, None
        if reply is not None and self.server is not None:
            self.server.answer(reply, "")
        return []

    def _release(self) -> list[NativeItem]:
        held, self._held = self._held, None
        return [StateChanged(held)] if held is not None else []

    def close(self) -> None:
        self.sock.close()
        if self.server is not None:
            self.server.close()
        if self._watch is not None:
            self._watch.close()

    # -- the transcript ------------------------------------------------------------------------

    def _transcript(self, close: bool = False) -> list[NativeItem]:
        if self.tail is None:
            return []
        read: list[NativeItem] = list(self.calls.lines(self.tail.read()))
        if close:
            read += self.calls.close_calls()
        items: list[NativeItem] = []
        for item in read:
            if isinstance(item, StateChanged):
                if item.state == "retrying" and self.state not in ("thinking", "retrying"):
                    continue  # a request read after its turn ended (the transcript is read late): no retry now
                self.state = item.state
            elif isinstance(item, CallUsage | Text) and self.state == "retrying":
                self.state = "thinking"  # the retried call answered
                items.append(StateChanged("thinking"))
            if isinstance(item, CallUsage):
                self._calls_in_step += 1
            items.append(item)
        return items

    def _follow(self, payload: dict[str, Any]) -> list[NativeItem]:
        """Follow the transcript the CLI names (a new one after ``/clear``; another path than agentlaunch's guess).

        What the old file still holds is read first. The new one is read from its start: its lines from before
        the launch (a resumed session's history) are told by their timestamps, and its ``cost-state`` totals
        start again from that file's own (Claude Code counts from zero after ``/clear``).
        """
        named = string(payload.get("transcript_path"))
        if not named or not os.path.isabs(named) or not named.endswith(".jsonl"):
            return []
        path = Path(named)
        if self.tail is not None and self.tail.path == path:
            return []
        items = self._transcript(close=True)
        if self.tail is None:
            self.tail = JsonlTail(path, salvage=salvage_line)
        else:
            self.tail.move_to(path)
        self.calls.rebase({})
        self._rewatch()  # the new file, and its folder when it is another
        return items

    # -- reports -------------------------------------------------------------------------------

    def _report(self, report: HookReport) -> list[NativeItem]:
        payload = report.payload
        items: list[NativeItem] = self._follow(payload)
        if report.event == "statusline":
            items += self._status_line(payload)
            return items
        self._learn_session(payload, None)
        if report.event == "UserPromptSubmit" and (prompt := string(payload.get("prompt"))):
            items.append(PromptTyped(prompt))
        if report.event == "StopFailure":  # the turn ended on an API error: how it ended comes before its "waiting"
            reason = string(payload.get("error")) or "no reason given"
            items.append(TurnEnd(is_error=True, error=f"the API call failed ({reason})"))
        if report.event == "Stop" and isinstance(last := payload.get("last_assistant_message"), str):
            # The turn's last message as Claude Code holds it (measured on 2.1.332: that message's text alone), so a
            # sent prompt's answer ends right when the transcript lags or is not written; before its "waiting".
            items.append(TurnEnd(is_error=False, result=last))
        if report.event in CALL_OVER:
            items += self._transcript(close=True)
            self._retries = [self.clock() + delay for delay in RETRIES]
        if report.reply is not None and report.event == "PermissionRequest":
            items += self._close_question()
            self._question = report.reply  # held until the person answers, here or in the dialog (claude_question)
            items += question_items(self.server, report.reply, payload)
        elif report.reply is not None:
            # Answered once the call that asked for the tool is read (see read), so the budget counts it.
            self._gates.append((report.reply, string(payload.get("tool_use_id")), self.clock() + GATE_READ_WAIT))
        elif self._question is not None and report.event in QUESTION_OVER:
            items += self._close_question()
        state = state_of(report.event, payload)
        if state is not None:
            items += self._release()  # a state held from before comes first
            asked = question_of(report.event, payload, self.state) if state == "asking" else None
            self.state = state
            if state == "thinking":
                self._calls_in_step = 0
            if report.event == "Stop" and not self._calls_in_step:
                # The turn's last call is not in the transcript yet (it is written lazily): the turn ends
                # after it, so the call is counted in its own turn (or when the retries give up).
                self._held = state
            else:
                items.append(StateChanged(state, asked))
        if report.event in ("Stop", "StopFailure", "SessionEnd"):
            items += self._missing_transcript()
        if report.event == "SessionEnd":
            items += self._session_items()
        return items

    def _missing_transcript(self) -> list[NativeItem]:
        """Once: a turn ended and Claude Code has written no transcript where it says it would."""
        if self._missing_said or self.tail is None or self.tail.path.exists():
            return []
        self._missing_said = True
        return [Warning(f"Claude Code wrote no transcript at {self.tail.path}: {UNMETERED}")]

    def _status_line(self, payload: dict[str, Any]) -> list[NativeItem]:
        model = untrusted.obj(payload.get("model"))
        self._learn_session(payload, opt_label(payload.get("version")))
        items: list[NativeItem] = list(self._session_items())
        window = count(untrusted.obj(payload.get("context_window")).get("context_window_size"))
        model_id = opt_label(model.get("id"))
        if window and (window, model_id) != self._window:
            self._window = (window, model_id)
            items.append(ContextWindow(window, model_id))
        return items + self._status.read(payload)

    def _learn_session(self, payload: dict[str, Any], version: str | None) -> None:
        session_id = opt_label(payload.get("session_id"))
        if session_id is None or self._session_sent:
            return
        model = payload.get("model")
        model_id = opt_label(untrusted.obj(model).get("id")) if isinstance(model, dict) else opt_label(model)
        known = self._session
        self._session = SessionStarted(
            session_id,
            model_id or (known.model if known else None),
            string(payload.get("cwd")) or (known.cwd if known else None),
            version or (known.cli_version if known else None),
        )
        if self._session_due is None:
            self._session_due = self.clock() + SESSION_WAIT

    def _session_items(self) -> list[Event]:
        if self._session is None or self._session_sent:
            return []
        self._session_sent = True
        self._session_due = None
        known = self._session
        if known.cli_version is None and self.calls.version:  # out before the status line named it: the transcript's
            self._session = SessionStarted(known.session_id, known.model, known.cwd, self.calls.version)
        return [self._session]

    def _ordered(self, items: list[NativeItem]) -> list[NativeItem]:
        """The session first: the store registers it before any call.

        A typed prompt does not send it: the store keeps the title until the session comes, which waits for the
        status line's report, the one that names the CLI's version (a prompt given in argv is submitted at once,
        and on a loaded machine its hook came before the status line's first run: CI run 79 on 2026-12-03). A
        session that goes out before that takes the version the transcript's lines carry, when one was read."""
        forcing = (i for i in items if not isinstance(i, StateChanged | SessionStarted | PromptTyped))
        if self._session and not self._session_sent and any(forcing):
            items = [*self._session_items(), *items]
        return items
