"""`agentlaunch run` end to end on the real Codex CLI and Gemini CLI, against fake APIs on 127.0.0.1.

Both run one CLI process per turn; the conversation lives in the CLI and is
continued by its thread or session id, which agentlaunch keeps in its store.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pexpect
import pytest

from agentlaunch.fakeapi import gemini as gfake
from agentlaunch.fakeapi import responses as cfake
from agentlaunch.fakeapi.server import Recorded
from agentlaunch.usage.store import Store
from testbed.agent_files import write_agent
from testbed.clis import ensure_cli
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.gemini_process import one_gemini_process
from tests.support.waits import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
STARTUP = "<agentlaunch-startup>"
SOUL_LINE = "You are Planner, who turns vague goals into small, ordered, testable steps."


@dataclass
class Provider:
    """One provider CLI pointed at its fake API, with an agent `planner` that uses it."""

    name: str
    env: dict[str, str]
    calls: Callable[[], list[Recorded]]
    user_texts: Callable[[Any], list[str]]
    push_text: Callable[..., None]
    push_error: Callable[[int, str], None]
    per_call: dict[str, int]  # what agentlaunch must record for one scripted call
    push_tool_turn: Callable[..., None]  # a turn of two calls: a tool call, then the answer "done" (stall=S: held back)
    tool_turn_calls: list[dict[str, int]]  # what agentlaunch must record for those two calls

    def run(self, *args: str, cwd: Path) -> Any:
        """`agentlaunch ARGS` as a real process (its entry point's early start, its exit code)."""
        return run_cli(*args, cwd=cwd, env=self.env, timeout=240)

    def run_here(self, *args: str, cwd: Path) -> Any:
        """`agentlaunch ARGS` in this process, for a test that reads its output, exit code and store: the CLI it
        starts is a real process; a Python start (about 0.3 CPU-s) saved."""
        return run_cli_inprocess(*args, cwd=cwd, env=self.env, timeout=240)


@pytest.fixture(params=["codex", "gemini"])
def provider(request: pytest.FixtureRequest, agents_dir: Path, workdir: Path, isolated_home: Path) -> Iterator[Provider]:
    name = request.param
    binary = ensure_cli(name)
    write_agent(
        agents_dir,
        "planner",
        {
            "display": "Planner",
            "provider": name,
            "model": "gpt-5.5" if name == "codex" else "gemini-2.5-pro",
            "bundles": ["house-style"],
            "skills": ["git-hygiene"],
            "startup": "List the open work first.",
            "command": str(binary),
            "working_dir": str(workdir),
        },
    )
    if name == "codex":
        with cfake.ResponsesFake() as api:
            env = cfake.prepare_codex_home(isolated_home, api.server.url + "/v1", request_max_retries=0, stream_max_retries=0)
            env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
            usage = cfake.ResponsesUsage(input_tokens=9000, cached_tokens=8000, output_tokens=7, reasoning_tokens=3)
            yield Provider(
                name,
                env,
                lambda: api.model_requests,
                cfake.user_texts,
                lambda text="ok", stall=0.0: api.script.push(cfake.TextReply(text, usage, stall=stall)),
                lambda status, message: api.script.push(cfake.ErrorReply(status, message)),
                {"input": 1000, "cache_write": 0, "cache_read": 8000, "output": 7, "reasoning": 3, "cache_write_1h": 0},
                lambda stall=0.0: api.script.push(
                    cfake.ShellCallReply("cat hello.txt", cfake.ResponsesUsage(1000, 0, 20, 5)),
                    cfake.TextReply("done", cfake.ResponsesUsage(1200, 1000, 4, 0), stall=stall),
                ),
                [
                    {"input": 1000, "cache_write": 0, "cache_read": 0, "output": 20, "reasoning": 5, "cache_write_1h": 0},
                    {"input": 200, "cache_write": 0, "cache_read": 1000, "output": 4, "reasoning": 0, "cache_write_1h": 0},
                ],
            )
    else:
        with gfake.GeminiFake() as gapi:
            no_relaunch = one_gemini_process(request)
            env = gfake.prepare_gemini_home(isolated_home, gapi.base_url, max_attempts=1, no_relaunch=no_relaunch)
            env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
            gusage = gfake.GeminiUsage(prompt=9000, output=7, cached=6000, thoughts=2)
            yield Provider(
                name,
                env,
                lambda: gapi.model_requests,
                gfake.user_texts,
                lambda text="ok", stall=0.0: gapi.script.push(gfake.TextReply(text, gusage, stall=stall)),
                lambda status, message: gapi.script.push(gfake.ErrorReply(status, message)),
                {"input": 3000, "cache_write": 0, "cache_read": 6000, "output": 9, "reasoning": 2, "cache_write_1h": 0},
                lambda stall=0.0: gapi.script.push(
                    gfake.FunctionCallReply("read_file", {"file_path": "hello.txt"}, gfake.GeminiUsage(1000, 20, 0, 5)),
                    gfake.TextReply("done", gfake.GeminiUsage(1200, 4, 1000, 0), stall=stall),
                ),
                [  # thinking tokens are billed as output
                    {"input": 1000, "cache_write": 0, "cache_read": 0, "output": 25, "reasoning": 5, "cache_write_1h": 0},
                    {"input": 200, "cache_write": 0, "cache_read": 1000, "output": 4, "reasoning": 0, "cache_write_1h": 0},
                ],
            )


def newest_user_text(p: Provider, req: Recorded) -> str:
    return p.user_texts(req.body)[-1]


def session_of(p: Provider, cwd: Path) -> dict[str, Any]:
    sessions = json.loads(p.run_here("sessions", "--json", cwd=cwd).stdout)
    assert len(sessions) == 1, sessions
    return dict(sessions[0])


def test_three_turns_over_two_processes_record_exact_per_call_usage(
    provider: Provider, workdir: Path, isolated_home: Path
) -> None:
    p = provider
    for i in range(3):
        p.push_text(f"answer {i + 1}")
    first = p.run_here("run", "planner", "turn one", cwd=workdir)
    assert first.returncode == 0, first.stderr.decode()
    assert first.stdout.decode().strip() == "answer 1"

    # A second agentlaunch process, a chat: two more turns in the same CLI session.
    log = io.StringIO()
    env = dict(os.environ)
    env.update(p.env)
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "agentlaunch", "run", "planner", "-c", "--line"],
        cwd=str(workdir),
        env=env,
        encoding="utf-8",
        timeout=120,
        dimensions=(40, 160),
    )
    chat.logfile_read = log
    try:
        chat.expect("resumed session")
        chat.expect("› ")
        chat.sendline("turn two")
        chat.expect("answer 2")
        chat.expect("› ")
        chat.sendline("turn three")
        chat.expect("answer 3")
        chat.expect("› ")
        chat.sendeof()
        chat.expect(pexpect.EOF)
    finally:
        chat.close()
    assert chat.exitstatus == 0, log.getvalue()

    requests = p.calls()
    assert len(requests) == 3
    # The instructions reached the request (codex: a developer message, its default delivery; gemini: the
    # system instruction, from its default gemini-home), the startup message only the first turn.
    first_texts = "\n".join(p.user_texts(requests[0].body))
    if p.name == "codex":
        for req in requests:  # every turn, first and resumed, carries them once
            assert "\n".join(cfake.message_texts(req.body, "developer")).count(SOUL_LINE) == 1
        assert SOUL_LINE not in first_texts and not (workdir / "AGENTS.md").exists()
    else:
        for req in requests:  # every turn, first and resumed, carries them once
            assert "\n".join(gfake.instruction_texts(req.body)).count(SOUL_LINE) == 1
        assert SOUL_LINE not in first_texts and not (workdir / "GEMINI.md").exists()
    assert STARTUP in newest_user_text(p, requests[0]) or STARTUP in first_texts
    for req, prompt in zip(requests[1:], ("turn two", "turn three"), strict=True):
        assert prompt in newest_user_text(p, req) and STARTUP not in newest_user_text(p, req)
        assert req.raw.decode().count(STARTUP) <= 1  # at most the first turn, kept in history
    if p.name == "codex":
        keys = {r.body.get("prompt_cache_key") for r in requests}
        assert len(keys) == 1, "every turn must continue the same thread"

    session = session_of(p, workdir)
    assert session["turns"] == 3 and session["provider"] == p.name
    with Store.open(isolated_home / "state" / "usage.sqlite3") as store:
        calls = store.calls_for_session(session["session_id"])
    assert [c.usage.as_dict() for c in calls] == [p.per_call] * 3, "per-call usage, never running totals"
    assert [c.turn for c in calls] == [1, 2, 3]


