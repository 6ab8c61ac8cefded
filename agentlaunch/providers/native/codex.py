"""Codex CLI's native (TUI) launch: its hooks for states, its rollout file for meters.

What ``native_extras`` adds to ``codex`` / ``codex resume ID``:

- ``-c`` flags installing agentlaunch's hooks (SessionStart, UserPromptSubmit,
  PreToolUse, PermissionRequest, PostToolUse, PreCompact, PostCompact, Stop)
  together with their trust entries (:mod:`agentlaunch.providers.native.codex_hooks`),
  each running the stdlib reporter that sends one datagram to the launch's
  socket. The user's ``notify`` program and own hooks are left exactly as they
  are (nothing of theirs is replaced, so nothing needs chaining).
- One source, :class:`CodexNativeSource`, waiting on that socket. On every
  report, and on a modest timer while a turn runs, it reads what is new in the
  thread's rollout file (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-…-THREAD.jsonl``):

  * ``token_usage_record`` lines: one per model call, keyed by the call's
    ``response_id``, with the call's own usage: the same record a headless
    turn is split into (:func:`~agentlaunch.providers.codex_rollout.rollout_calls`),
    so native and headless calls carry the same figures. ``input_tokens``
    includes the cached tokens; :func:`~agentlaunch.providers.codex_rollout.codex_usage`
    subtracts them. A file with no such lines (an older or newer Codex) falls
    back to ``event_msg`` ``token_count``: ``last_token_usage`` counted once
    per new running total (``total_token_usage``).
  * ``token_count.info.model_context_window``: the context window.
  * ``session_meta``: the thread id, reported as the session id.
  * ``compacted`` lines: a compaction (its trigger, ``manual`` or ``auto``, from the PreCompact hook).
  * ``event_msg`` ``item_completed`` of an ``AgentMessage`` item: one ``Text`` per message the model wrote
    (what the TUI shows), known by its item id, so read twice it is still one. Not the ``response_item``
    assistant messages: a compaction's summary is one of those too (measured on 0.171), and it is no answer.
    A turn whose ``task_complete`` comes with no such item gives its ``last_agent_message`` instead (once per
    turn id). Every ``Text`` of a turn comes before the ``waiting`` its ``task_complete`` brings.

Which file: the one a hook names (``transcript_path``); on resume the
thread's own file; otherwise the newest rollout of this working directory
created after the launch started.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentlaunch.events import CallUsage, Compaction, ContextWindow, Event, SessionStarted, Text, TurnEnd
from agentlaunch.providers import untrusted
from agentlaunch.providers.asked import tool_question
from agentlaunch.providers.codex_rollout import codex_home, codex_usage
from agentlaunch.providers.native.codex_hooks import EVENTS, hook_flags
from agentlaunch.providers.native.codex_rollout_scan import agent_text, newest_rollout, recorded_ids, text_digest
from agentlaunch.providers.native.hook_socket import HookReport, HookSocket, hook_command
from agentlaunch.providers.native.jsonl_tail import JsonlTail
from agentlaunch.providers.native.source import NativeContext, NativeExtras, NativeItem, PromptTyped
from agentlaunch.providers.untrusted import BadUsage, count, file_key, label, opt_label, string
from agentlaunch.sinks import StateChanged
from agentlaunch.token_usage import Usage

SOCKET_NAME = "codex-hooks.sock"

HOOK_STATES: dict[str, str] = {
    "UserPromptSubmit": "thinking",
    "PreToolUse": "tool",
    "PostToolUse": "thinking",
    "PermissionRequest": "asking",
    "PreCompact": "thinking",
}
"""The state each hook tells. SessionStart (it carries the session and its file) tells ``waiting`` only as the first
report: the CLI is up, nothing else was said yet (a resumed Codex fires it only at its first prompt: its thread's
rollout file found says it is up instead). PostCompact
goes back to the state before PreCompact; Stop means ``waiting`` once the rollout's ``task_complete`` is read."""

TOOL_ITEMS = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call", "mcp_tool_call"}
TOOL_OUTPUTS = {"function_call_output", "custom_tool_call_output", "mcp_tool_call_output"}

TURN_RETRY = (0.5, 1.0, 2.0)
"""While a turn runs, the rollout is read this long after the last activity (then every 2 s): Codex's hooks
fire at a turn's edges and around tools, not after each model call."""
AFTER_TURN = (0.3, 1.5)
"""After a turn ends, two more reads (a rollout line may land just after the Stop hook)."""
STOP_GRACE = 2.0
"""Seconds after the Stop hook within which the rollout's task_complete is awaited before saying ``waiting``."""
FIND_RETRY = (0.25, 0.5, 1.0, 2.0, 4.0)
"""While no rollout file is known, it is looked for this long after the launch (and on every hook report)."""


