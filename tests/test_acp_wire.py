"""``agentlaunch acp`` on raw JSON-RPC lines: what it answers to input no SDK client would send, and the client
closing its stdin mid-turn (the turn ends, its calls stored, no process left)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from agentlaunch import paths
from agentlaunch.cli.acp_wire import MAX_MESSAGE
from agentlaunch.usage.store import Store
from tests.test_acp_turns import SLOW, processes_in


class Raw:
    """The server as a process, spoken to in lines."""

    def __init__(self, agents_dir: Path, agent: str = "demo") -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentlaunch", "acp", agent, "--agents-dir", str(agents_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._buffer = b""

    def send(self, message: dict[str, Any] | bytes) -> None:
        assert self.proc.stdin is not None
        data = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def request(self, rid: int, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})

    def read(self, timeout: float = 30) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            assert left > 0, "no answer in time"
            if select.select([fd], [], [], left)[0]:
                chunk = os.read(fd, 1 << 16)
                assert chunk, "the server ended"
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        message: dict[str, Any] = json.loads(line)
        return message

    def answer(self, rid: int, timeout: float = 30) -> dict[str, Any]:
        """The response to ``rid`` (notifications before it skipped)."""
        while True:
            message = self.read(timeout)
            if message.get("id") == rid and "method" not in message:
                return message

    def close(self) -> int:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        code = self.proc.wait(30)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        return code


def started(agents_dir: Path, workdir: Path) -> tuple[Raw, str]:
    raw = Raw(agents_dir)
    raw.request(1, "initialize", {"protocolVersion": 1})
    assert raw.answer(1)["result"]["agentCapabilities"]["loadSession"] is True
    raw.request(2, "session/new", {"cwd": str(workdir), "mcpServers": []})
    return raw, raw.answer(2)["result"]["sessionId"]


def test_bad_lines_are_answered_and_the_server_goes_on(agents_dir: Path, workdir: Path) -> None:
    raw, sid = started(agents_dir, workdir)
    raw.send(b"{not json\n")
    assert raw.read()["error"]["code"] == -32700
    raw.send(b"[1, 2]\n")
    assert raw.read() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Invalid Request: not a JSON-RPC 2.0 object"},
    }
    raw.send(b'{"id": 3, "method": "session/list"}\n')  # no "jsonrpc": "2.0"
    assert raw.read()["error"]["code"] == -32600
    raw.send(b"x" * (MAX_MESSAGE + 10) + b"\n")  # over the bound: read to its end and refused
    over = raw.read()
    assert over["error"]["code"] == -32600 and str(MAX_MESSAGE) in over["error"]["message"]
    raw.request(4, "session/frobnicate", {})
    assert raw.answer(4)["error"]["code"] == -32601
    raw.request(5, "session/prompt", {"sessionId": sid, "prompt": "not a list"})
    assert raw.answer(5)["error"]["code"] == -32602
    raw.request(6, "session/new", {"cwd": "relative/path", "mcpServers": []})
    assert "absolute" in json.dumps(raw.answer(6)["error"])
    raw.request(7, "session/prompt", {"sessionId": "no-such", "prompt": [{"type": "text", "text": "hi"}]})
    assert raw.answer(7)["error"]["code"] == -32602
    raw.request(8, "session/prompt", {"sessionId": sid, "prompt": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]})
    assert "text" in json.dumps(raw.answer(8)["error"])
    raw.request(9, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "still here"}]})
    assert raw.answer(9, timeout=60)["result"] == {"stopReason": "end_turn"}
    raw.request(10, "authenticate", {"methodId": "none"})  # initialize offers no method; asked anyway, it is a yes
    assert "result" in raw.answer(10)
    raw.request(11, "session/close", {"sessionId": sid})
    assert "result" in raw.answer(11)
    raw.request(12, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "closed?"}]})
    assert "no such session" in json.dumps(raw.answer(12)["error"])
    assert raw.close() == 0


def test_the_client_closing_stdin_mid_turn_ends_the_turn_with_its_calls_stored(agents_dir: Path, workdir: Path) -> None:
    raw, sid = started(agents_dir, workdir)
    raw.request(3, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": SLOW}]})
    seen: list[str] = []
    while "tool_call_update" not in seen:  # the turn is in its second call
        message = raw.read()
        if message.get("method") == "session/request_permission":
            raw.send({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": {"outcome": "selected", "optionId": "once"}}})
        seen.append(message.get("params", {}).get("update", {}).get("sessionUpdate", ""))
    assert processes_in(workdir)  # the fake CLI runs there
    assert len(processes_in(workdir.parent / "nowhere", f"run\0demo\0-\0--json\0--working-dir\0{workdir}")) == 1
    started_at = time.monotonic()
    assert raw.close() == 0
    assert time.monotonic() - started_at < 20
    assert not processes_in(workdir, f"--working-dir\0{workdir}")  # nothing left: the CLI and the turn's run ended
    with Store.open(paths.store_path()) as store:
        [row] = store.list_sessions("demo")
        _cost, calls = store.session_costs([row.session_id]).get(row.session_id, (None, 0))
    assert calls >= 1 and row.ended is not None


def test_a_session_of_another_agent_is_refused(agents_dir: Path, workdir: Path) -> None:
    raw, sid = started(agents_dir, workdir)
    raw.request(3, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]})
    assert raw.answer(3, timeout=60)["result"]["stopReason"] == "end_turn"
    raw.request(4, "session/list", {})
    [listed] = raw.answer(4)["result"]["sessions"]
    assert raw.close() == 0
    other = next(p.name for p in agents_dir.iterdir() if (p / "agent.yaml").is_file() and p.name != "demo")
    raw = Raw(agents_dir, other)
    raw.request(1, "initialize", {"protocolVersion": 1})
    raw.answer(1)
    for rid, method in ((2, "session/load"), (3, "session/resume")):
        raw.request(rid, method, {"sessionId": listed["sessionId"], "cwd": str(workdir), "mcpServers": []})
        error = raw.answer(rid)["error"]
        assert error["code"] == -32602
        assert f"is demo's, not {other}'s" in error["data"]["message"]
    raw.request(4, "session/load", {"sessionId": sid, "cwd": str(workdir), "mcpServers": []})  # the editor's own id
    assert "demo's" in raw.answer(4)["error"]["data"]["message"]
    assert raw.close() == 0


def test_an_unknown_agent_ends_at_once_with_the_definition_error(agents_dir: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentlaunch", "acp", "nobody", "--agents-dir", str(agents_dir)],
        input=b"",
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 3
    assert b"nobody" in done.stderr and done.stdout == b""