def test_failed_turn_exits_1_with_the_providers_message(provider: Provider, workdir: Path) -> None:
    provider.push_error(400, "bad request from the fake")
    result = provider.run("run", "planner", "hi", cwd=workdir)
    assert result.returncode == 1
    assert result.stdout == b""
    assert "bad request from the fake" in result.stderr.decode()


def test_unknown_resume_id_is_refused_and_starts_nothing(provider: Provider, workdir: Path) -> None:
    result = provider.run_here("run", "planner", "-r", "00000000-0000-4000-8000-000000000000", "hi", cwd=workdir)
    assert result.returncode == 1, result.stderr.decode()
    err = result.stderr.decode()
    assert "no rollout found" in err or "Error resuming session" in err, err
    assert provider.calls() == []
    assert json.loads(provider.run_here("sessions", "--json", cwd=workdir).stdout) == []


@pytest.mark.parametrize("provider", ["codex"], indirect=True)
def test_codex_thread_name_is_refused_before_codex_could_start_a_new_thread(provider: Provider, workdir: Path) -> None:
    """Codex-only trap: a non-UUID resume id is taken as a thread name and silently starts a new thread."""
    result = provider.run_here("run", "planner", "-r", "my-thread", "hi", cwd=workdir)
    assert result.returncode == 3 and "would silently start a new thread" in result.stderr.decode()
    assert provider.calls() == []