def native_extras(ctx: NativeContext) -> NativeExtras:
    """The hooks, their trust entries and the source of a native Codex launch."""
    sock: HookSocket | None = None
    notices: list[str] = []
    argv: list[str] = []
    path = ctx.runtime_dir / SOCKET_NAME
    try:
        sock = HookSocket(path)
    except OSError as exc:
        notices.append(f"Codex's hooks are not followed ({exc}); states come from its rollout file only")
    if sock is not None:
        argv = hook_flags({event: hook_command(ctx.python, path, event) for event in EVENTS})
    return NativeExtras(argv=argv, sources=[CodexNativeSource(ctx, sock)], notices=notices)


class CodexNativeSource:
    """The hook socket and the thread's rollout file of one native Codex launch (see the module doc)."""

    def __init__(self, ctx: NativeContext, sock: HookSocket | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.ctx = ctx
        self.sock = sock
        self.clock = clock
        self.home = codex_home(ctx.env)
        self.thread_id: str | None = resumed_thread(ctx)
        self.tail: JsonlTail | None = None
        self.seen: set[str] = set()
        self.answers_seen: set[str] = set()
        """The agent messages given as ``Text`` (their item ids, ``turn:ID`` for a turn's last message)."""
        self._answered = False  # the running turn had an agent message (its last_agent_message is no news)
        self.totals_seen: set[tuple[int, ...]] = set()
        self.records_seen = False
        self.model: str | None = None
        self.window: int | None = None
        self.announced = False
        self.hooks_heard = False
        self.state: str | None = None
        self._before_compact: str | None = None
        self._compact_trigger: str | None = None  # "manual" or "auto", from the PreCompact hook
        self._stop_at: float | None = None  # when the Stop hook came, while its turn's end is not read yet
        self.started = clock()
        self._schedule: list[float] = [self.started + d for d in FIND_RETRY]
        self._backoff = 0
        if self.thread_id:
            self._open_thread_file(self.thread_id)

    # -- NativeSource ------------------------------------------------------------------------
    def filenos(self) -> tuple[int, ...]:
        return (self.sock.fileno(),) if self.sock is not None else ()

    def deadline(self) -> float | None:
        return min(self._schedule) if self._schedule else None

    def read(self) -> list[NativeItem]:
        now = self.clock()
        self._schedule = [t for t in self._schedule if t > now]
        out: list[NativeItem] = []
        reports = self.sock.receive() if self.sock is not None else []
        for report in reports:
            out += self._report(report)
        if self.tail is None:
            self._find_file()
        if self.tail is not None:
            for obj in self.tail.read():
                if isinstance(obj, dict):
                    out += self._line(obj)
        if (self.ctx.resumed or self.ctx.forked) and self.tail is not None and self.state is None:
            # A resumed or forked Codex (0.171) runs no hook until its first prompt (measured: tmux up --resume,
            # agentlaunch fork): its thread's file found is what says it is up, or the interface would read as
            # waiting on its own screen.
            out += self._set_state("waiting")
        if self._stop_at is not None and now - self._stop_at >= STOP_GRACE:
            out += self._turn_over()  # the rollout never said so: the Stop hook is taken at its word
        self._plan(now, bool(reports) or any(not isinstance(i, StateChanged) for i in out))
        return out

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()

    # -- hooks -------------------------------------------------------------------------------
    def _report(self, report: HookReport) -> list[NativeItem]:
        payload = report.payload
        session = opt_label(payload.get("session_id"))
        if self.thread_id and session and session != self.thread_id:
            return []  # another thread's hook (a sub-agent): not this session's state
        out: list[NativeItem] = []
        if session and self.thread_id is None:
            self.thread_id = session
        out += self._announce()
        transcript = string(payload.get("transcript_path"))
        if transcript and (self.tail is None or self.tail.path != Path(transcript)):
            self._open(Path(transcript))  # the CLI's own word beats a file found by looking
        self.hooks_heard = True
        if report.event == "UserPromptSubmit" and (prompt := string(payload.get("prompt"))):
            out.append(PromptTyped(prompt))
        if self._stop_at is not None and report.event not in ("Stop", "SessionStart"):
            out += self._turn_over()  # a hook after Stop: that turn is over, whether or not its end was read
        if report.event == "PreCompact":
            self._before_compact = self.state
            self._compact_trigger = opt_label(payload.get("trigger"))
        if report.event == "PostCompact":
            # A manual /compact ends at the prompt, an automatic one inside a turn: back to where it began.
            return out + self._set_state(self._before_compact or "waiting")
        if report.event == "Stop":
            # The turn's last rollout lines (its calls' records, task_complete) may land just after this hook:
            # "waiting" waits for task_complete (or STOP_GRACE), so a call is never counted after its turn.
            if self.state != "waiting":
                self._stop_at = self.clock()
            return out
        if report.event == "SessionStart" and self.state is None:
            out += self._set_state("waiting")  # Codex is up (its first report); a first prompt's hook follows
        state = HOOK_STATES.get(report.event)
        if state == "asking":  # what it asks: the tool and its input, as the hook names them
            out += self._set_state(state, tool_question(string(payload.get("tool_name")) or "a tool", payload.get("tool_input")))
        elif state:
            out += self._set_state(state)
        return out

    def _turn_over(self) -> list[NativeItem]:
        self._stop_at = None
        return self._set_state("waiting")

    # -- the rollout -------------------------------------------------------------------------
    def _line(self, obj: dict[str, Any]) -> list[NativeItem]:
        kind = obj.get("type")
        payload = untrusted.obj(obj.get("payload"))
        if kind == "session_meta":
            if self.thread_id is None:
                self.thread_id = opt_label(payload.get("id"))
            return list(self._announce(opt_label(payload.get("cli_version"))))
        if kind == "turn_context":
            self.model = opt_label(payload.get("model")) or self.model
            return []
        if kind == "token_usage_record":
            return self._record(payload)
        if kind == "compacted":
            trigger, self._compact_trigger = self._compact_trigger, None
            return [Compaction(trigger=trigger)]
        if kind == "event_msg":
            return self._event_msg(payload)
        if kind == "response_item":
            item = label(payload.get("type"))  # any JSON value: a list is no set member
            if item in TOOL_ITEMS and not self.hooks_heard:
                return self._set_state("tool")
            if item in TOOL_OUTPUTS and (not self.hooks_heard or self.state == "asking"):
                # Also after an approval prompt: a denied tool has no PostToolUse, its output says it is over.
                return self._set_state("thinking")
        return []

    def _record(self, payload: dict[str, Any]) -> list[NativeItem]:
        self.records_seen = True
        call_id = opt_label(payload.get("response_id"))
        if call_id is None or call_id in self.seen:
            return []
        try:
            usage = codex_usage(payload.get("usage"))
        except BadUsage:
            return []
        self.seen.add(call_id)
        return [CallUsage(usage, self.model, call_id)]

    def _event_msg(self, payload: dict[str, Any]) -> list[NativeItem]:
        kind = payload.get("type")
        out: list[NativeItem] = []
        if kind == "token_count":
            info = untrusted.obj(payload.get("info"))
            window = count(info.get("model_context_window"))
            if window and window != self.window:
                self.window = window
                out.append(ContextWindow(window, self.model))
            if not self.records_seen:
                out += self._from_totals(info)
        elif kind == "task_started":
            self._answered = False
            if not self.hooks_heard:
                out += self._set_state("thinking")
        elif kind == "item_completed":
            out += self._agent_message(payload)
        elif kind in ("task_complete", "turn_aborted"):
            if kind == "task_complete":
                out += self._last_message(payload)
                if error := string(untrusted.obj(payload.get("error")).get("message")):
                    # Measured on 0.171.0: a turn whose API calls kept failing (its screen said "Reconnecting... 5/5")
                    # ends so; nothing in the rollout told the retries before.
                    out.append(TurnEnd(is_error=True, error=f"Codex reported: {error}"))
            out += self._turn_over()  # the turn's end, also when it was interrupted (no Stop hook then)
        return out

    def _agent_message(self, payload: dict[str, Any]) -> list[NativeItem]:
        """A ``Text`` for an ``AgentMessage`` item this thread completed, the first time its id is read."""
        item = untrusted.obj(payload.get("item"))
        thread = opt_label(payload.get("thread_id"))
        if label(item.get("type")) != "AgentMessage" or (thread and self.thread_id and thread != self.thread_id):
            return []
        self._answered = True
        text = agent_text(item)
        key = opt_label(item.get("id")) or "text:" + text_digest(text)
        if not text.strip() or key in self.answers_seen:
            return []
        self.answers_seen.add(key)
        return [Text(text)]

    def _last_message(self, payload: dict[str, Any]) -> list[NativeItem]:
        """The turn's last message from ``task_complete`` when no ``AgentMessage`` item told it (another Codex)."""
        text = string(payload.get("last_agent_message"))
        answered, self._answered = self._answered, False
        key = "turn:" + (opt_label(payload.get("turn_id")) or text_digest(text))
        if answered or not text.strip() or key in self.answers_seen:
            return []
        self.answers_seen.add(key)
        return [Text(text)]

    def _from_totals(self, info: dict[str, Any]) -> list[NativeItem]:
        """A call from ``token_count`` when the file has no per-call records: once per running total."""
        try:
            total = codex_usage(info.get("total_token_usage"))
            last = codex_usage(info.get("last_token_usage"))
        except BadUsage:
            return []
        key = _key(total)
        if key in self.totals_seen or total == Usage():
            return []
        self.totals_seen.add(key)
        return [CallUsage(last, self.model, "total:" + ",".join(map(str, key)))]

    # -- finding and opening the file ------------------------------------------------------------
    def _find_file(self) -> None:
        if self.thread_id is not None and self._open_thread_file(self.thread_id):
            return
        if self.ctx.resumed:
            return  # a resumed thread's file is its own (named by its id or by a hook), never a guess
        found = newest_rollout(self.home, self.ctx.working_dir, self.ctx.started_at, not_of=self.ctx.forked_from)
        if found is not None:
            self._open(found)

    def _open_thread_file(self, thread_id: str) -> bool:
        key = file_key(thread_id)
        sessions = self.home / "sessions"
        if key is None or not sessions.is_dir():
            return False
        matches = sorted(sessions.glob(f"*/*/*/rollout-*-{key}.jsonl"))
        if not matches:
            return False
        self._open(matches[-1])
        return True

    def _open(self, path: Path) -> None:
        """Follow ``path``; on resume from its end, with the calls it already holds known (counted before)."""
        if not path.name.startswith("rollout-") or not path.name.endswith(".jsonl"):
            return
        if self.ctx.resumed:
            # What the file holds was counted (and answered) in the launches before, and stays so if it is
            # read again from its start (truncated, replaced): those calls' and messages' ids are known.
            ids, answers = recorded_ids(path)
            self.seen.update(ids)
            self.answers_seen.update(answers)
            self.records_seen = self.records_seen or bool(ids)
        self.tail = JsonlTail(path, start_at_end=self.ctx.resumed)

    # -- states and timers ---------------------------------------------------------------------
    def _announce(self, cli_version: str | None = None) -> list[Event]:
        if self.announced or not self.thread_id:
            return []
        self.announced = True
        return [SessionStarted(self.thread_id, cwd=str(self.ctx.working_dir), cli_version=cli_version)]

    def _set_state(self, state: str, reason: str | None = None) -> list[NativeItem]:
        if state == self.state and reason is None:
            return []
        self.state = state
        return [StateChanged(state, reason)]

    def _plan(self, now: float, active: bool) -> None:
        """The next reads: a backing-off retry while a turn runs, two reads after it, none while idle."""
        if self.state in ("thinking", "tool"):
            if active:
                self._backoff = 0
            elif not self._schedule:
                self._backoff = min(self._backoff + 1, len(TURN_RETRY) - 1)
            if active or not self._schedule:
                self._schedule = [now + TURN_RETRY[self._backoff]]
        elif self.state == "waiting" and active:
            self._schedule = [now + d for d in AFTER_TURN]
        if self._stop_at is not None:
            self._schedule.append(self._stop_at + STOP_GRACE)
        if (self.sock is None or not self.hooks_heard) and not self._schedule:
            # No hook has woken the launch yet (none configured, or the user turned Codex's hooks off):
            # the rollout alone tells, so it is read every few seconds until a hook is heard.
            self._schedule = [now + FIND_RETRY[-1]]


def resumed_thread(ctx: NativeContext) -> str | None:
    """The thread a resumed launch continues: the one the store keeps for the session, else the session id."""
    if not ctx.resumed:
        return None
    return opt_label(ctx.provider_state.get("thread_id")) or ctx.session_id


def _key(usage: Usage) -> tuple[int, ...]:
    return (usage.input, usage.cache_write, usage.cache_read, usage.output, usage.reasoning)
