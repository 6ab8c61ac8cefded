"""Codex through ``codex app-server``: the JSON-RPC messages agentlaunch sends, and what it reads back as events.

Measured on Codex 0.171.0 against the fake Responses API (``tests/test_codex_appserver_contract.py``):

* one JSON object per line on stdio, JSON-RPC without ``"jsonrpc"``; ``initialize``, then the
  ``initialized`` notification, then ``thread/start`` (``developerInstructions`` lands as the developer
  message right after Codex's base prompt, as ``-c developer_instructions`` does) or ``thread/resume``, then
  ``turn/start`` per turn;
* ``thread/tokenUsage/updated`` after **every model call**: ``tokenUsage.last`` is that call's own usage,
  ``tokenUsage.total`` the thread's running total, ``modelContextWindow`` the model's window. No rollout
  reading is needed to split a turn into its calls;
* ``account/rateLimits/updated`` after each call: ``primary`` / ``secondary`` windows
  (``usedPercent`` an integer, ``windowDurationMins`` 300 and 10080, ``resetsAt`` unix seconds) read from
  the API's ``x-codex-primary-*`` / ``x-codex-secondary-*`` headers; both null when the API sent none;
* ``thread/status/changed``: ``active`` (``activeFlags`` ``waitingOnApproval`` while a command waits for
  an answer), ``idle`` after the turn;
* agent messages as ``item/completed`` of ``agentMessage`` items; commands as ``commandExecution`` items
  (``item/started``, ``item/completed`` with ``exitCode``); an approval asked as the server request
  ``item/commandExecution/requestApproval``, answered ``{"decision": "accept"}``;
* ``turn/completed`` with ``turn.status`` ``completed``, ``interrupted`` or ``failed`` (``turn.error``).

The app-server also prints a ``configWarning`` (no bubblewrap on PATH) and ``remoteControl/status/changed``
at start, and its log names failed fetches of a curated plugins repository (github.com, chatgpt.com)
when offline; none of them is an event of the conversation.
"""

from __future__ import annotations

from typing import Any

from agentlaunch.events import (
    CallUsage,
    ContextWindow,
    Event,
    PermissionRequest,
    RateLimits,
    SessionStarted,
    Text,
    ToolResult,
    ToolUse,
    TurnEnd,
    Unknown,
    Warning,
)
from agentlaunch.providers.base import JsonLineParser
from agentlaunch.providers.codex import global_options, reconnecting
from agentlaunch.providers.codex_rollout import codex_usage
from agentlaunch.providers.rate_limits import read_rate_limits
from agentlaunch.providers.untrusted import BadUsage, count, items, kind_name, label, obj, opt_label, refused, string, summarize
from agentlaunch.token_usage import Usage

CLIENT = {"name": "agentlaunch", "title": "agentlaunch", "version": "1"}
WINDOW_MINUTES = {300: "five_hour", 10080: "seven_day"}
"""The plan windows agentlaunch keeps, by their length in minutes."""
QUIET_METHODS = frozenset(
    {
        "turn/started",
        "item/agentMessage/delta",
        "item/reasoning/summaryTextDelta",
        "item/reasoning/summaryPartAdded",
        "item/reasoning/textDelta",
        "item/commandExecution/outputDelta",
        "item/fileChange/outputDelta",
        "thread/status/changed",
        "thread/readState/changed",
        "thread/name/updated",
        "thread/goal/cleared",
        "configWarning",
        "remoteControl/status/changed",
        "serverRequest/resolved",
        "turn/diff/updated",
        "turn/plan/updated",
        "mcpServer/startupStatus/updated",
        "skills/changed",
        "thread/settings/updated",
        "deprecationNotice",
    }
)
"""Notifications that carry nothing agentlaunch meters or shows (states come from the turn's own events)."""
APPROVALS = {
    "item/commandExecution/requestApproval": "shell",
    "item/fileChange/requestApproval": "edit",
    "execCommandApproval": "shell",
    "applyPatchApproval": "edit",
}
"""Server requests that wait for a person's answer, and the tool each one is about."""


APP_SERVER_OPTIONS = ("-c", "--config", "--enable", "--disable")
"""The options of ``codex exec`` that ``codex app-server`` takes too (each with a value)."""


def app_server_argv(
    command: str, provider_flags: tuple[str, ...] | list[str], compaction_at: int | None = None
) -> list[str] | None:
    """``codex -c … app-server [the agent's provider flags]``; None when a provider flag is one only ``codex exec``
    takes (``--sandbox``, ``--full-auto``, ...): that agent's turns stay ``codex exec`` processes."""
    flags = list(provider_flags)
    i = 0
    while i < len(flags):
        if flags[i] in APP_SERVER_OPTIONS and i + 1 < len(flags):
            i += 2
        elif flags[i].startswith(tuple(f"{option}=" for option in APP_SERVER_OPTIONS[1:])):
            i += 1
        else:
            return None
    return [command, *global_options(compaction_at), "app-server", *flags]


def request(request_id: int, method: str, params: dict[str, object]) -> dict[str, object]:
    return {"id": request_id, "method": method, "params": params}


