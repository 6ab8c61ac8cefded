"""A hostile Claude Code stream-json turn: lines of every wrong shape around one valid model call.

Shared by the parser regression tests and the stand-in CLI (``hostile_claude.py``),
so the end-to-end test and the unit tests pin the same lines. Nothing in
:func:`noise` may be counted or printed on stdout; :func:`valid_call` is one
call without partial messages (its assistant line repeated, as Claude Code
repeats one per content block) whose billed output comes only in the result.
"""

from __future__ import annotations

import json

ANSWER = "The one valid answer."
MODEL = "claude-sonnet-4-5"
VALID_ID = "msg_valid_0001"
START_OUTPUT = 5  # the assistant line's count, at message start
BILLED_OUTPUT = 25  # the turn's result: what the call was billed
VALID_USAGE = {"input_tokens": 12, "cache_creation_input_tokens": 5000, "cache_read_input_tokens": 9000}
HOSTILE_MODEL = "\x1b]0;PWNED\x07\x1b[2J"
DEEP = "[" * 2000 + "]" * 2000  # 4 KB, 2,000 deep: json.loads raises RecursionError on it


def _start(call_id: str, usage: object) -> str:
    return json.dumps({"type": "stream_event", "event": {"type": "message_start", "message": {"id": call_id, "usage": usage}}})


def noise() -> list[str]:
    """Lines that must become diagnostics, warnings or nothing: never a count, never stdout text."""
    refused_usages = {
        "msg_bad_negative": {"input_tokens": -1000000},
        "msg_bad_huge": {"input_tokens": 10**30},
        "msg_bad_string": {"input_tokens": "abc"},
        "msg_bad_float": {"input_tokens": 1.5},
        "msg_bad_bool": {"input_tokens": True},
        "msg_bad_missing": {"output_tokens": 3},
        "msg_bad_list": {"input_tokens": 5, "cache_read_input_tokens": [1]},
        "msg_bad_object": "abc",
    }
    lines = [
        "\x1b[?25h",
        "Warning: something went sideways",
        "{not json",
        "[1, 2]",
        "{" + '"a":' * 3 + "",  # truncated
        '{"type": []}',
        '{"type": {"a": 1}}',
        '{"type": null}',
        '{"type": "assistant", "message": "abc"}',
        '{"type": "assistant", "message": {"content": "abc"}}',
        '{"type": "assistant", "message": {"id": [], "content": [1, "x", null, {"type": []}]}}',
        '{"type": "stream_event", "event": "abc"}',
        '{"type": "stream_event", "event": {"type": "content_block_delta", "delta": "abc"}}',
        '{"type": "stream_event", "event": {"type": "content_block_delta", "delta": {"type": "text_delta", "text": 5}}}',
        '{"type": "system", "subtype": "api_retry", "retry_delay_ms": "abc", "attempt": [], "max_retries": {}}',
        '{"type": "system", "subtype": ["init"]}',
        '{"type": "system", "subtype": "compact_boundary", "compact_metadata": "abc"}',
        '{"type": "user", "message": "abc"}',
        '{"type": "user", "message": {"content": [{"type": "tool_result", "content": {"a": [1, {"b": 2}]}, "tool_use_id": []}]}}',
        '{"type": "control_request", "request": "abc"}',
        '{"type": "rate_limit_event", "x": NaN}',
        _start("x", {}).replace("{}", '{"input_tokens": NaN}'),
        _start("y", {}).replace("{}", '{"input_tokens": Infinity}'),
        '{"type": "assistant", "message": ' + DEEP + "}",
        '{"x": ' + "{" * 2000 + "}" * 2000 + "}",
        '{"type": "' + "t" * 10_000 + '"}',
    ]
    for call_id, usage in refused_usages.items():
        lines.append(_start(call_id, usage))
        lines.append(json.dumps({"type": "stream_event", "event": {"type": "message_delta", "usage": {"output_tokens": 9}}}))
    # A message_delta whose count is not a count: the call it closes is refused whole, never half-counted.
    lines.append(_start("msg_bad_delta", {"input_tokens": 7}))
    lines.append(json.dumps({"type": "stream_event", "event": {"type": "message_delta", "usage": {"output_tokens": -3}}}))
    # A call whose assistant line is repeated, with a refused usage: one warning, and a hostile tool name shown escaped.
    tool_line = json.dumps(
        {
            "type": "assistant",
            "message": {
                "id": "msg_bad_tool",
                "model": HOSTILE_MODEL,
                "usage": {"input_tokens": -5},
                "content": [{"type": "tool_use", "id": "toolu_x", "name": HOSTILE_MODEL + "[/x]", "input": {"command": "[/y]"}}],
            },
        }
    )
    lines += [tool_line, tool_line]
    # A lone surrogate, which could not be written back out as UTF-8.
    lines.append(
        '{"type": "assistant", "message": {"id": "msg_bad_sur", "usage": {"input_tokens": -1}, "content": [{"type": "tool_use", "id": "t", "name": "\\ud800", "input": {}}]}}'  # noqa: E501
    )
    return lines


def valid_call(session_id: str = "sess") -> list[str]:
    """One call without partial messages: the assistant line twice (as per content block), then the turn's result."""
    assistant = json.dumps(
        {
            "type": "assistant",
            "message": {
                "id": VALID_ID,
                "model": MODEL,
                "role": "assistant",
                "content": [{"type": "text", "text": ANSWER}],
                "usage": {**VALID_USAGE, "output_tokens": START_OUTPUT},
            },
            "session_id": session_id,
        }
    )
    result = json.dumps(
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "num_turns": 1,
            "session_id": session_id,
            "result": ANSWER,
            "total_cost_usd": 0.02,
            "usage": {**VALID_USAGE, "output_tokens": BILLED_OUTPUT},
            "modelUsage": {MODEL: {"contextWindow": 200000}},
        }
    )
    return [assistant, assistant, result]


def init(session_id: str) -> str:
    """The turn's ``system/init`` line."""
    return json.dumps({"type": "system", "subtype": "init", "session_id": session_id, "model": MODEL, "cwd": "/tmp"})
