"""Provider facts about the real Gemini CLI that agentlaunch relies on.

Each test runs the pinned ``gemini`` binary (one process per turn, ``gemini -p
... --output-format stream-json``) against the scripted fake Gemini API on
127.0.0.1 with a temporary HOME, and pins one behaviour: per-turn usage after
``--resume``, where GEMINI.md lands in the request, what an unknown resume id
does, exit codes of API errors, tool events and SIGINT. See
notes/codex-gemini-findings.md for the full record.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.fakeapi.gemini import (
    ErrorReply,
    FunctionCallReply,
    GeminiFake,
    GeminiScript,
    GeminiUsage,
    TextReply,
    instruction_texts,
    prepare_gemini_home,
    user_texts,
)
from testbed.cli_turn import Event, Turn, parse_events, run_turn
from testbed.clis import ensure_cli
from tests.support.waits import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

MODEL = "gemini-2.5-pro"
PER_CALL = GeminiUsage(prompt=9000, output=7, cached=6000, thoughts=2)


class GeminiTurn(Turn):
    @property
    def result(self) -> Event:
        (result,) = self.of_type("result")
        return result


@pytest.fixture(scope="session")
def gemini_bin() -> Path:
    return ensure_cli("gemini")


@pytest.fixture
def script() -> GeminiScript:
    return GeminiScript(default=TextReply("hello from fake", PER_CALL))


@pytest.fixture
def fake(script: GeminiScript) -> Iterator[GeminiFake]:
    with GeminiFake(script) as api:
        yield api


def _argv(gemini_bin: Path, *args: str) -> list[str]:
    return [str(gemini_bin), "--output-format", "stream-json", "-m", MODEL, *args]


def _run(gemini_bin: Path, env: dict[str, str], cwd: Path, *args: str) -> GeminiTurn:
    return run_turn(GeminiTurn, _argv(gemini_bin, *args), env, cwd)


def _stats(total: int, input_tokens: int, output: int, cached: int, duration_ms: int, tool_calls: int) -> dict[str, Any]:
    figures = {
        "total_tokens": total,
        "input_tokens": input_tokens,
        "output_tokens": output,
        "cached": cached,
        "input": input_tokens - cached,
    }
    return {**figures, "duration_ms": duration_ms, "tool_calls": tool_calls, "models": {MODEL: figures}}


def _without_duration(stats: dict[str, Any]) -> dict[str, Any]:
    return {**stats, "duration_ms": 0}


@pytest.mark.timeout(480)  # nine launches: the bound on a hang of the six tests it merged, 120 s each
def test_session_id_per_turn_usage_gemini_md_the_resume_errors_a_tool_turn_and_sigint(
    gemini_bin: Path, script: GeminiScript, fake: GeminiFake, tmp_path: Path, workdir: Path
) -> None:
    """One session of three turns, the refusals around it, a tool turn and an interrupted turn (9 launches; they
    were 6 tests of 14 launches).

    Before any session: an unknown resume id exits 42. Then per-turn usage after ``--resume``, GEMINI.md in the
    first user message and re-read on resume, a reused ``--session-id`` and an unknown id among sessions: 42. A
    tool turn's events and usage. Then SIGINT: the launcher process ignores it; signalled as a group the turn stops
    (exit 0, no result), and the next turn of the session joins the interrupted prompt to its own.
    """
    env = prepare_gemini_home(tmp_path / "home", fake.base_url)
    unknown = str(uuid.uuid4())
    none_yet = _run(gemini_bin, env, workdir, "-p", "hi", "--resume", unknown)
    assert none_yet.returncode == 42
    assert none_yet.stdout == ""
    assert "Error resuming session: No previous sessions found for this project." in none_yet.stderr
    assert fake.model_requests == []
    sid = str(uuid.uuid4())
    (workdir / "GEMINI.md").write_text("GEMINI-V1 answer briefly\n")
    turns = [_run(gemini_bin, env, workdir, "-p", "turn one", "--session-id", sid)]
    (workdir / "GEMINI.md").write_text("GEMINI-V2 changed\n")
    turns += [
        _run(gemini_bin, env, workdir, "-p", "turn two", "--resume", sid),
        _run(gemini_bin, env, workdir, "-p", "turn three", "--resume", sid),
    ]
    for n, turn in enumerate(turns):
        assert turn.returncode == 0, turn.stderr
        init, user = turn.events[0], turn.events[1]
        assert (init["type"], init["session_id"], init["model"]) == ("init", sid, MODEL)
        assert (user["type"], user["role"], user["content"]) == ("message", "user", ["turn one", "turn two", "turn three"][n])
        deltas = [e for e in turn.events if e.get("role") == "assistant"]
        assert all(e["delta"] is True for e in deltas)
        assert "".join(e["content"] for e in deltas) == "hello from fake"
        result = turn.result
        assert result["status"] == "success"
        # Per turn, not cumulative. total includes thoughts (2); output_tokens excludes them.
        assert _without_duration(result["stats"]) == _stats(9009, 9000, 7, 6000, 0, 0)
    assert [e["type"] for e in turns[0].events][-1] == "result"
    assert len(fake.model_requests) == 3
    assert all(r.path == f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse" for r in fake.model_requests)

    first, second = (r.body for r in fake.model_requests[:2])
    path = workdir / "GEMINI.md"
    block = "--- Context from: {p} ---\n{text}--- End of Context from: {p} ---"
    context = user_texts(first)[0]
    assert context.startswith("<session_context>\n")
    assert block.format(p=path, text="GEMINI-V1 answer briefly\n") in context
    assert user_texts(first)[1] == "turn one"
    assert not any("GEMINI-V1" in t for t in instruction_texts(first))  # not in systemInstruction
    # On resume the context message is rebuilt from the file as it is now: V1 is gone from history.
    assert block.format(p=path, text="GEMINI-V2 changed\n") in user_texts(second)[0]
    assert "GEMINI-V1" not in json.dumps(second)
    assert user_texts(second)[1:] == ["turn one", "turn two"]
    assert [c["role"] for c in second["contents"]] == ["user", "model", "user"]

    again = _run(gemini_bin, env, workdir, "-p", "hi", "--session-id", sid)  # a reused session id
    assert again.returncode == 42
    assert again.stdout == ""
    assert f'Session ID "{sid}" already exists' in again.stderr
    turn = _run(gemini_bin, env, workdir, "-p", "hi", "--resume", unknown)  # an unknown id, sessions there
    assert turn.returncode == 42
    assert turn.stdout == ""
    assert f'Error resuming session: Invalid session identifier "{unknown}".' in turn.stderr
    assert len(fake.model_requests) == 3  # neither refusal called the API

    # A tool turn of the session: its tool events, and the turn's usage the sum of its two calls.
    (workdir / "hello.txt").write_text("hi there\n")
    script.push(
        FunctionCallReply("read_file", {"file_path": "hello.txt"}, GeminiUsage(1000, 20, 0, 5)),
        TextReply("done", GeminiUsage(1200, 4, 1000, 0)),
    )
    turn = _run(gemini_bin, env, workdir, "-p", "run it", "--resume", sid)
    assert turn.returncode == 0, turn.stderr
    (use,), (res,) = turn.of_type("tool_use"), turn.of_type("tool_result")
    assert (use["tool_name"], use["parameters"]) == ("read_file", {"file_path": "hello.txt"})
    assert res["tool_id"] == use["tool_id"]
    assert res["status"] == "success"
    assert _without_duration(turn.result["stats"]) == _stats(2229, 2200, 24, 1000, 0, 1)
    answer = fake.model_requests[4].body["contents"][-1]["parts"][0]["functionResponse"]
    assert answer["name"] == "read_file"
    assert answer["response"] == {"output": "hi there\n"}

    # SIGINT: the launcher process ignores it; signalled as a group the turn stops, exit 0, no result.
    script.push(TextReply("slow answer here", GeminiUsage(500, 5), stall=60))
    script.default = TextReply("after", GeminiUsage(3000, 3, 1000))
    proc = subprocess.Popen(
        _argv(gemini_bin, "-p", "second", "--resume", sid),
        env=env,
        cwd=workdir,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    stdout = proc.stdout
    assert stdout is not None
    lines: list[str] = []

    def read() -> None:
        for line in stdout:  # each as the CLI prints it
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        # Mid-stream: the CLI printed the first chunk (the rest is held by the fake).
        wait_for(lambda: any('"slow a"' in line for line in lines[:]), timeout=60, what="the first chunk printed")
        proc.send_signal(signal.SIGINT)  # to the launcher alone: ignored
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=3)
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=20)
        reader.join(20)
        out = "".join(lines)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0
    events = parse_events(out)
    assert [e["type"] for e in events] == ["init", "message", "message"]
    assert events[2]["content"] == "slow a"
    after = _run(gemini_bin, env, workdir, "-p", "third", "--resume", sid)
    assert after.returncode == 0
    assert _without_duration(after.result["stats"]) == _stats(3003, 3000, 3, 1000, 0, 0)
    # The partial answer is dropped; the interrupted prompt joins the next one.
    assert fake.model_requests[-1].body["contents"][-1] == {"role": "user", "parts": [{"text": "second"}, {"text": "third"}]}


# 500 -> 244: in test_retries_are_capped_by_general_max_attempts, with the same events and result.
@pytest.mark.parametrize(("status", "exit_code"), [(400, 144), (401, 145)])
def test_api_error_exit_code_is_the_http_status_mod_256(
    gemini_bin: Path, script: GeminiScript, fake: GeminiFake, tmp_path: Path, workdir: Path, status: int, exit_code: int
) -> None:
    script.default = ErrorReply(status, "fake failure")
    env = prepare_gemini_home(tmp_path / "home", fake.base_url, max_attempts=1)
    turn = _run(gemini_bin, env, workdir, "-p", "hi")
    assert turn.returncode == exit_code == status % 256
    assert [e["type"] for e in turn.events] == ["init", "message", "result"]
    result = turn.result
    assert result["status"] == "error"
    assert result["error"]["type"] == "unknown"
    assert f'"code":{status}' in result["error"]["message"]
    assert _without_duration(result["stats"]) == _stats(0, 0, 0, 0, 0, 0)
    assert len(fake.model_requests) == 1  # general.maxAttempts = 1: no retries


def test_retries_are_capped_by_general_max_attempts(
    gemini_bin: Path, script: GeminiScript, fake: GeminiFake, tmp_path: Path, workdir: Path
) -> None:
    script.default = ErrorReply(500, "fake failure")
    env = prepare_gemini_home(tmp_path / "home", fake.base_url, max_attempts=2)
    turn = _run(gemini_bin, env, workdir, "-p", "hi")
    assert turn.returncode == 244 == 500 % 256
    assert [e["type"] for e in turn.events] == ["init", "message", "result"]
    result = turn.result
    assert result["status"] == "error"
    assert result["error"]["type"] == "unknown"
    assert '"code":500' in result["error"]["message"]
    assert _without_duration(result["stats"]) == _stats(0, 0, 0, 0, 0, 0)
    assert len(fake.model_requests) == 2
    assert "Attempt 1 failed with status 500. Retrying with backoff..." in turn.stderr
    assert "Attempt 2 failed" in turn.stderr and "Max attempts reached" in turn.stderr


def test_missing_api_key_exits_41(gemini_bin: Path, fake: GeminiFake, tmp_path: Path, workdir: Path) -> None:
    env = prepare_gemini_home(tmp_path / "home", fake.base_url, api_key=None)
    turn = _run(gemini_bin, env, workdir, "-p", "hi")
    assert turn.returncode == 41
    assert turn.stdout == ""
    assert "you must specify the GEMINI_API_KEY environment variable" in turn.stderr
    assert fake.model_requests == []
