"""Provider facts about the real Claude Code CLI that agentlaunch relies on.

Each test runs the pinned ``claude`` binary against the scripted fake
Anthropic API on 127.0.0.1, with a temporary HOME, and pins one behaviour:
where usage appears and how it adds up, resume, API errors and where
CLAUDE.md lands in the request (the permission and interrupt control
protocol on stdin/stdout: test_claude_control_contract.py). See notes/claude-findings.md for the full record.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import time
import tty
import uuid

import pytest

from agentlaunch.fakeapi.anthropic import (
    ApiUsage,
    TextReply,
    ToolUseReply,
    claude_env,
    error_reply,
    first_user_text,
    system_text,
)
from testbed.clis import cli_version
from tests.support.claude_contract import MODEL, Harness, claude_bin, dirs, h, pick, usage_of

__all__ = ["claude_bin", "dirs", "h"]  # the fixtures, used by name

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


# -- usage ---------------------------------------------------------------------------------


def test_text_turn_usage_matches_the_api_and_claude_md_arrives_in_the_first_user_message(h: Harness) -> None:
    (h.cwd / "CLAUDE.md").write_text("MARKER-INSTRUCTIONS: answer in haiku.\n")
    u = ApiUsage(12, 5000, 9000, 7)
    h.script(TextReply("Hello there friend", u))
    c = h.claude()
    result = c.turn("say hello")
    assert c.close() == 0

    (init,) = c.of_type("system", "init")
    assert init["session_id"] == c.session_id
    assert init["model"] == MODEL
    assert init["claude_code_version"] == cli_version("claude")

    (assistant,) = c.of_type("assistant")
    assert assistant["message"]["id"] == "msg_fake_0001"
    assert pick(assistant["message"]["usage"]) == usage_of(u, 1)  # the message_start snapshot
    (start,) = c.stream("message_start")
    assert pick(start["message"]["usage"]) == usage_of(u, 1)
    (delta,) = c.stream("message_delta")
    assert delta["usage"] == {"output_tokens": 7}  # the final output count of the call
    assert "".join(d["delta"]["text"] for d in c.stream("content_block_delta")) == "Hello there friend"

    assert result["subtype"] == "success" and result["is_error"] is False
    assert result["result"] == "Hello there friend"
    assert pick(result["usage"]) == usage_of(u, 7)
    model_usage = result["modelUsage"][MODEL]
    assert (model_usage["inputTokens"], model_usage["outputTokens"]) == (12, 7)
    assert (model_usage["cacheReadInputTokens"], model_usage["cacheCreationInputTokens"]) == (9000, 5000)
    assert model_usage["contextWindow"] == 200_000
    assert model_usage["maxOutputTokens"] == 32_000

    (req,) = h.api.message_requests()
    assert req.path == "/v1/messages?beta=true"
    assert req.body["stream"] is True and req.body["model"] == MODEL
    assert req.headers["x-claude-code-session-id"] == c.session_id

    # CLAUDE.md: in the first user message, not the system prompt; the user's text is that message's last block.
    first = first_user_text(req.body)
    assert f"Contents of {h.cwd}/CLAUDE.md (project instructions" in first
    assert "MARKER-INSTRUCTIONS: answer in haiku." in first
    assert "MARKER-INSTRUCTIONS" not in system_text(req.body)
    assert req.body["messages"][0]["content"][-1]["text"] == "say hello"


def test_tool_turn_repeats_assistant_per_block_and_result_sums_the_calls(h: Harness) -> None:
    u1, u2 = ApiUsage(20, 3000, 10000, 30), ApiUsage(8, 150, 13000, 9)
    h.script(
        ToolUseReply("Bash", {"command": "echo hi", "description": "Print hi"}, u1, text="Running it."),
        TextReply("It printed hi.", u2),
    )
    c = h.claude()
    result = c.turn("run echo hi")
    assert c.close() == 0
    assert len(h.api.message_requests()) == 2

    assistants = c.of_type("assistant")
    assert [a["message"]["id"] for a in assistants] == ["msg_fake_0001", "msg_fake_0001", "msg_fake_0002"]
    assert [[b["type"] for b in a["message"]["content"]] for a in assistants] == [["text"], ["tool_use"], ["text"]]
    # one assistant line per content block, each repeating the call's message_start usage
    assert pick(assistants[0]["message"]["usage"]) == pick(assistants[1]["message"]["usage"]) == usage_of(u1, 1)
    assert pick(assistants[2]["message"]["usage"]) == usage_of(u2, 1)
    assert [d["usage"]["output_tokens"] for d in c.stream("message_delta")] == [30, 9]

    (tool_result,) = c.of_type("user")
    block = tool_result["message"]["content"][0]
    assert block["type"] == "tool_result" and block["tool_use_id"] == "toolu_fake_0001" and block["content"] == "hi"
    assert not c.of_type("control_request")  # echo needs no permission

    assert pick(result["usage"]) == {
        "input_tokens": 28,
        "cache_creation_input_tokens": 3150,
        "cache_read_input_tokens": 23000,
        "output_tokens": 39,
    }
    assert result["num_turns"] == 2


def test_two_turns_model_usage_is_cumulative_and_since_last_result_is_per_turn(h: Harness) -> None:
    h.script(TextReply("First answer", ApiUsage(12, 5000, 9000, 7)), TextReply("Second answer", ApiUsage(10, 300, 14000, 5)))
    c = h.claude()
    first = c.turn("first question")
    second = c.turn("second question")
    assert c.close() == 0

    assert len(c.of_type("system", "init")) == 2  # one init per turn
    assert pick(second["usage"]) == usage_of(ApiUsage(10, 300, 14000, 5), 5)  # per turn
    total = second["modelUsage"][MODEL]
    assert (total["inputTokens"], total["outputTokens"], total["cacheReadInputTokens"]) == (22, 12, 23000)
    since = second["model_usage_since_last_result"][MODEL]
    assert (since["inputTokens"], since["outputTokens"], since["cacheReadInputTokens"]) == (10, 5, 14000)
    assert second["total_cost_usd"] > first["total_cost_usd"]  # cumulative over the session
    assert second["total_cost_usd"] == pytest.approx(first["total_cost_usd"] + since["costUSD"])


def test_unknown_model_reports_a_million_token_window(h: Harness) -> None:
    h.script(TextReply("hi", ApiUsage(3, 0, 0, 2)))
    c = h.claude(model="claude-unknown-9-9")
    result = c.turn("hello")
    assert c.close() == 0
    model_usage = result["modelUsage"]["claude-unknown-9-9"]
    assert model_usage["contextWindow"] == 1_000_000
    assert model_usage["costBasis"] == "unknown"


# -- instructions --------------------------------------------------------------------------


# -- permissions ---------------------------------------------------------------------------


# -- interrupt -----------------------------------------------------------------------------


# -- resume --------------------------------------------------------------------------------


def test_resume_continues_the_conversation_and_a_session_id_in_use_fails(h: Harness) -> None:
    h.script(TextReply("First answer", ApiUsage(12, 5000, 9000, 7)), TextReply("Resumed answer", ApiUsage(10, 300, 14000, 5)))
    first = h.claude()
    r1 = first.turn("first question")
    assert first.close() == 0

    # --session-id of a session that exists: refused at start, nothing printed, no call.
    again = h.claude(session_id=first.session_id)
    assert again.close() == 1
    assert again.events == []
    assert f"Error: Session ID {first.session_id} is already in use." in again.stderr
    assert len(h.api.message_requests()) == 1

    second = h.claude(resume=first.session_id)
    r2 = second.turn("second question")
    assert second.close() == 0
    assert r2["session_id"] == first.session_id
    assert second.of_type("system", "init")[0]["session_id"] == first.session_id

    body = h.api.message_requests()[1].body
    texts = json.dumps(body["messages"])
    assert "first question" in texts and "First answer" in texts and "second question" in texts
    assert [m["role"] for m in body["messages"] if m["role"] != "system"] == ["user", "assistant", "user"]
    # modelUsage and the cost continue from the saved session
    assert r2["modelUsage"][MODEL]["inputTokens"] == 22
    assert r2["total_cost_usd"] > r1["total_cost_usd"]


def test_resume_unknown_session_fails(h: Harness) -> None:
    unknown = str(uuid.uuid4())
    c = h.claude(resume=unknown)
    result = c.result()  # printed at start-up, without waiting for stdin
    assert c.close() == 1
    assert result["subtype"] == "error_during_execution" and result["is_error"] is True
    assert result["errors"] == [f"No conversation found with session ID: {unknown}"]
    assert f"No conversation found with session ID: {unknown}" in c.stderr
    assert h.api.message_requests() == []


# -- errors --------------------------------------------------------------------------------


def test_api_error_is_a_result_with_is_error_and_exit_1(h: Harness) -> None:
    h.script(error_reply(500, "scripted 500"), error_reply(500, "scripted 500"))
    c = h.claude(env={"CLAUDE_CODE_MAX_RETRIES": "1"})
    result = c.turn("hello")
    retries = c.of_type("system", "api_retry")
    assert [(r["attempt"], r["max_retries"], r["error_status"]) for r in retries] == [(1, 1, 500)]
    assert result["subtype"] == "success"  # sic
    assert result["is_error"] is True
    assert result["api_error_status"] == 500
    assert result["terminal_reason"] == "api_error"
    assert result["result"].startswith("API Error: 500 scripted 500")
    assert c.proc.poll() is None  # the process stays alive for another turn
    assert c.close() == 1  # the exit code reflects the last turn


def test_a_successful_turn_after_an_error_exits_0(h: Harness) -> None:
    h.script(error_reply(529, "overloaded"), TextReply("fine", ApiUsage(3, 0, 0, 2)))
    c = h.claude(env={"CLAUDE_CODE_MAX_RETRIES": "0"})
    assert c.turn("hello")["api_error_status"] == 529
    assert c.turn("again")["is_error"] is False
    assert c.close() == 0


# -- terminal ------------------------------------------------------------------------------


def test_pty_stdout_gets_a_show_cursor_sequence_at_exit(h: Harness) -> None:
    h.script(TextReply("Hello there", ApiUsage(12, 5000, 9000, 7)))
    master, slave = pty.openpty()
    tty.setraw(slave)
    args = [str(h.binary), "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
    args += ["--session-id", str(uuid.uuid4()), "--model", MODEL]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env.update(claude_env(h.server.url, h.home))
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=slave, stderr=slave, cwd=h.cwd, env=env)
    os.close(slave)
    buf = b""
    try:
        assert proc.stdin is not None
        proc.stdin.write(b'{"type":"user","message":{"role":"user","content":"hi"}}\n')
        proc.stdin.flush()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the slave side closed
                    break
                if not data:
                    break
                buf += data
                if b'"type":"result"' in buf and not proc.stdin.closed:
                    proc.stdin.close()
            elif proc.poll() is not None:
                break
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        os.close(master)
    assert b"\r\n" not in buf  # raw mode: no line-discipline translation
    lines = buf.split(b"\n")
    assert lines[-1] == b"\x1b[?25h"  # show-cursor, after the last JSON line, with no newline
    assert [json.loads(line)["type"] for line in lines[:-1]][-1] == "result"
