"""Claude Code 2.1.332's ``"type": "http"`` hooks on the real TUI: what they do, and why agentlaunch left them.

A native launch served its Claude hooks as http hooks from issue 26 to issue 41; it uses command hooks on its private
sockets now (``hook_held``, ``hook_ask``), because a failed http hook lets the tool run (pinned below: a 500, a
non-JSON body, a closed connection, a late answer) and any local user can make a 127.0.0.1 server's hooks fail.

Claude Code POSTs a hook's input JSON to the hook's ``url`` and reads the response body as a command hook's stdout.
This pins, against the pinned binary and the fake API (notes/claude-findings.md, "HTTP hooks"):

- which of the events agentlaunch hooks go out as HTTP (all but ``SessionStart``, which Claude Code skips for
  HTTP hooks: it stays a command hook);
- the request: ``POST`` to the url as written, ``Content-Type: application/json``, the hook's own headers (a value
  ``$VAR`` read from Claude Code's environment when ``allowedEnvVars`` names it), the same JSON a command hook
  reads on stdin;
- the answers: an empty 200 lets the tool run; a held answer holds the tool (nothing of it runs, no permission
  dialog opens) until it comes; ``tool_refusal``'s JSON refuses the tool and ends the turn with no further call;
  a 500, a body that is not JSON, and a connection closed without an answer let the tool run and print
  "hook failed" on the person's screen; an answer later than the hook's ``timeout`` lets the tool run, silently.
"""

from __future__ import annotations

import json
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.fakeapi.anthropic import ApiUsage, FakeAnthropic, text_reply, tool_reply
from agentlaunch.providers.claude_hooks import tool_refusal
from agentlaunch.providers.native.claude_settings import HOOK_EVENTS
from testbed.claude_tui import quit_with_ctrl_c, seed_home, tui_env
from testbed.pty_screen import Screen, spawn

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

KEY_VAR = "AGENTLAUNCH_HOOK_PROBE"
HOOK_TIMEOUT = 5
"""The PreToolUse hook's ``timeout`` (seconds); the server answers every other request at once."""


