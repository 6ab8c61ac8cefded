"""Native Codex through an app-server agentlaunch owns: the one source of the launch, its connection to that server.

Codex's interface runs as ``codex --remote unix://PATH resume THREAD`` against the ``codex app-server`` the
launch started (:mod:`agentlaunch.launch.native.native_remote`); agentlaunch's own connection to the same server is
this source. What it reports (measured on 0.171.0, ``tests/e2e/test_native_codex_remote.py``):

* every model call of the thread, typed in the interface or sent by ``turn/start``, as its own
  ``thread/tokenUsage/updated`` (:class:`~agentlaunch.providers.codex_appserver.AppServerParser`: one
  ``CallUsage`` per call, the window, the plan limits of ``account/rateLimits/updated``);
* states from the thread's own messages: ``thread/status/changed`` ``active`` is ``thinking`` (``asking``
  while its ``activeFlags`` hold ``waitingOnApproval`` or ``waitingOnUserInput``), a command or edit
  item under way is ``tool``, ``turn/completed`` and ``idle`` are ``waiting``;
* the turn's agent messages as ``Text`` (the answer ``agentlaunch send --wait`` returns) and a failed turn's
  error as ``TurnEnd``;
* a compaction as the ``item/completed`` of a ``contextCompaction`` item (its own call comes as any call's
  ``thread/tokenUsage/updated``; the two that repeat a running total around it are not calls).

The thread's status says ``waitingOnApproval`` (or ``waitingOnUserInput``) a few milliseconds before the request itself
reaches this connection (measured on 0.171.0): the ``asking`` waits :data:`ASK_GRACE` for that request, so one question
is one state change with its question as the reason, and one notification; only a status no request follows within
the grace is ``asking`` with the flag's words.

Approval requests and the questions of its ``request_user_input`` tool reach both connections; the person answers
them in the interface (it shows one asked before it attached, too), or with ``agentlaunch answer``, which this source
answers on its own connection (:class:`~agentlaunch.providers.native.source.QuestionAsked`; a question with a reply:
:mod:`.codex_question`). No rollout file is read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentlaunch.events import Compaction, PermissionRequest, ToolResult, ToolUse, TurnEnd, Unknown, Warning
from agentlaunch.providers import codex_appserver as rpc
from agentlaunch.providers.asked import tool_question
from agentlaunch.providers.native.codex_question import USER_INPUT, asks_of, user_input_question
from agentlaunch.providers.native.source import NativeItem, PromptTyped, QuestionAsked
from agentlaunch.providers.untrusted import obj, opt_label, string
from agentlaunch.sinks import StateChanged

if TYPE_CHECKING:
    from agentlaunch.providers.native.unix_websocket import Message, UnixWebSocket
    from agentlaunch.token_usage import Usage

ASKING_FLAGS = {
    "waitingOnApproval": "Codex waits for an approval in its interface",
    "waitingOnUserInput": "Codex waits for an answer in its interface",
}
LEGACY_WORDS = {"once": "approved", "always": "approved_for_session", "deny": "denied"}
ASK_GRACE = 1.0
"""Seconds a thread status that says it waits on the person waits for the request that names the question."""
TOOL_ITEMS = frozenset({"commandExecution", "fileChange", "mcpToolCall", "webSearch"})


class RemoteSource:
    """agentlaunch's connection to the app-server of a native Codex launch (a :class:`NativeSource`)."""

    def __init__(
        self,
        conn: UnixWebSocket,
        thread_id: str | None = None,
        total: Usage | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.conn, self.clock = conn, clock
        self.parser = rpc.AppServerParser(thread_id, total)
        self.backlog: list[Message] = []
        """Messages that arrived while a request waited for its answer (read first)."""
        self._ids = iter(range(1, 1 << 62))
        self.state: str | None = None
        self.queued: list[NativeItem] = []
        """Items to report at the next read (the launch's own: ``waiting`` once a resumed thread is open)."""
        self._turns: set[str] = set()  # the ids of this connection's turn/start requests not answered yet
        self._ended = False  # the end of the connection was reported
        self._turn = False  # a turn of the thread began and has not completed
        self._tools = 0  # tool items under way
        self._question: str | None = None  # what the approval request under way asks (its command, its change)
        self._reason: str | None = None  # the reason last said with the state
        self._ask_due: float | None = None  # a status said asking: its request is awaited until then (ASK_GRACE)
        self._ask_flag: str | None = None  # that status's flag

    # -- requests ---------------------------------------------------------------------------------
    def next_id(self) -> int:
        return next(self._ids)

    def call(self, message: Message, timeout: float) -> Message:
        """A request and its answer (blocking: the launch's start); the answer is read by the parser as well."""
        answer = self.conn.call(message, timeout, self.backlog)
        self.backlog.insert(0, answer)
        return answer

    def turn_start(self, text: str) -> None:
        """A turn with ``text`` on the session's thread (agentlaunch send): its messages come as any turn's."""
        assert self.parser.thread_id is not None
        rid = self.next_id()
        self._turns.add(str(rid))
        self.conn.send(rpc.turn_start(rid, self.parser.thread_id, text))

    @property
    def gone(self) -> bool:
        """The connection ended: the app-server exited (or closed it)."""
        return self.conn.closed

    # -- NativeSource -------------------------------------------------------------------------------
    def filenos(self) -> tuple[int, ...]:
        return () if self.conn.closed else (self.conn.fileno(),)

    def deadline(self) -> float | None:
        if self.backlog or self.queued:
            return 0.0  # what arrived during the start: read at once
        return self._ask_due  # a status said asking and its request has not come yet

    def read(self) -> list[NativeItem]:
        messages, self.backlog = self.backlog, []
        out, self.queued = self.queued, []
        if not self.conn.closed:
            messages += self.conn.receive()
        for message in messages:
            out += self._message(message)
        if self._ask_due is not None and self.clock() >= self._ask_due:
            out += self._set("asking", ASKING_FLAGS[self._ask_flag or "waitingOnApproval"])  # no request came
        if self.conn.closed and not self._ended:
            self._ended = True
            out += self._set("exited", self.conn.reason or "codex app-server closed the connection")
        return out

    def opened(self) -> None:
        """A resumed thread is open: the session waits for its next prompt (no message says so)."""
        self.queued += self._set("waiting")

    def close(self) -> None:
        self.conn.close()

    # -- what a message says --------------------------------------------------------------------------
    def _message(self, message: Message) -> list[NativeItem]:
        method = message.get("method")
        params = obj(message.get("params"))
        thread = opt_label(params.get("threadId"))
        if thread is not None and self.parser.thread_id is not None and thread != self.parser.thread_id:
            return []  # another thread's (the one the interface starts to title the conversation)
        if isinstance(method, str) and "id" in message:
            # A server request (an approval, a question): the person answers it in the interface; what it asks is
            # the reason of the session's asking, which its thread's status may have said already.
            self._question = question_of(method, params)
            asked = self._asked(message["id"], method, params)
            awaited = self.state == "asking" or self._ask_due is not None
            return asked + (self._set("asking", self._question) if awaited and self._question else [])
        if method is None and str(message.get("id")) in self._turns:
            self._turns.discard(str(message.get("id")))
            if (error := message.get("error")) is not None:  # no turn began: the send is released by its own bound
                return [Warning(f"codex app-server refused a sent prompt: {string(obj(error).get('message'))}")]
        out: list[NativeItem] = []
        if method == "turn/started":
            self._turn, self._tools = True, 0
        if method == "thread/status/changed":
            out += self._status(obj(params.get("status")))
        elif method == "item/started" and (typed := user_text(obj(params.get("item")))):
            out.append(PromptTyped(typed))
        elif method == "item/completed" and obj(params.get("item")).get("type") == "contextCompaction":
            out.append(Compaction())  # its call is counted as any other (its own thread/tokenUsage/updated)
        for event in self.parser.event(message):
            out += self._event(event)
        return out

    def _asked(self, rid: Any, method: str, params: dict[str, Any]) -> list[NativeItem]:
        """An approval request as a question ``agentlaunch answer`` can answer: on this connection, as the interface
        would (the first answer the app-server gets wins; the other is dropped)."""
        if not isinstance(rid, int | str) or isinstance(rid, bool):
            return []
        if method == USER_INPUT:  # its request_user_input tool: a question answered with a reply
            return user_input_question(rid, params, self._send)
        tool = rpc.APPROVALS.get(method)
        if tool is None:
            return []
        legacy = not method.startswith("item/")

        def answer(decision: str, _text: str) -> bool:
            said = rpc.approval_answer(str(rid), decision)
            if legacy:  # execCommandApproval / applyPatchApproval take the older words
                said["result"] = {"decision": LEGACY_WORDS.get(decision, "denied")}
            said["id"] = rid
            return self._send(said)

        shown = {k: v for k, v in params.items() if k not in ("threadId", "turnId", "itemId")}
        return [QuestionAsked(tool, shown, ("once", "always", "deny"), answer, asks=question_of(method, params) or "")]

    def _send(self, message: dict[str, Any]) -> bool:
        """An answer on this connection; False when it is closed (the app-server is gone)."""
        if self.conn.closed:
            return False
        try:
            self.conn.send(message)
        except OSError:
            return False
        return True

    def _status(self, status: dict[str, Any]) -> list[NativeItem]:
        kind = status.get("type")
        if kind == "idle":
            # Before turn/completed (measured): the turn's end says waiting, after its error is known.
            return [] if self._turn else self._set("waiting")
        if kind != "active":
            return []
        flags = [flag for flag in status.get("activeFlags") or [] if flag in ASKING_FLAGS]
        if flags and self._question is None and self.state != "asking":
            if self._ask_due is None:  # its request follows: one asking, named by it (ASK_GRACE)
                self._ask_due, self._ask_flag = self.clock() + ASK_GRACE, flags[0]
            return []
        if flags:
            return self._set("asking", self._question or ASKING_FLAGS[flags[0]])
        return self._set("tool" if self._tools else "thinking")

    def _event(self, event: Any) -> list[NativeItem]:
        asking = self.state == "asking" or self._ask_due is not None
        if isinstance(event, ToolUse):
            self._tools += 1  # started while an approval is asked for: asking until it is answered
            return [] if asking else self._set("tool")
        if isinstance(event, ToolResult):
            self._tools = max(self._tools - 1, 0)
            return [] if asking else self._set("tool" if self._tools else "thinking")
        if isinstance(event, PermissionRequest):
            return []
        if isinstance(event, TurnEnd):
            self._turn, self._tools = False, 0
            return [event, *self._set("waiting")]
        if isinstance(event, Warning):
            # A retried API error is news for the state; the rest (the app-server's own warnings) are not the session's.
            return self._set("retrying", event.message) if event.retry is not None else []
        if isinstance(event, Unknown):
            return []
        return [event]

    def _set(self, state: str, reason: str | None = None) -> list[NativeItem]:
        self._ask_due = self._ask_flag = None  # a state said: no asking awaits its request any more
        if state == self.state and state != "retrying" and not (state == "asking" and reason != self._reason):
            return []
        if state != "asking":
            self._question = None  # answered: the next approval asks its own
        self.state, self._reason = state, reason
        return [StateChanged(state, reason, "app-server")]


def question_of(method: str, params: dict[str, Any]) -> str | None:
    """What a server request asks the person, in one line (:func:`~agentlaunch.providers.asked.tool_question`): a
    command's approval its command, a file change's its reason, a question its first question; None for another."""
    tool = rpc.APPROVALS.get(method)
    if tool == "shell":
        # The command as the interface shows it ("touch x"), not as it runs ("/bin/bash -lc 'touch x'").
        actions = [string(obj(a).get("command")) for a in params.get("commandActions") or [] if isinstance(a, dict)]
        return tool_question("shell", " && ".join(a for a in actions if a) or params.get("command") or params)
    if tool == "edit":
        return tool_question("edit", string(params.get("reason")) or "file changes")
    if method == USER_INPUT:
        return asks_of(params) or tool_question("question", params)
    return None


def user_text(item: dict[str, Any]) -> str | None:
    """The text of a ``userMessage`` item (a prompt typed in the interface, or sent), or None."""
    if item.get("type") != "userMessage":
        return None
    parts = [string(obj(part).get("text")) for part in item.get("content") or [] if obj(part).get("type") == "text"]
    return "\n".join(parts) or None


def thread_of(answer: Message) -> str | None:
    """The thread id of a ``thread/start`` or ``thread/resume`` answer."""
    return opt_label(obj(obj(answer.get("result")).get("thread")).get("id"))


def refusal(answer: Message) -> str | None:
    """The message of a request's error answer, or None when it was answered."""
    error = answer.get("error")
    if error is None:
        return None
    return string(obj(error).get("message")) or "refused"
