"""A native Claude launch's http hooks: the settings name the launch's server, and its source reads and answers them."""

from __future__ import annotations

import json
import select
import socket
from pathlib import Path

from agentlaunch import datarecord as records
from agentlaunch.providers.claude_hooks import tool_refusal
from agentlaunch.providers.native.claude import native_extras
from agentlaunch.providers.native.claude_settings import HOOK_EVENTS, transcript_path
from agentlaunch.providers.native.claude_source import ClaudeNativeSource
from agentlaunch.providers.native.hook_http import KEY_VAR
from agentlaunch.providers.native.source import NativeItem, PromptTyped, ToolAsked
from agentlaunch.sinks import StateChanged
from tests.support.claude_native_replay import SESSION, context, root  # noqa: F401 (root: the fixture)
from tests.test_hook_http import answer_of


def post(url: str, key: str, payload: object) -> socket.socket:
    """Send an http hook's request as Claude Code does; the connection, for its answer."""
    host, _, rest = url.removeprefix("http://").partition("/")
    body = json.dumps(payload).encode()
    client = socket.create_connection((host.split(":")[0], int(host.split(":")[1])), timeout=10)
    head = f"POST /{rest} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    head += f"X-Agentlaunch-Key: {key}\r\n\r\n"
    client.sendall(head.encode() + body)
    return client


def read_until(source: ClaudeNativeSource, found: type, rounds: int = 50) -> list[NativeItem]:
    items: list[NativeItem] = []
    for _ in range(rounds):
        select.select([source.fileno()], [], [], 0.1)
        items += source.read()
        if any(isinstance(i, found) for i in items):
            break
    return items


def test_every_hook_but_session_start_is_an_http_hook_to_the_launchs_server_with_its_key(root: Path) -> None:  # noqa: F811
    extras = native_extras(context(root))
    (source,) = extras.sources
    assert isinstance(source, ClaudeNativeSource) and source.server is not None
    try:
        key = extras.env[KEY_VAR]
        hooks = json.loads(extras.argv[1])["hooks"]
        assert set(hooks) == set(HOOK_EVENTS) and key not in " ".join(extras.argv)  # the key is in no argv
        for event, groups in hooks.items():
            (hook,) = groups[0]["hooks"]
            if event == "SessionStart":
                assert hook["type"] == "command" and "hook_report.py" in hook["command"]
                continue
            asks = event == "PermissionRequest"  # held for agentlaunch answer (claude_question): a day at most
            assert hook == {
                "type": "http",
                "url": f"http://127.0.0.1:{source.server.port}/{'gate/' if asks else ''}{event}",
                "timeout": 24 * 3600 if asks else 5,
                "headers": {"x-agentlaunch-key": f"${KEY_VAR}"},
                "allowedEnvVars": [KEY_VAR],
            }
        assert extras.listener == (source.server.port, key)
    finally:
        source.close()


def test_a_report_reaches_the_source_and_one_without_the_key_does_not(root: Path) -> None:  # noqa: F811
    extras = native_extras(context(root))
    (source,) = extras.sources
    assert isinstance(source, ClaudeNativeSource) and source.server is not None
    try:
        url = source.server.url("UserPromptSubmit")
        with post(url, "not the key", {"session_id": SESSION, "prompt": "injected"}) as stranger:
            items = read_until(source, PromptTyped, rounds=5)
            assert stranger.recv(100).startswith(b"HTTP/1.1 403 ")
        with post(url, extras.env[KEY_VAR], {"session_id": SESSION, "prompt": "hello"}) as client:
            items += read_until(source, PromptTyped)
            assert answer_of(client).partition(b"\r\n\r\n")[2] == b""
        assert [i.text for i in items if isinstance(i, PromptTyped)] == ["hello"]
        assert [i.state for i in items if isinstance(i, StateChanged)] == ["thinking"]
    finally:
        source.close()


def test_a_gated_tool_is_held_until_its_call_is_read_and_refused_with_the_reason(root: Path) -> None:  # noqa: F811
    ctx = records.replace(context(root), gated=True)
    extras = native_extras(ctx)
    (source,) = extras.sources
    assert isinstance(source, ClaudeNativeSource) and source.server is not None
    hook = json.loads(extras.argv[1])["hooks"]["PreToolUse"][0]["hooks"][0]
    assert hook["url"].endswith("/gate/PreToolUse") and hook["timeout"] == 30
    path = transcript_path(ctx.env, ctx.working_dir, SESSION)
    path.parent.mkdir(parents=True)
    path.write_text("")
    try:
        payload = {"session_id": SESSION, "tool_name": "Write", "tool_use_id": "toolu_1", "transcript_path": str(path)}
        with post(hook["url"], extras.env[KEY_VAR], payload) as client:
            assert not any(isinstance(i, ToolAsked) for i in read_until(source, ToolAsked, rounds=3))
            client.settimeout(0.2)
            assert not select.select([client], [], [], 0.2)[0]  # held: the tool waits
            usage = {"input_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 3}
            line = {
                "type": "assistant",
                "timestamp": "2099-01-01T00:00:00.000Z",
                "message": {
                    "id": "msg_1",
                    "model": "claude-sonnet-4-5",
                    "stop_reason": "tool_use",
                    "usage": usage,
                    "content": [{"type": "tool_use", "id": "toolu_1", "name": "Write", "input": {}}],
                },
            }
            with path.open("a") as f:
                f.write(json.dumps(line) + "\n")
            (asked,) = [i for i in read_until(source, ToolAsked) if isinstance(i, ToolAsked)]
            asked.answer(False, "budget spent")
            client.settimeout(10)
            assert json.loads(answer_of(client).partition(b"\r\n\r\n")[2]) == tool_refusal("budget spent")
    finally:
        source.close()
