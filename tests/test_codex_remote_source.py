"""Native Codex through agentlaunch's app-server, without the CLI: which launches take the route, the socket's
path, and what the connection's messages (the shapes pinned on 0.171.0 in tests/e2e/) become as states and events.
The real CLI's side: tests/e2e/test_native_codex_remote.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agentlaunch.events import CallUsage, Compaction, SessionStarted, Text, TurnEnd, Warning
from agentlaunch.launch.native import native_remote
from agentlaunch.platform_support import SOCKET_PATH_MAX
from agentlaunch.providers.native.codex_remote import ASK_GRACE, RemoteSource
from agentlaunch.providers.native.source import PromptTyped
from agentlaunch.providers.native.unix_websocket import UnixWebSocket
from agentlaunch.sinks import StateChanged
from agentlaunch.token_usage import Usage

THREAD = "01a2354f-d196-7f11-ac18-cf42b18d33fe"


class FakeConn:
    def __init__(self) -> None:
        self.closed = False
        self.reason: str | None = None
        self.inbox: list[dict[str, Any]] = []
        self.sent: list[dict[str, Any]] = []

    def fileno(self) -> int:
        return 99

    def receive(self) -> list[dict[str, Any]]:
        out, self.inbox = self.inbox, []
        return out

    def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    def close(self) -> None:
        self.closed = True


def source() -> tuple[RemoteSource, FakeConn]:
    conn = FakeConn()
    return RemoteSource(conn, THREAD), conn  # type: ignore[arg-type]


def note(method: str, **params: Any) -> dict[str, Any]:
    return {"method": method, "params": {"threadId": THREAD, **params}}


def status(kind: str, *flags: str) -> dict[str, Any]:
    return note("thread/status/changed", status={"type": kind, **({"activeFlags": list(flags)} if kind == "active" else {})})


def states(items: list[Any]) -> list[tuple[str, str | None]]:
    return [(i.state, i.reason) for i in items if isinstance(i, StateChanged)]


def test_a_turn_with_an_approval_reads_as_thinking_asking_tool_thinking_waiting() -> None:
    src, conn = source()
    conn.inbox = [
        status("active"),
        note("turn/started", turn={"id": "t1"}),
        note("item/started", item={"type": "userMessage", "id": "u", "content": [{"type": "text", "text": "do it"}]}),
        status("active", "waitingOnApproval"),
        note("item/started", item={"type": "commandExecution", "id": "c1", "command": "touch x"}),
        {"id": 0, "method": "item/commandExecution/requestApproval", "params": {"threadId": THREAD, "command": "touch x"}},
    ]
    first = src.read()
    # The thread's status says asking first; the approval request that follows says what it asks (its command): one
    # asking, with its question (the tool item started between them is not the state while the approval waits).
    assert states(first) == [("thinking", None), ("asking", "shell: touch x")]
    assert PromptTyped("do it") in first
    conn.inbox = [
        {"method": "serverRequest/resolved", "params": {"threadId": THREAD, "requestId": 0}},
        status("active"),
        note("item/completed", item={"type": "commandExecution", "id": "c1", "exitCode": 0, "aggregatedOutput": ""}),
        note("item/completed", item={"type": "agentMessage", "id": "m", "text": "done"}),
        note(
            "thread/tokenUsage/updated",
            turnId="t1",
            tokenUsage={
                "last": {"inputTokens": 900, "cachedInputTokens": 800, "outputTokens": 7},
                "total": {"inputTokens": 900, "cachedInputTokens": 800, "outputTokens": 7},
                "modelContextWindow": 258400,
            },
        ),
        status("idle"),
        note("turn/completed", turn={"id": "t1", "status": "completed"}),
    ]
    second = src.read()
    assert states(second) == [("tool", None), ("thinking", None), ("waiting", None)]
    assert [e for e in second if isinstance(e, Text)] == [Text("done")]
    assert [e.usage for e in second if isinstance(e, CallUsage)] == [Usage(input=100, cache_read=800, output=7)]
    # The turn's end (its error, when it failed) comes before the waiting it brings, never after.
    kinds = [type(e) for e in second if isinstance(e, TurnEnd | StateChanged)]
    assert kinds[-2:] == [TurnEnd, StateChanged]


def test_a_context_compaction_item_is_a_compaction() -> None:
    src, conn = source()
    conn.inbox = [
        note("item/started", item={"type": "contextCompaction", "id": "k"}),
        note("item/completed", item={"type": "contextCompaction", "id": "k"}),
    ]
    assert src.read() == [Compaction()]


def test_another_threads_messages_and_server_requests_are_not_the_sessions() -> None:
    src, conn = source()
    other = {"method": "thread/status/changed", "params": {"threadId": "other", "status": {"type": "active"}}}
    conn.inbox = [other, {"id": 5, "method": "item/tool/requestUserInput", "params": {"threadId": THREAD}}]
    assert src.read() == []


def test_a_failed_turn_ends_with_its_error_then_waiting() -> None:
    src, conn = source()
    conn.inbox = [
        status("active"),
        note("turn/started", turn={"id": "t"}),
        status("idle"),
        note("turn/completed", turn={"id": "t", "status": "failed", "error": {"message": "boom"}}),
    ]
    items = src.read()
    assert [i for i in items if isinstance(i, TurnEnd)] == [TurnEnd(is_error=True, error="boom")]
    assert states(items) == [("thinking", None), ("waiting", None)]


def test_the_start_answers_are_read_first_and_a_resumed_thread_says_waiting() -> None:
    src, conn = source()
    src.backlog = [{"id": 2, "result": {"thread": {"id": THREAD, "cwd": "/w", "cliVersion": "0.171.0"}, "model": "gpt-5.5"}}]
    src.opened()
    assert src.deadline() == 0.0
    items = src.read()
    assert items[0] == StateChanged("waiting", source="app-server")
    assert SessionStarted(THREAD, model="gpt-5.5", cwd="/w", cli_version="0.171.0") in items
    assert src.deadline() is None


def test_a_sent_prompt_is_a_turn_start_and_its_refusal_a_warning() -> None:
    src, conn = source()
    src.turn_start("!as written")
    (sent,) = conn.sent
    assert sent["method"] == "turn/start"
    assert sent["params"] == {"threadId": THREAD, "input": [{"type": "text", "text": "!as written"}]}
    conn.inbox = [{"id": sent["id"], "error": {"message": "no such thread"}}]
    assert src.read() == [Warning("codex app-server refused a sent prompt: no such thread")]


def test_the_connections_end_is_reported_once() -> None:
    src, conn = source()
    conn.closed = True
    assert states(src.read()) == [("exited", "codex app-server closed the connection")]
    assert src.read() == [] and src.gone and src.filenos() == ()


def test_a_connection_agentlaunch_ended_reports_why() -> None:
    src, conn = source()
    conn.closed, conn.reason = True, "the app-server sent a message of more than 67108864 bytes"
    assert states(src.read()) == [("exited", "the app-server sent a message of more than 67108864 bytes")]


def test_a_socket_path_past_the_kernels_limit_is_refused_plainly(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 100)
    with pytest.raises(native_remote.AppServerFailed, match=f"Unix sockets take {SOCKET_PATH_MAX}"):
        native_remote.socket_path(deep)
    with pytest.raises(OSError, match=f"at most {SOCKET_PATH_MAX}"):
        UnixWebSocket(str(deep / "cx.sock"), 1.0)
    assert native_remote.socket_path(Path("/tmp/agentlaunch-abcdefgh")) == Path("/tmp/agentlaunch-abcdefgh/cx.sock")


def launch(**over: Any) -> Any:
    spec = SimpleNamespace(provider_flags=over.pop("flags", ()))
    fields = {
        "adapter": SimpleNamespace(remote_interface=True),
        "fork": None,
        "env": {},
        "resumed": False,
        "command": "codex",
        "spec": spec,
        **over,
    }
    return SimpleNamespace(**fields)


def test_which_native_launches_go_through_the_app_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(native_remote.ROUTE_ENV, raising=False)
    assert native_remote.applies(launch(), "the startup message")
    assert native_remote.applies(launch(resumed=True), "")  # a resumed thread: no first turn needed
    assert native_remote.applies(launch(flags=("-c", "model_reasoning_effort=high")), "go")
    # A fork (Codex forks in its interface), flags only `codex exec` takes, another CLI, no first turn, told not to:
    assert not native_remote.applies(launch(fork=("s", {})), "go")
    assert not native_remote.applies(launch(flags=("--sandbox", "read-only")), "go")
    assert not native_remote.applies(launch(adapter=SimpleNamespace()), "go")
    assert not native_remote.applies(launch(), "  \n")
    assert not native_remote.applies(launch(env={native_remote.ROUTE_ENV: "direct"}), "go")
    monkeypatch.setenv(native_remote.ROUTE_ENV, "direct")
    assert not native_remote.applies(launch(), "go")


def test_an_approval_request_before_its_status_and_a_question_are_the_reason_and_the_next_approval_asks_its_own() -> None:
    src, conn = source()
    conn.inbox = [
        status("active"),
        note("turn/started", turn={"id": "t1"}),
        {
            "id": 0,
            "method": "item/commandExecution/requestApproval",
            "params": {"threadId": THREAD, "command": "printf '\x1b[2J' [b]x[/b]"},
        },
        status("active", "waitingOnApproval"),
    ]
    assert states(src.read()) == [("thinking", None), ("asking", "shell: printf '\x1b[2J' [b]x[/b]")]  # kept as it came
    conn.inbox = [
        status("active"),
        status("active", "waitingOnUserInput"),
        {
            "id": 1,
            "method": "item/tool/requestUserInput",
            "params": {"threadId": THREAD, "questions": [{"id": "q", "question": "Which branch?"}]},
        },
    ]
    assert states(src.read()) == [("thinking", None), ("asking", "question: Which branch?")]


def test_a_commands_question_is_the_command_the_interface_shows_not_the_shell_that_runs_it() -> None:
    from agentlaunch.providers.native.codex_remote import question_of

    params = {"command": "/bin/bash -lc 'touch x'", "commandActions": [{"type": "unknown", "command": "touch x"}]}
    assert question_of("item/commandExecution/requestApproval", params) == "shell: touch x"
    assert question_of("item/commandExecution/requestApproval", {"command": "ls -la"}) == "shell: ls -la"
    assert question_of("item/fileChange/requestApproval", {"reason": "write the notes"}) == "edit: write the notes"
    assert question_of("item/fileChange/requestApproval", {}) == "edit: file changes"
    assert question_of("account/chatgptAuthTokens/refresh", {}) is None


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def timed_source() -> tuple[RemoteSource, FakeConn, Clock]:
    conn, clock = FakeConn(), Clock()
    return RemoteSource(conn, THREAD, clock=clock), conn, clock  # type: ignore[arg-type]


def test_a_status_then_its_request_read_apart_are_one_asking_with_its_question() -> None:
    # Codex 0.171 sends the thread's waitingOnApproval a few ms before the request: two reads of the connection.
    src, conn, clock = timed_source()
    conn.inbox = [status("active"), note("turn/started", turn={"id": "t1"}), status("active", "waitingOnApproval")]
    assert states(src.read()) == [("thinking", None)]
    assert src.deadline() == 100.0 + ASK_GRACE  # the relay reads again when the grace is over, request or not
    clock.now += 0.01
    conn.inbox = [
        note("item/started", item={"type": "commandExecution", "id": "c1", "command": "touch x"}),
        {"id": 0, "method": "item/commandExecution/requestApproval", "params": {"threadId": THREAD, "command": "touch x"}},
    ]
    second = src.read()
    assert states(second) == [("asking", "shell: touch x")]
    assert [type(i).__name__ for i in second] == ["QuestionAsked", "StateChanged"]  # the question before its asking
    assert src.deadline() is None
    clock.now += 5
    assert states(src.read()) == []  # the grace passed long ago: nothing more to say


def test_a_status_no_request_follows_is_asking_once_the_grace_is_over_and_a_late_request_names_it() -> None:
    src, conn, clock = timed_source()
    conn.inbox = [status("active"), note("turn/started", turn={"id": "t1"}), status("active", "waitingOnUserInput")]
    assert states(src.read()) == [("thinking", None)]
    clock.now += ASK_GRACE - 0.01
    assert states(src.read()) == []
    clock.now += 0.02
    assert states(src.read()) == [("asking", "Codex waits for an answer in its interface")]
    assert src.deadline() is None
    conn.inbox = [
        {
            "id": 4,
            "method": "item/tool/requestUserInput",
            "params": {"threadId": THREAD, "questions": [{"id": "q", "question": "Why?"}]},
        }
    ]
    assert states(src.read()) == [("asking", "question: Why?")]  # a request later than the grace: news, its question


def test_a_status_that_goes_on_within_the_grace_asks_nothing() -> None:
    src, conn, clock = timed_source()
    conn.inbox = [status("active"), note("turn/started", turn={"id": "t1"}), status("active", "waitingOnApproval")]
    assert states(src.read()) == [("thinking", None)]
    conn.inbox = [
        note("item/started", item={"type": "commandExecution", "id": "c1", "command": "ls"}),
        status("active"),  # answered in the interface before its request reached this connection
    ]
    assert states(src.read()) == [("tool", None)]
    clock.now += 2 * ASK_GRACE
    assert states(src.read()) == [] and src.deadline() is None