def initialize(request_id: int) -> list[dict[str, object]]:
    """The handshake: ``initialize`` and the ``initialized`` notification after it."""
    return [request(request_id, "initialize", {"clientInfo": CLIENT}), {"method": "initialized"}]


def open_thread(
    request_id: int, cwd: str, thread_id: str | None, model: str | None, approval: str | None = "never"
) -> dict[str, object]:
    """``thread/start`` (``thread_id`` None) or ``thread/resume``, with what ``codex exec`` runs with: no approval
    asked (``never``), the sandbox of the configuration (read-only unless it says otherwise). The request the
    model then gets is ``codex exec``'s, ids aside (pinned by the e2e tests). ``approval`` None: the
    configuration's policy (the native mode's: the person answers in Codex's interface)."""
    params: dict[str, object] = {"cwd": cwd}
    if approval is not None:
        params["approvalPolicy"] = approval
    if model:
        params["model"] = model
    if thread_id is None:
        return request(request_id, "thread/start", params)
    # excludeTurns: without it 0.171.0 sends the whole history back, and a deprecationNotice saying so.
    return request(request_id, "thread/resume", {**params, "threadId": thread_id, "excludeTurns": True})


def turn_start(request_id: int, thread_id: str, text: str) -> dict[str, object]:
    return request(request_id, "turn/start", {"threadId": thread_id, "input": [{"type": "text", "text": text}]})


def turn_interrupt(request_id: int, thread_id: str, turn_id: str) -> dict[str, object]:
    return request(request_id, "turn/interrupt", {"threadId": thread_id, "turnId": turn_id})


def approval_answer(request_id: str, decision: str) -> dict[str, object]:
    """The answer to an approval request; ``decision`` is agentlaunch's once, always or deny."""
    answer = {"once": "accept", "always": "acceptForSession"}.get(decision, "decline")
    rid: object = int(request_id) if request_id.isdigit() else request_id
    return {"id": rid, "result": {"decision": answer}}


def snake_usage(raw: Any) -> dict[str, Any]:
    """The app-server's camelCase token breakdown in the field names of ``codex exec`` and the rollouts."""
    names = {
        "inputTokens": "input_tokens",
        "cachedInputTokens": "cached_input_tokens",
        "cacheWriteInputTokens": "cache_write_input_tokens",
        "outputTokens": "output_tokens",
        "reasoningOutputTokens": "reasoning_output_tokens",
    }
    return {snake: value for camel, snake in names.items() if (value := obj(raw).get(camel)) is not None}


def rate_limits(raw: Any) -> tuple[RateLimits | None, list[str]]:
    """The 5-hour and 7-day windows of an ``account/rateLimits/updated``'s ``rateLimits`` (by their length)."""
    windows: dict[str, Any] = {}
    for slot in ("primary", "secondary"):
        window = obj(raw).get(slot)
        name = WINDOW_MINUTES.get(count(obj(window).get("windowDurationMins")) or 0)
        if name is not None:
            windows[name] = window
    if not windows:
        return None, []
    return read_rate_limits(windows, where="rateLimits", percent_key="usedPercent", reset_key="resetsAt")