@pytest.mark.gemini_relaunch  # Ctrl-C reaches Gemini's process group: its relaunched tree as shipped
def test_a_tool_turn_is_recorded_call_by_call_and_an_interrupted_turn_ends_the_process_and_keeps_the_session_resumable(
    provider: Provider, workdir: Path, isolated_home: Path
) -> None:
    """A tool turn: stdout carries one sum per turn; agentlaunch takes each call from the CLI's own file (rollout,
    session file). Then a turn interrupted after its tool call, and a third turn in the same session."""
    (workdir / "hello.txt").write_text("hi there\n")
    provider.push_tool_turn()
    result = provider.run_here("run", "planner", "--json", "read hello.txt", cwd=workdir)
    assert result.returncode == 0, result.stderr.decode()
    events = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert [e["usage"] for e in events if e["event"] == "usage"] == provider.tool_turn_calls
    assert [e["event"] for e in events].count("tool_use") == 1
    assert len(provider.calls()) == 2
    with Store.open(isolated_home / "state" / "usage.sqlite3") as store:
        calls = store.calls_for_session(session_of(provider, workdir)["session_id"])
    assert [c.usage.as_dict() for c in calls] == provider.tool_turn_calls
    assert [c.turn for c in calls] == [1, 1]

    provider.push_tool_turn(stall=120.0)  # its tool call finishes; the answer after it never comes
    slow = subprocess.Popen(
        [sys.executable, "-m", "agentlaunch", "run", "planner", "-c", "slow one"],
        cwd=workdir,
        env={**os.environ, **provider.env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        # Ctrl-C only once the stalled request is in: how long the CLI takes to start varies with load.
        wait_for(lambda: len(provider.calls()) == 4 or slow.poll() is not None, timeout=120, what="the request")
        assert len(provider.calls()) == 4, "the turn never reached its second call"
        slow.send_signal(signal.SIGINT)
        _, err = slow.communicate(timeout=60)
    finally:
        if slow.poll() is None:
            slow.kill()
            slow.wait()
    assert slow.returncode == 130, err.decode()
    assert "interrupted" in err.decode()
    provider.push_text("after")
    after = provider.run_here("run", "planner", "-c", "after the interrupt", cwd=workdir)
    assert after.returncode == 0, after.stderr.decode()
    assert after.stdout.decode().strip() == "after"
    session = session_of(provider, workdir)
    assert session["turns"] == 3
    last = provider.calls()[-1]
    assert "after the interrupt" in newest_user_text(provider, last)
    # The interrupted turn's finished tool call is recorded (from the CLI's own file), once, and the next turn
    # records only its own call.
    with Store.open(isolated_home / "state" / "usage.sqlite3") as store:
        calls = store.calls_for_session(session["session_id"])
    assert [(c.turn, c.usage.as_dict()) for c in calls] == [
        (1, provider.tool_turn_calls[0]),
        (1, provider.tool_turn_calls[1]),
        (2, provider.tool_turn_calls[0]),
        (3, provider.per_call),
    ]


def test_missing_binary_gives_127(provider: Provider, agents_dir: Path, workdir: Path) -> None:
    write_agent(agents_dir, "ghost", {"provider": provider.name, "command": str(workdir / "nope"), "working_dir": str(workdir)})
    result = provider.run("run", "ghost", "hi", cwd=workdir)
    assert result.returncode == 127 and b"npm install -g" in result.stderr
