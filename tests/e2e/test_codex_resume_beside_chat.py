"""A Codex session whose thread another process holds, on the real Codex 0.171.0 (agentlaunch.launch.thread_held).

Codex lets one process at a time write a thread: while a line chat's ``codex app-server`` has the thread open,
``codex exec … resume`` of it exits 1 ("thread/resume failed: thread … already has an active writer"), and
another app-server's ``thread/resume`` is refused with the same words. agentlaunch ends such a launch with exit 7
(cannot take it now, as ``agentlaunch send``), naming the running chat and ``agentlaunch send`` as the way in;
no turn is counted. Before, ``run -c`` exited 1 with Codex's log line as the reason.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pexpect
import pytest

from agentlaunch.fakeapi import responses as cfake
from agentlaunch.providers import codex_appserver as rpc
from testbed.agent_files import write_agent
from testbed.clis import ensure_cli
from testbed.codex_appserver import StdioRpc
from tests.support.cli_runs import run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

USAGE = cfake.ResponsesUsage(input_tokens=9000, cached_tokens=8000, output_tokens=7, reasoning_tokens=3)


def codex_env(home: Path, agents_dir: Path, workdir: Path, api: cfake.ResponsesFake) -> dict[str, str]:
    write_agent(
        agents_dir,
        "cdx",
        {"provider": "codex", "model": "gpt-5.5", "command": str(ensure_cli("codex")), "working_dir": str(workdir)},
    )
    env = cfake.prepare_codex_home(home, api.base_url, request_max_retries=0, stream_max_retries=0)
    env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
    return env


@contextmanager
def line_chat(env: dict[str, str], workdir: Path, *args: str) -> Iterator[pexpect.spawn]:
    line = pexpect.spawn(
        sys.executable,
        ["-m", "agentlaunch", "run", "cdx", "--line", *args],
        cwd=str(workdir),
        env={**os.environ, **env},
        encoding="utf-8",
        timeout=120,
        dimensions=(40, 200),
    )
    try:
        yield line
    finally:
        if line.isalive():
            line.terminate(force=True)
        line.close()


def sessions(env: dict[str, str], workdir: Path) -> list[dict[str, object]]:
    return list(json.loads(run_cli("sessions", "--json", env=env, cwd=workdir).stdout))


def test_run_continue_beside_an_open_line_chat_is_exit_7_naming_the_chat_and_send(
    isolated_home: Path, agents_dir: Path, workdir: Path
) -> None:
    with cfake.ResponsesFake() as api:
        env = codex_env(isolated_home, agents_dir, workdir, api)
        api.script.push(cfake.TextReply("answer 1", USAGE), cfake.TextReply("answer 2", USAGE))
        with line_chat(env, workdir) as line:
            line.expect("› ")
            line.sendline("turn 1")
            line.expect("answer 1")
            line.expect("› ")
            asked = len(api.model_requests)
            headless = run_cli("run", "cdx", "-c", "hi", env=env, cwd=workdir, timeout=120)
            with line_chat(env, workdir, "-c") as other:
                other.expect("› ")
                other.sendline("hello")
                other.expect(pexpect.EOF)
                other.close()
                second = (int(other.exitstatus or 0), str(other.before))
            assert len(api.model_requests) == asked  # neither reached the model
            # The way in that the message names works: the chat takes the prompt.
            sent = run_cli("send", "cdx", "turn 2", "--wait", env=env, cwd=workdir, timeout=120)
            assert sent.returncode == 0, sent.stderr.decode()
            assert sent.stdout.decode().strip() == "answer 2"
            line.sendeof()
            line.expect(pexpect.EOF)
            chat_pid = line.pid
    for code, err in ((headless.returncode, headless.stderr.decode()), second):
        assert code == 7, err
        assert "is open in another agentlaunch" in err and "nothing was sent" in err, err
        assert "agentlaunch send cdx PROMPT --wait" in err, err
        assert "Traceback" not in err and "ERROR" not in err, err  # not Codex's log line
    assert headless.stdout == b""
    [session] = sessions(env, workdir)
    assert session["turns"] == 2  # the chat's two; the refused runs began none
    assert chat_pid  # the chat itself ran on (its send answered above)


def test_a_thread_held_by_a_process_agentlaunch_did_not_start_is_exit_7_too(
    isolated_home: Path, agents_dir: Path, workdir: Path
) -> None:
    with cfake.ResponsesFake() as api:
        env = codex_env(isolated_home, agents_dir, workdir, api)
        api.script.push(cfake.TextReply("answer 1", USAGE))
        first = run_cli("run", "cdx", "hi", env=env, cwd=workdir, timeout=120)
        assert first.returncode == 0, first.stderr.decode()
        [session] = sessions(env, workdir)
        argv = rpc.app_server_argv(str(ensure_cli("codex")), [])
        assert argv is not None
        server = StdioRpc(argv, {**os.environ, **env}, workdir)
        try:
            server.initialize()
            [rollout] = (isolated_home / ".codex" / "sessions").rglob("rollout-*.jsonl")  # not .codex/.tmp: it changes
            thread = "-".join(rollout.stem.split("-")[-5:])  # agentlaunch's session id is not Codex's thread id
            server.result("thread/resume", {"threadId": thread})
            done = run_cli("run", "cdx", "-c", "again", env=env, cwd=workdir, timeout=120)
        finally:
            server.close()
        again = run_cli("run", "cdx", "-c", "again", env=env, cwd=workdir, timeout=120)  # released: it goes on
    err = done.stderr.decode()
    assert done.returncode == 7, err
    assert f"another codex process holds cdx's session {session['session_id']}" in err, err
    assert again.returncode == 0, again.stderr.decode()
