"""Provider facts about the real Codex CLI that agentlaunch relies on.

Each test runs the pinned ``codex`` binary (one process per turn, ``codex exec
--json``) against the scripted fake Responses API on 127.0.0.1 with a
temporary HOME, and pins one behaviour: usage that is cumulative over the
thread after ``resume``, where AGENTS.md lands in the request, what an unknown
resume id does, API errors and retries, tool items and SIGINT. See
notes/codex-gemini-findings.md for the full record.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch.fakeapi.responses import (
    DEFAULT_MODEL,
    ErrorReply,
    ResponsesFake,
    ResponsesScript,
    ResponsesUsage,
    ShellCallReply,
    TextReply,
    agents_md_texts,
    codex_quiet_args,
    prepare_codex_home,
    rollout_files,
    user_texts,
)
from testbed.cli_turn import Turn, parse_events, run_turn
from testbed.clis import ensure_cli
from tests.support.waits import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

PER_CALL = ResponsesUsage(input_tokens=9000, cached_tokens=8000, output_tokens=7, reasoning_tokens=3)


class CodexTurn(Turn):
    @property
    def thread_id(self) -> str:
        return str(self.of_type("thread.started")[0]["thread_id"])

    @property
    def usage(self) -> dict[str, int]:
        (done,) = self.of_type("turn.completed")
        return {k: int(v) for k, v in done["usage"].items()}


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    return ensure_cli("codex")


@pytest.fixture
def script() -> ResponsesScript:
    return ResponsesScript(default=TextReply("hello from fake", PER_CALL))


@pytest.fixture
def fake(script: ResponsesScript) -> Iterator[ResponsesFake]:
    with ResponsesFake(script) as api:
        yield api


def _argv(codex_bin: Path, *args: str) -> list[str]:
    return [str(codex_bin), *codex_quiet_args(), "exec", "--json", "--skip-git-repo-check", *args]


def _run(codex_bin: Path, env: dict[str, str], cwd: Path, *args: str) -> CodexTurn:
    return run_turn(CodexTurn, _argv(codex_bin, *args), env, cwd)


def test_usage_is_cumulative_over_the_thread_after_resume(
    codex_bin: Path, fake: ResponsesFake, tmp_path: Path, workdir: Path
) -> None:
    env = prepare_codex_home(tmp_path / "home", fake.base_url)
    first = _run(codex_bin, env, workdir, "turn one")
    assert first.returncode == 0, first.stderr
    assert [e["type"] for e in first.events] == ["thread.started", "turn.started", "item.completed", "turn.completed"]
    assert first.events[2]["item"] == {"id": "item_0", "type": "agent_message", "text": "hello from fake"}
    tid = first.thread_id
    second = _run(codex_bin, env, workdir, "resume", tid, "turn two")
    third = _run(codex_bin, env, workdir, "resume", tid, "turn three")
    assert second.returncode == third.returncode == 0
    assert second.thread_id == third.thread_id == tid

    def times(k: int) -> dict[str, int]:
        return {
            "input_tokens": 9000 * k,
            "cached_input_tokens": 8000 * k,
            "cache_write_input_tokens": 0,
            "output_tokens": 7 * k,
            "reasoning_output_tokens": 3 * k,
        }

    # Fixed per-call usage; each process reports the running total of the thread.
    assert [first.usage, second.usage, third.usage] == [times(1), times(2), times(3)]
    calls = fake.model_requests
    assert len(calls) == 3
    assert all(c.body["prompt_cache_key"] == tid for c in calls)
    assert all(c.body["model"] == DEFAULT_MODEL and c.body["stream"] is True for c in calls)
    # The rollout file carries the context window (fallback metadata: 95% of 272k).
    (rollout,) = rollout_files(tmp_path / "home")
    assert rollout.name.endswith(f"-{tid}.jsonl")
    windows = {
        json.loads(line)["payload"]["info"]["model_context_window"]
        for line in rollout.read_text().splitlines()
        if '"type":"token_count"' in line and '"info":{' in line
    }
    assert windows == {258400}


def test_agents_md_is_a_user_message_reread_each_process(
    codex_bin: Path, fake: ResponsesFake, tmp_path: Path, workdir: Path
) -> None:
    env = prepare_codex_home(tmp_path / "home", fake.base_url)
    (workdir / "AGENTS.md").write_text("AGENTS-V1 answer briefly\n")
    tid = _run(codex_bin, env, workdir, "turn one").thread_id
    (workdir / "AGENTS.md").write_text("AGENTS-V2 changed\n")
    assert _run(codex_bin, env, workdir, "resume", tid, "turn two").returncode == 0
    assert _run(codex_bin, env, workdir, "resume", tid, "turn three").returncode == 0
    first, second, third = (c.body for c in fake.model_requests)
    header = f"# AGENTS.md instructions for {workdir}\n\n<INSTRUCTIONS>\n"
    assert agents_md_texts(first) == [header + "AGENTS-V1 answer briefly\n\n</INSTRUCTIONS>"]
    assert "instructions" not in first  # no top-level instructions: all are input messages
    assert user_texts(first)[-1] == "turn one"
    # Changed file: the old text stays in history, a replacement message is appended.
    replacement = (
        header + "These AGENTS.md instructions replace all previously provided AGENTS.md instructions.\n\n"
        "AGENTS-V2 changed\n\n</INSTRUCTIONS>"
    )
    assert agents_md_texts(second) == [agents_md_texts(first)[0], replacement]
    assert user_texts(second)[-2:] == [replacement, "turn two"]
    # Unchanged since the last process: nothing new is added.
    assert agents_md_texts(third) == agents_md_texts(second)
    assert user_texts(third)[-1] == "turn three"
    # History is replayed byte for byte: the earlier request is a prefix of the later one.
    assert first["input"] == second["input"][: len(first["input"])]
    assert second["input"] == third["input"][: len(second["input"])]


def test_unknown_resume_id_fails_without_calling_the_api(
    codex_bin: Path, fake: ResponsesFake, tmp_path: Path, workdir: Path
) -> None:
    env = prepare_codex_home(tmp_path / "home", fake.base_url)
    assert _run(codex_bin, env, workdir, "hello").returncode == 0
    unknown = "00000000-0000-4000-8000-000000000000"
    turn = _run(codex_bin, env, workdir, "resume", unknown, "hello again")
    assert turn.returncode == 1
    assert turn.stdout == ""
    assert f"no rollout found for thread id {unknown}" in turn.stderr
    assert len(fake.model_requests) == 1


def test_resume_with_a_non_uuid_starts_a_new_thread(codex_bin: Path, fake: ResponsesFake, tmp_path: Path, workdir: Path) -> None:
    """A SESSION_ID that is not a UUID is looked up as a thread *name*; none found: a silent new thread."""
    env = prepare_codex_home(tmp_path / "home", fake.base_url)
    first = _run(codex_bin, env, workdir, "hello")
    turn = _run(codex_bin, env, workdir, "resume", "no-such-thread-name", "hello again")
    assert turn.returncode == 0
    assert turn.thread_id != first.thread_id
    assert turn.usage["input_tokens"] == 9000  # a fresh total, not 18000
    assert user_texts(fake.model_requests[-1].body)[-1] == "hello again"
    assert "hello" not in user_texts(fake.model_requests[-1].body)


def test_api_error_fails_the_turn_with_exit_1(
    codex_bin: Path, script: ResponsesScript, fake: ResponsesFake, tmp_path: Path, workdir: Path
) -> None:
    script.default = ErrorReply(400, "bad request", "invalid_request_error")
    env = prepare_codex_home(tmp_path / "home", fake.base_url, request_max_retries=0, stream_max_retries=0)
    started = time.monotonic()
    turn = _run(codex_bin, env, workdir, "hi")
    assert time.monotonic() - started < 30
    assert turn.returncode == 1
    body = '{"error": {"message": "bad request", "type": "invalid_request_error", "code": null, "param": null}}'
    assert [e["type"] for e in turn.events] == ["thread.started", "turn.started", "error", "turn.failed"]
    assert turn.events[2] == {"type": "error", "message": body}
    assert turn.events[3] == {"type": "turn.failed", "error": {"message": body}}
    assert len(fake.model_requests) == 1


def test_retries_multiply_and_can_be_turned_down(
    codex_bin: Path, script: ResponsesScript, fake: ResponsesFake, tmp_path: Path, workdir: Path
) -> None:
    """A 500: (1 + request_max_retries) x (1 + stream_max_retries) requests; defaults 4 and 5 give 30 (about 25 s)."""
    script.default = ErrorReply(500)
    env = prepare_codex_home(tmp_path / "home", fake.base_url, request_max_retries=1, stream_max_retries=1)
    turn = _run(codex_bin, env, workdir, "hi")
    assert turn.returncode == 1
    assert len(fake.model_requests) == 4
    messages = [e["message"] for e in turn.of_type("error")]
    assert len(messages) == 2
    assert messages[0].startswith("Reconnecting... 1/1 (")
    assert turn.of_type("turn.failed")[0]["error"]["message"] == messages[1]


def test_tool_call_items_and_turn_usage_sums_the_calls(
    codex_bin: Path, script: ResponsesScript, fake: ResponsesFake, tmp_path: Path, workdir: Path
) -> None:
    script.push(
        ShellCallReply("echo hello-from-tool", ResponsesUsage(1000, 0, 20, 5)),
        TextReply("done", ResponsesUsage(1200, 1000, 4, 0)),
    )
    env = prepare_codex_home(tmp_path / "home", fake.base_url)
    turn = _run(codex_bin, env, workdir, "run it")
    assert turn.returncode == 0, turn.stderr
    started, completed = turn.of_type("item.started"), turn.of_type("item.completed")
    command = "/bin/bash -lc 'echo hello-from-tool'"
    assert started[0]["item"] == {
        "id": "item_0",
        "type": "command_execution",
        "command": command,
        "aggregated_output": "",
        "exit_code": None,
        "status": "in_progress",
    }
    assert completed[0]["item"] == {
        "id": "item_0",
        "type": "command_execution",
        "command": command,
        "aggregated_output": "hello-from-tool\n",
        "exit_code": 0,
        "status": "completed",
    }
    assert completed[1]["item"]["type"] == "agent_message"
    assert turn.usage == {
        "input_tokens": 2200,
        "cached_input_tokens": 1000,
        "cache_write_input_tokens": 0,
        "output_tokens": 24,
        "reasoning_output_tokens": 5,
    }
    second = fake.model_requests[1].body["input"]
    assert [i["type"] for i in second[-2:]] == ["function_call", "function_call_output"]
    assert "hello-from-tool" in second[-1]["output"]


def test_sigint_mid_turn_exits_1_and_the_thread_stays_resumable(
    codex_bin: Path, script: ResponsesScript, fake: ResponsesFake, tmp_path: Path, workdir: Path
) -> None:
    script.push(
        TextReply("first", ResponsesUsage(1000, 0, 10, 0)),
        TextReply("slow answer here", ResponsesUsage(500, 0, 5, 0), stall=60),
    )
    script.default = TextReply("after", ResponsesUsage(3000, 1000, 3, 0))
    env = prepare_codex_home(tmp_path / "home", fake.base_url)
    tid = _run(codex_bin, env, workdir, "first").thread_id
    proc = subprocess.Popen(
        _argv(codex_bin, "resume", tid, "second"),
        env=env,
        cwd=workdir,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: fake.stalls >= 1, timeout=30, what="the stalled request, its first delta sent")
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1
    assert [e["type"] for e in parse_events(out)] == ["thread.started", "turn.started"]  # no turn.failed
    after = _run(codex_bin, env, workdir, "resume", tid, "third")
    assert after.returncode == 0
    # The interrupted call never completed, so it adds nothing to the running total.
    assert after.usage["input_tokens"] == 4000
    assert after.usage["output_tokens"] == 13
    texts = user_texts(fake.model_requests[-1].body)
    assert texts[-3] == "second"
    assert texts[-2].startswith("<turn_aborted>")
    assert texts[-1] == "third"