class HookLog:
    """What the hook server saw and did, in one order: ("request", event, record) and ("answered", event, file)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entries: list[tuple[str, str, Any]] = []
        self.release = threading.Event()  # the held PreToolUse answer goes once this is set
        self.released_timeout = threading.Event()

    def add(self, kind: str, event: str, value: Any) -> None:
        with self.lock:
            self.entries.append((kind, event, value))

    def requests(self, event: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            return [v for k, e, v in self.entries if k == "request" and (event is None or e == event)]

    def events(self) -> list[str]:
        with self.lock:
            return [e for k, e, _ in self.entries if k == "request"]

    def index(self, kind: str, event: str, file: str) -> int:
        with self.lock:
            for i, (k, e, v) in enumerate(self.entries):
                if k == kind and e == event and (v["file"] if k == "request" else v) == file:
                    return i
        raise AssertionError(f"no {kind} {event} for {file} in {self.entries}")


def handler(log: HookLog) -> type[BaseHTTPRequestHandler]:
    class Hook(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            event = self.path.strip("/")
            payload = json.loads(body)
            file = Path(str(payload.get("tool_input", {}).get("file_path", ""))).name
            log.add(
                "request",
                event,
                {
                    "method": self.command,
                    "path": self.path,
                    "headers": dict(self.headers.items()),
                    "payload": payload,
                    "file": file,
                },
            )
            answer = b""
            if event == "PreToolUse":
                if file == "held.txt":
                    log.release.wait(60)
                elif file == "late.txt":
                    log.released_timeout.wait(HOOK_TIMEOUT + 30)
                elif file == "closed.txt":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                elif file == "failed.txt":
                    self.send_error(500, "scripted failure")
                    return
                elif file == "garbage.txt":
                    answer = b"not json"
                elif file == "refused.txt":
                    answer = json.dumps(tool_refusal("budget spent: no more calls")).encode()
            try:
                self.send_response(200)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)
            except OSError:  # late.txt's: Claude Code stopped waiting at the timeout and closed the connection
                log.add("gone", event, file)
                return
            log.add("answered", event, file)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Hook


@pytest.fixture
def hook_server() -> Iterator[tuple[HookLog, int]]:
    log = HookLog()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(log))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield log, server.server_address[1]
    finally:
        log.release.set()
        log.released_timeout.set()
        server.shutdown()
        server.server_close()


FILES = ("held.txt", "failed.txt", "garbage.txt", "closed.txt", "late.txt", "refused.txt")


def test_http_hooks_carry_every_event_but_session_start_and_hold_the_tool_until_answered(
    claude_bin: Path, hook_server: tuple[HookLog, int]
) -> None:
    log, port = hook_server
    with tempfile.TemporaryDirectory(prefix="alhh-") as folder:
        root = Path(folder)
        home, work = root / "home", root / "work"
        home.mkdir()
        work.mkdir()
        seed_home(home, [work])
        started = root / "session-start.json"

        def http(event: str) -> dict[str, Any]:
            hook: dict[str, Any] = {
                "type": "http",
                "url": f"http://127.0.0.1:{port}/{event}",
                "headers": {"X-Hook-Key": f"${KEY_VAR}"},
                "allowedEnvVars": [KEY_VAR],
            }
            if event == "PreToolUse":
                hook["timeout"] = HOOK_TIMEOUT
            return hook

        hooks: dict[str, list[dict[str, Any]]] = {e: [{"hooks": [http(e)]}] for e in HOOK_EVENTS}
        hooks["SessionStart"].append({"hooks": [{"type": "command", "command": f"cat > {started}"}]})
        calls = [
            tool_reply("Write", {"file_path": name, "content": "x\n"}, ApiUsage(10, 100, 1000, 5), text=f"Step {name}.")
            for name in FILES
        ]
        api = FakeAnthropic([*calls, text_reply("Never sent.")], default=text_reply("Side.", ApiUsage(1, 0, 0, 1)))
        with api.serve() as server:
            argv = [
                str(claude_bin),
                "--session-id",
                str(uuid.uuid4()),
                "--model",
                "claude-sonnet-4-5",
                "--settings",
                json.dumps({"hooks": hooks}),
                "write the files",
            ]
            s = spawn(argv, tui_env(server.url, home, {KEY_VAR: "per-launch-key"}), work, lines=100)
            try:
                run_session(s, log, work)
                quit_with_ctrl_c(s)
            finally:
                if s.child.isalive():
                    s.child.terminate(force=True)
            main_calls = [r for r in api.message_requests() if "write the files" in json.dumps(r.body)]
        session_start = json.loads(started.read_text())
        written = {name: (work / name).read_text() for name in FILES if (work / name).exists()}
    events = log.events()
    # SessionStart never goes out as HTTP (Claude Code skips HTTP hooks there); its command hook ran.
    assert "SessionStart" not in events
    assert session_start["hook_event_name"] == "SessionStart"
    # Every other event this session reached went out as HTTP, the same JSON a command hook reads.
    assert {"UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolBatch", "SessionEnd"} <= set(events)
    for record in log.requests():
        assert record["method"] == "POST" and record["path"] == "/" + record["payload"]["hook_event_name"]
        assert record["headers"]["Content-Type"] == "application/json"
        assert record["headers"]["X-Hook-Key"] == "per-launch-key"  # read from Claude Code's environment
    # The held answer held the tool: its permission dialog (and so the write) came only after the answer.
    assert log.index("answered", "PreToolUse", "held.txt") < log.index("request", "PermissionRequest", "held.txt")
    # A 500, a body that is not JSON, a connection closed early and an answer past the timeout: the tool ran.
    # The refusal (deny + continue false): no write, no further model call, no Stop hook for the turn.
    assert written == {name: "x\n" for name in FILES[:-1]}
    assert len(main_calls) == len(FILES)
    assert "Stop" not in events


def run_session(s: Screen, log: HookLog, work: Path) -> None:
    """Answer each write's permission dialog; check what the hook server's answers show on the screen."""
    s.until(lambda: any(r["file"] == "held.txt" for r in log.requests("PreToolUse")), 90, "the held PreToolUse")
    s.pump(1.0)
    assert not log.requests("PermissionRequest") and "Do you want to create" not in s.text()
    log.release.set()
    for name in FILES[:-1]:
        file = work / name
        s.wait_for(shows(f"create {name}"), 90, f"the permission dialog for {name}")
        end, sent = time.monotonic() + 60, 0.0
        while not file.exists() and time.monotonic() < end:
            # The dialog ignores keys in its first moments (CI run 45): "1" again, a second apart, while it shows.
            if f"create {name}" in s.text() and time.monotonic() - sent > 1.0:
                s.child.send("1")
                sent = time.monotonic()
            s.pump(0.2)
        s.until(file.exists, 5, f"{name} written")
    s.wait_for(lambda t: "budget spent: no more calls" in t, 90, "the refusal")
    log.released_timeout.set()
    shown = tool_blocks(s.text())
    # What the person sees under each tool: a failed hook says so and why; the timed-out one says nothing.
    assert "hook failed" not in shown["held.txt"]
    assert "PreToolUse:Write hook failed" in shown["failed.txt"] and "HTTP 500 from" in shown["failed.txt"]
    assert "HTTP hook must return JSON, but got non-JSON response body: not json" in shown["garbage.txt"]
    assert "PreToolUse:Write hook failed" in shown["closed.txt"] and "socket hang up" in shown["closed.txt"]
    assert "hook failed" not in shown["late.txt"] and "Wrote 1 line" in shown["late.txt"]
    assert "PreToolUse:Write hook stopped Claude" in shown["refused.txt"]


def shows(text: str) -> Callable[[str], bool]:
    return lambda screen: text in screen


def tool_blocks(screen: str) -> dict[str, str]:
    """The lines under each ``Write(NAME)`` on the screen, by NAME (up to the next message)."""
    blocks: dict[str, str] = {}
    name = None
    for line in screen.splitlines():
        if line.startswith("● Write(") and line.endswith(")"):
            name = line[len("● Write(") : -1]
            blocks[name] = ""
        elif line.startswith("●") or line.startswith("✻"):
            name = None
        elif name is not None:
            blocks[name] += line + "\n"
    return blocks