class AppServerParser(JsonLineParser):
    """``codex app-server`` messages to normalized events, for the one thread of the session.

    Every call's usage is its own ``thread/tokenUsage/updated`` ``last``; messages about another thread (the
    ephemeral one the interface starts to title a conversation) are left out once the session's is known.
    """

    def __init__(self, thread_id: str | None = None, total: Usage | None = None) -> None:
        self.thread_id = thread_id
        self.turn_id: str | None = None
        self.total = total
        """The thread's running total, as the last ``thread/tokenUsage/updated`` said (kept for ``codex exec``)."""
        self.window: int | None = None
        self.answers: dict[str, dict[str, Any]] = {}
        """Answers to agentlaunch's own requests, by id (the driver reads the thread's id from them)."""

    def event(self, obj_: dict[str, Any]) -> list[Event]:
        method = obj_.get("method")
        if not isinstance(method, str):
            return self._answer(obj_)
        params = obj(obj_.get("params"))
        if "id" in obj_:
            return self._server_request(method, label(obj_.get("id")), params)
        thread = opt_label(params.get("threadId"))
        if thread is not None and self.thread_id is not None and thread != self.thread_id:
            return []
        if method in QUIET_METHODS:
            if method == "turn/started":
                self.turn_id = opt_label(obj(params.get("turn")).get("id"))
            return []
        handler = HANDLERS.get(method)
        return handler(self, params) if handler is not None else [Unknown(kind_name(method))]

    def _answer(self, message: dict[str, Any]) -> list[Event]:
        rid = label(message.get("id"))
        error = message.get("error")
        if error is not None:
            self.answers[rid] = {"error": error}
            return [Warning(f"codex app-server refused request {rid}: {string(obj(error).get('message')) or 'error'}")]
        result = obj(message.get("result"))
        self.answers[rid] = result
        turn = opt_label(obj(result.get("turn")).get("id"))
        if turn is not None:
            self.turn_id = turn
        thread = obj(result.get("thread"))
        if thread.get("id") and not thread.get("ephemeral") and self.thread_id in (None, thread.get("id")):
            return self._started(thread, result)
        return []

    def _started(self, thread: dict[str, Any], result: dict[str, Any] | None = None) -> list[Event]:
        self.thread_id = label(thread.get("id"))
        model = opt_label(obj(result).get("model")) or opt_label(thread.get("model"))
        cwd = opt_label(thread.get("cwd"))
        return [SessionStarted(self.thread_id, model=model, cwd=cwd, cli_version=opt_label(thread.get("cliVersion")))]

    def _server_request(self, method: str, rid: str, params: dict[str, Any]) -> list[Event]:
        tool = APPROVALS.get(method)
        if tool is None:
            return [Warning(f"codex app-server asked {kind_name(method)}, which agentlaunch does not answer")]
        shown = {"command": string(params.get("command"))} if tool == "shell" else {"reason": string(params.get("reason"))}
        return [PermissionRequest(rid, tool, shown)]

    def thread_started(self, params: dict[str, Any]) -> list[Event]:
        thread = obj(params.get("thread"))
        if self.thread_id is not None or thread.get("ephemeral") or not thread.get("id"):
            return []
        return self._started(thread)

    def token_usage(self, params: dict[str, Any]) -> list[Event]:
        """A call of the running turn: its usage, and the window when it changed.

        Two repeats are not calls (measured): ``thread/resume`` repeats the last call of an earlier turn (its
        ``turnId`` is not the running turn's), and ``turn/interrupt`` repeats the turn's last call (the running
        ``total`` has not moved).
        """
        usage = obj(params.get("tokenUsage"))
        events: list[Event] = []
        try:
            total: Usage | None = codex_usage(snake_usage(usage.get("total")))
        except BadUsage:
            total = None  # the call is counted from `last`; a later `codex exec` turn counts from the older total
        repeated = total is not None and total == self.total
        if self.turn_id is not None and opt_label(params.get("turnId")) == self.turn_id and not repeated:
            try:
                events.append(CallUsage(codex_usage(snake_usage(usage.get("last")))))
            except BadUsage as why:
                events.append(Warning(refused("codex", None, why)))
        self.total = total or self.total
        window = count(usage.get("modelContextWindow"))
        if window and window != self.window:
            self.window = window
            events.append(ContextWindow(window))
        return events

    def limits(self, params: dict[str, Any]) -> list[Event]:
        found, problems = rate_limits(params.get("rateLimits"))
        events: list[Event] = [Warning(f"codex app-server: {problem}") for problem in problems]
        return [*events, found] if found is not None else events

    def item(self, params: dict[str, Any], started: bool) -> list[Event]:
        item = obj(params.get("item"))
        kind, item_id = item.get("type"), label(item.get("id"))
        if kind == "agentMessage":
            return [] if started else [Text(string(item.get("text")))]
        if kind == "commandExecution":
            if started:
                return [ToolUse(item_id, "shell", summarize(string(item.get("command"))))]
            failed = item.get("status") == "failed" or item.get("exitCode") not in (None, 0)
            return [ToolResult(item_id, failed, summarize(string(item.get("aggregatedOutput"))))]
        if kind in ("fileChange", "mcpToolCall", "webSearch") and not started:
            name = {"fileChange": "edit", "webSearch": "web_search"}.get(str(kind))
            if name is None:
                name = f"{label(item.get('server'), 'mcp')}.{label(item.get('tool'), '?')}"
            paths = " ".join(label(obj(c).get("path")) for c in items(item.get("changes")))
            failed = item.get("status") == "failed"
            return [
                ToolUse(item_id, name, summarize(paths or item.get("query") or item.get("arguments") or "")),
                ToolResult(item_id, failed),
            ]
        return []

    def turn_completed(self, params: dict[str, Any]) -> list[Event]:
        turn = obj(params.get("turn"))
        status = turn.get("status")
        self.turn_id = None
        if status == "completed":
            return [TurnEnd(result="")]
        message = string(obj(turn.get("error")).get("message")) or f"turn {kind_name(status)}"
        return [TurnEnd(is_error=True, error=message)]

    def error(self, params: dict[str, Any]) -> list[Event]:
        message = string(obj(params.get("error")).get("message")) or "error"
        return [Warning(message, retry=reconnecting(message) if params.get("willRetry") is True else None)]

    def warning(self, params: dict[str, Any]) -> list[Event]:
        return [Warning(string(params.get("message")) or string(params.get("summary")) or "warning")]


HANDLERS = {
    "thread/started": AppServerParser.thread_started,
    "thread/tokenUsage/updated": AppServerParser.token_usage,
    "account/rateLimits/updated": AppServerParser.limits,
    "item/started": lambda p, params: p.item(params, True),
    "item/completed": lambda p, params: p.item(params, False),
    "turn/completed": AppServerParser.turn_completed,
    "error": AppServerParser.error,
    "warning": AppServerParser.warning,
}
