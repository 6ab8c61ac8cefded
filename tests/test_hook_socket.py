"""The hook socket: what the CLI's hooks report reaches the launch, and nothing a hook sends can hurt it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlaunch.providers.native.hook_report import MAX_DATAGRAM, report
from agentlaunch.providers.native.hook_socket import HookReport, HookSocket, hook_argv, hook_command, parse_report


@pytest.fixture
def hooks() -> Iterator[HookSocket]:
    with tempfile.TemporaryDirectory(prefix="al-") as folder:
        sock = HookSocket(Path(folder) / "hooks.sock")
        yield sock
        sock.close()


def test_a_hook_command_reports_its_stdin(hooks: HookSocket) -> None:
    command = hook_command(sys.executable, hooks.path, "PreToolUse")
    payload = {"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash", "odd": 'it\'s "quoted"'}
    done = subprocess.run(command, shell=True, input=json.dumps(payload), capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert hooks.receive() == [HookReport("PreToolUse", payload)]
    assert hooks.receive() == []


def test_the_json_can_come_as_the_last_argument(hooks: HookSocket) -> None:
    argv = [*hook_argv(sys.executable, hooks.path, "notify"), json.dumps({"type": "agent-turn-complete"})]
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    assert done.returncode == 0 and done.stdout == b""
    assert hooks.receive() == [HookReport("notify", {"type": "agent-turn-complete"})]


def test_the_reporter_never_fails_or_blocks_the_cli(tmp_path: Path) -> None:
    # No socket at that path (the launch is gone), a path that is a plain file, and stdin that is not JSON.
    plain = tmp_path / "file"
    plain.write_text("x")
    for target in (tmp_path / "missing.sock", plain):
        command = hook_command(sys.executable, target, "Stop")
        done = subprocess.run(command, shell=True, input="not json", capture_output=True, text=True, timeout=30, check=False)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_a_large_payload_keeps_its_short_fields(hooks: HookSocket) -> None:
    payload = {"session_id": "s1", "tool_input": {"content": "x" * 500_000}, "transcript_path": "/t.jsonl"}
    data = report("PostToolUse", json.dumps(payload))
    assert len(data) <= MAX_DATAGRAM
    parsed = parse_report(data)
    assert parsed == HookReport("PostToolUse", {"session_id": "s1", "transcript_path": "/t.jsonl"}, truncated=True)


def test_reports_that_are_not_reports_are_dropped(hooks: HookSocket) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
        for junk in (b"", b"\xff\xfe", b"[1]", b'{"event": 3}', b"{" * 5000, b'{"event": "Stop", "payload": [1]}'):
            sender.sendto(junk, str(hooks.path))
    assert hooks.receive() == [HookReport("Stop", {})]


def test_a_flood_is_taken_in_bounded_batches(hooks: HookSocket) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
        sender.setblocking(False)
        sent = 0
        try:
            for _ in range(1_500):
                sender.sendto(b'{"event": "Stop"}', str(hooks.path))
                sent += 1
        except BlockingIOError:
            pass
    first = hooks.receive()
    assert len(first) == min(sent, 1_000)
    assert len(first) + len(hooks.receive()) == sent


def test_the_socket_is_private_and_removed_on_close() -> None:
    with tempfile.TemporaryDirectory(prefix="al-") as folder:
        sock = HookSocket(Path(folder) / "h.sock")
        assert os.stat(sock.path).st_mode & 0o777 == 0o600
        sock.close()
        assert not sock.path.exists()


def test_a_path_too_long_for_a_socket_is_refused_clearly(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="socket path too long"):
        HookSocket(tmp_path / ("d" * 120) / "hooks.sock")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_any_datagram_parses_or_is_dropped(data: bytes) -> None:
    result = parse_report(data)
    assert result is None or isinstance(result.event, str) and isinstance(result.payload, dict)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_hook_input_makes_a_report(raw: str) -> None:
    parsed = parse_report(report("E", raw))
    assert parsed is not None and parsed.event == "E"


def test_the_reporter_forwards_the_bytes_without_json(hooks: HookSocket) -> None:
    # Run on every tool call: the payload is forwarded unparsed after a header line, and json is not imported: the
    # launch parses it.
    payload = {"session_id": "s1", "tool_input": {"content": "é\u2028x" * 50}, "n": [1, 2.5, None, True]}
    command = [sys.executable, "-I", "-S", "-X", "importtime", *hook_argv(sys.executable, hooks.path, "PostToolUse")[3:]]
    done = subprocess.run(command, input=json.dumps(payload, ensure_ascii=False).encode(), capture_output=True, check=True)
    modules = {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines() if line.startswith("import time:")}
    assert done.stdout == b"" and "socket" in modules and "json" not in modules
    assert hooks.receive() == [HookReport("PostToolUse", payload)]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b'{"event": "Stop"}\nnot json', HookReport("Stop", {})),
        (b'{"event": "Stop"}\n', HookReport("Stop", {})),
        (b'{"event": "Stop"}\n[1]', HookReport("Stop", {})),
        (b'{"event": "Stop"}\n\xff{"a": 1}', HookReport("Stop", {})),
        (b'{"event": "Stop"}\n' + b"[" * 5000, HookReport("Stop", {})),
        (b'{"event": 3}\n{}', None),
        (b"x\n{}", None),
        (b'{"event": "A", "reply": "/r/gate-1.sock"}\n{"a": "\xc3\xa9"}', HookReport("A", {"a": "é"})),
    ],
)
def test_a_header_and_the_clis_bytes_are_parsed_by_the_launch(data: bytes, expected: HookReport | None) -> None:
    assert parse_report(data) == expected


@pytest.mark.parametrize("event", ["PreToolUse", 'odd "name"', "back\\slash", "ünï", "tab\there"])
def test_any_event_name_makes_a_header_the_launch_reads(event: str) -> None:
    assert parse_report(report(event, '{"k": 1}')) == HookReport(event, {"k": 1})
    assert parse_report(report(event, b"")) == HookReport(event, {})
