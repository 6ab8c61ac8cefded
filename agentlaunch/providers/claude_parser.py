"""Claude Code's stream-json, read: its lines into normalized events (usage per call, text, tools, permission questions)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentlaunch.datarecord import replace
from agentlaunch.events import (
    CallUsage,
    Compaction,
    ContextWindow,
    Event,
    OutputFinal,
    PermissionRequest,
    SessionStarted,
    Text,
    TextDelta,
    ThinkingDelta,
    ToolGate,
    ToolResult,
    ToolUse,
    TurnEnd,
    Unknown,
    Warning,
)
from agentlaunch.providers.base import JsonLineParser
from agentlaunch.providers.descriptors import CLAUDE_EXCLUDE_DYNAMIC_FLAG
from agentlaunch.token_usage import Usage

if TYPE_CHECKING:
    pass
from agentlaunch.providers import untrusted
from agentlaunch.providers.rate_limits import read_rate_limits
from agentlaunch.providers.untrusted import (
    BadUsage,
    Recent,
    checked,
    count,
    counts,
    items,
    kind_name,
    label,
    number,
    opt_label,
    refused,
    shown,
    string,
    summarize,
)

# Event types Claude Code prints that carry nothing agentlaunch shows or counts.
IGNORED = {"control_response", "control_cancel_request"}
SYSTEM_PROMPT_FLAGS = ("--system-prompt", "--system-prompt-file")
EXCLUDE_DYNAMIC_FLAG = CLAUDE_EXCLUDE_DYNAMIC_FLAG
MAX_OPEN_CALLS = 1000  # calls awaiting their final output; a real turn has a handful


ANTHROPIC_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
LIFETIME_FIELDS = ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")


def anthropic_usage(raw: Any) -> Usage:
    """Anthropic's usage object as a Usage; BadUsage when it is not a set of token counts.

    ``input_tokens`` is required (every Messages API usage has it); the cache
    fields and ``output_tokens`` are 0 when absent.
    """
    found = counts(raw, ANTHROPIC_FIELDS, required=("input_tokens",))
    # The writes by lifetime; without the breakdown (older CLIs, other gateways) every write is 5-minute.
    breakdown = raw.get("cache_creation")
    if breakdown is not None and not isinstance(breakdown, dict):
        raise BadUsage(f"cache_creation is {shown(breakdown)}, not an object")
    one_hour = counts(breakdown or {}, LIFETIME_FIELDS)["ephemeral_1h_input_tokens"]
    return checked(
        Usage(
            input=found["input_tokens"],
            cache_write=found["cache_creation_input_tokens"],
            cache_read=found["cache_read_input_tokens"],
            output=found["output_tokens"],
            cache_write_1h=one_hour,
        )
    )


GATE_CALLBACK = "agentlaunch-budget-gate"
"""The id of the ``PreToolUse`` hook callback agentlaunch registers (``ClaudeAdapter.gate_request``)."""


class ClaudeParser(JsonLineParser):
    """Claude Code's stream-json output to normalized events.

    Usage is counted once per model call: the call's ``message_start`` usage
    (from ``--include-partial-messages``) completed by the output count of its
    ``message_delta``. The ``assistant`` lines repeat that snapshot once per
    content block; without partial messages the first of them starts the call
    instead. A call whose ``message_delta`` never comes is completed by the
    turn's ``result``: ``result.usage`` sums the turn's calls, so the one call
    still open gets the turn's output less that of the calls already counted
    (with two or more open, the split is unknown and they keep their start
    counts). ``modelUsage`` (a session total) is never counted as calls.
    A repeated block (the same text or tool call of the same message) is shown once.
    """

    def __init__(self) -> None:
        self._pending: dict[str, tuple[Usage, str | None]] = {}
        self._current: str | None = None
        self._counted = Recent()
        self._refused = Recent()
        self._streamed_text = Recent()
        self._shown = Recent()  # (call id, block) already emitted as Text or ToolUse
        self._turn_output = 0  # output of the calls counted since the last result
        self._rate_problems_said = False

    def event(self, obj: dict[str, Any]) -> list[Event]:
        kind = obj.get("type")
        handler = getattr(self, f"_on_{kind}", None) if isinstance(kind, str) and kind.isidentifier() else None
        if handler is not None:
            return list(handler(obj))
        if isinstance(kind, str) and kind in IGNORED:
            return []
        return [Unknown(kind_name(kind))]

    def finish(self) -> list[Event]:
        events: list[Event] = []
        for call_id, (usage, model) in self._pending.items():
            events.append(self._count(call_id, usage, model))
        self._pending.clear()
        return events

    def _count(self, call_id: str, usage: Usage, model: str | None) -> CallUsage:
        self._counted.add(call_id)
        self._turn_output += usage.output
        return CallUsage(usage, model, call_id)

    def _open(self, call_id: str, msg: dict[str, Any]) -> list[Event]:
        """Start counting the call ``call_id`` from its message-start usage; a Warning when that is refused."""
        try:
            usage = anthropic_usage(msg.get("usage"))
        except BadUsage as why:
            self._refused.add(call_id)
            return [Warning(refused("claude", call_id, why))]
        self._pending[call_id] = (usage, opt_label(msg.get("model")))
        if len(self._pending) > MAX_OPEN_CALLS:
            # A stream that opens calls and never closes them: the oldest is counted as it started,
            # as at the end of the output, so memory stays bounded.
            oldest = next(iter(self._pending))
            return [self._count(oldest, *self._pending.pop(oldest))]
        return []

    def _known(self, call_id: str) -> bool:
        return call_id in self._pending or call_id in self._counted or call_id in self._refused

    def _on_system(self, obj: dict[str, Any]) -> list[Event]:
        sub = obj.get("subtype")
        if sub == "init":
            return [
                SessionStarted(
                    label(obj.get("session_id")),
                    opt_label(obj.get("model")),
                    string(obj.get("cwd")) or None,
                    opt_label(obj.get("claude_code_version")),
                )
            ]
        if sub == "compact_boundary":
            meta = untrusted.obj(obj.get("compact_metadata"))
            return [Compaction(opt_label(meta.get("trigger")), count(meta.get("pre_tokens")), count(meta.get("post_tokens")))]
        if sub == "api_retry":
            delay = (number(obj.get("retry_delay_ms")) or 0) / 1000
            attempt, most = label(obj.get("attempt"), "?"), label(obj.get("max_retries"), "?")
            status, error = count(obj.get("error_status")), label(obj.get("error"), "")
            cause = " ".join(part for part in (str(status) if status else "", error) if part) or "an API error"
            return [
                Warning(f"API call failed; retry {attempt}/{most} in {delay:.1f}s", retry=f"{cause}, attempt {attempt}/{most}")
            ]
        if sub == "permission_denied":
            return [Warning(string(obj.get("message")) or f"permission denied for {label(obj.get('tool_name'), '?')}")]
        if sub == "status":
            return []
        return [Unknown(f"system/{kind_name(sub)}")]

    def _on_rate_limit_event(self, obj: dict[str, Any]) -> list[Event]:
        """The plan's limits after a call (a claude.ai login or a gateway; never with an API key)."""
        info = untrusted.obj(obj.get("rate_limit_info"))
        limits, problems = read_rate_limits(
            info.get("unifiedWindows"),
            where="rate_limit_info.unifiedWindows",
            percent_key="utilization",
            reset_key="resetsAt",
            scale=100.0,
        )
        found: list[Event] = []
        if problems and not self._rate_problems_said:  # once a session: the same line would come after every call
            self._rate_problems_said = True
            found.append(Warning("Claude Code reported plan limits agentlaunch cannot read: " + "; ".join(problems)))
        return found + ([limits] if limits is not None else [])

    def _on_stream_event(self, obj: dict[str, Any]) -> list[Event]:
        ev = untrusted.obj(obj.get("event"))
        etype = ev.get("type")
        if etype == "message_start":
            msg = untrusted.obj(ev.get("message"))
            call_id = opt_label(msg.get("id"))
            if call_id and not self._known(call_id):
                self._current = call_id
                return self._open(call_id, msg)
            return []
        if etype == "content_block_delta":
            delta = untrusted.obj(ev.get("delta"))
            text = string(delta.get("text"))
            if delta.get("type") == "text_delta" and text:
                if self._current:
                    self._streamed_text.add(self._current)
                return [TextDelta(text)]
            thought = string(delta.get("thinking"))
            if delta.get("type") == "thinking_delta" and thought:
                return [ThinkingDelta(thought)]
            return []
        if etype == "message_delta":
            call_id = self._current
            raw = untrusted.obj(ev.get("usage")).get("output_tokens")
            out = count(raw)
            if call_id and call_id in self._pending:
                usage, model = self._pending.pop(call_id)
                if raw is not None and out is None:
                    self._refused.add(call_id)
                    return [Warning(refused("claude", call_id, BadUsage(f"output_tokens is {shown(raw)}, not a token count")))]
                if out is not None:
                    usage = replace(usage, output=out)
                return [self._count(call_id, usage, model)]
            if call_id and out is not None and call_id in self._counted:
                return [OutputFinal(out, call_id)]
            return []
        return []

    def _on_assistant(self, obj: dict[str, Any]) -> list[Event]:
        msg = untrusted.obj(obj.get("message"))
        if obj.get("is_api_error_message") or msg.get("model") == "<synthetic>":
            # The CLI's own stand-in for a failed call: no tokens, and its text is an
            # error message that the turn's result reports; it is not the answer.
            return []
        call_id = opt_label(msg.get("id"))
        events: list[Event] = []
        if call_id and not self._known(call_id):
            # No partial messages for this call: its start snapshot, completed by a
            # message_delta or the turn's result.
            events += self._open(call_id, msg)
        for block in items(msg.get("content")):
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text":
                text = string(block.get("text"))
                if text and call_id not in self._streamed_text and self._shown.first_time((call_id, "text", hash(text))):
                    events.append(Text(text))
            elif btype == "tool_use":
                tool_id = label(block.get("id"))
                if not tool_id or self._shown.first_time((call_id, "tool", tool_id)):
                    events.append(ToolUse(tool_id, label(block.get("name"), "?"), summarize(block.get("input"))))
        return events

    def _on_user(self, obj: dict[str, Any]) -> list[Event]:
        content = untrusted.obj(obj.get("message")).get("content")
        events: list[Event] = []
        for block in items(content):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                events.append(
                    ToolResult(label(block.get("tool_use_id")), bool(block.get("is_error")), summarize(block.get("content")))
                )
        return events

    def _on_result(self, obj: dict[str, Any]) -> list[Event]:
        events: list[Event] = self._complete_from_result(obj.get("usage"))
        events += self.finish()
        for model, info in untrusted.obj(obj.get("modelUsage")).items():
            window = count(untrusted.obj(info).get("contextWindow"))
            if window:
                events.append(ContextWindow(window, label(model)))
        is_error = bool(obj.get("is_error")) or obj.get("subtype") != "success"
        error = None
        if is_error:
            errors = items(obj.get("errors"))
            error = (
                string(obj.get("result"))
                or "; ".join(string(e) or summarize(e) for e in errors)
                or label(obj.get("subtype"))
                or "error"
            )
        events.append(
            TurnEnd(
                is_error=is_error,
                result=string(obj.get("result")),
                error=error,
                provider_cost_usd=number(obj.get("total_cost_usd")),
            )
        )
        # A call's lines never outlive its turn's result: forgetting its ids keeps a long session's memory flat.
        self._streamed_text.clear()
        self._shown.clear()
        self._counted.clear()
        self._refused.clear()
        self._current = None
        self._turn_output = 0
        return events

    def _complete_from_result(self, turn_usage: Any) -> list[Event]:
        """The one call still open (no message_delta came) gets the turn's output less the counted calls'.

        ``result.usage`` sums the turn's calls; an interrupted call is left out of
        it (zeros), so a remainder below the call's start count is not its output.
        With several calls open their split is unknown: they keep their start
        counts, and a warning says how much output that leaves uncounted.
        """
        out = count(untrusted.obj(turn_usage).get("output_tokens"))
        if not self._pending or out is None:
            return []
        remainder = out - self._turn_output
        if len(self._pending) > 1:
            started = sum(usage.output for usage, _ in self._pending.values())
            if remainder <= started:
                return []
            return [
                Warning(
                    f"the turn's result reports {remainder - started:,} more output tokens than its "
                    f"{len(self._pending)} calls without a final count were started with; "
                    "how they split is unknown, so they are not counted"
                )
            ]
        call_id, (usage, model) = next(iter(self._pending.items()))
        if remainder >= usage.output:
            self._pending[call_id] = (replace(usage, output=remainder), model)
        return []

    def _on_control_request(self, obj: dict[str, Any]) -> list[Event]:
        req = untrusted.obj(obj.get("request"))
        if req.get("subtype") == "hook_callback" and req.get("callback_id") == GATE_CALLBACK:
            # The tool waits for the answer; the call that asked for it may still be streaming (Claude Code
            # 2.1.332 runs this hook at the tool block's end, before the call's message_delta).
            return [ToolGate(label(obj.get("request_id")), call_open=bool(self._pending))]
        if req.get("subtype") == "can_use_tool":
            return [
                PermissionRequest(label(obj.get("request_id")), label(req.get("tool_name"), "?"), untrusted.obj(req.get("input")))
            ]
        return [Unknown(f"control_request/{kind_name(req.get('subtype'))}")]
