"""Codex's line chat through one ``codex app-server`` per launch (agentlaunch.launch.chat.appserver), on the real Codex 0.171.0.

The route is told by the request's ``originator`` header: ``agentlaunch`` (the app-server's client name) or
``codex_exec``. The per-call usage, resume, interrupt, failure and retry behaviours of the route are the
existing Codex tests' (tests/e2e/test_run_codex_gemini.py and the others), which run on it unchanged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pexpect
import pytest

from agentlaunch.fakeapi import responses as cfake
from agentlaunch.providers import codex_appserver as rpc
from agentlaunch.usage.store import Store
from testbed.agent_files import write_agent
from testbed.clis import ensure_cli
from testbed.codex_appserver import StdioRpc
from tests.support.cli_runs import run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

USAGE = cfake.ResponsesUsage(input_tokens=9000, cached_tokens=8000, output_tokens=7, reasoning_tokens=3)
PER_CALL = {"input": 1000, "cache_write": 0, "cache_read": 8000, "output": 7, "reasoning": 3, "cache_write_1h": 0}


def agent(agents_dir: Path, workdir: Path, **extra: Any) -> None:
    conf = {
        "provider": "codex",
        "model": "gpt-5.5",
        "command": str(ensure_cli("codex")),
        "working_dir": str(workdir),
        "startup": "List the open work first.",
        **extra,
    }
    write_agent(agents_dir, "cdx", conf)


def chat(env: dict[str, str], workdir: Path, turns: int) -> int:
    """A line chat of ``turns`` turns (``turn N`` answered ``answer N``); its exit status."""
    line = pexpect.spawn(
        sys.executable,
        ["-m", "agentlaunch", "run", "cdx", "--line"],
        cwd=str(workdir),
        env={**os.environ, **env},
        encoding="utf-8",
        timeout=120,
        dimensions=(40, 160),
    )
    try:
        for i in range(1, turns + 1):
            line.expect("› ")
            line.sendline(f"turn {i}")
            line.expect(f"answer {i}")
        line.expect("› ")
        line.sendeof()
        line.expect(pexpect.EOF)
    finally:
        line.close()
    return int(line.exitstatus or 0)


def test_a_line_chat_sends_every_turn_to_one_app_server(isolated_home: Path, agents_dir: Path, workdir: Path) -> None:
    agent(agents_dir, workdir)
    with cfake.ResponsesFake() as api:
        api.script.push(*(cfake.TextReply(f"answer {i}", USAGE) for i in (1, 2, 3)))
        env = cfake.prepare_codex_home(isolated_home, api.base_url, request_max_retries=0, stream_max_retries=0)
        env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
        assert chat(env, workdir, 3) == 0
        requests = api.model_requests
        # A one-turn headless run of the same agent stays `codex exec` (its first turn may start early).
        api.script.push(cfake.TextReply("by exec", USAGE))
        assert run_cli("run", "cdx", "hi", env=env, cwd=workdir, timeout=120).returncode == 0
        assert api.model_requests[-1].headers.get("originator") == "codex_exec"
    assert [r.headers.get("originator") for r in requests] == ["agentlaunch"] * 3
    assert len({r.body["prompt_cache_key"] for r in requests}) == 1  # one thread
    sessions = [s for s in json.loads(run_cli("sessions", "--json", env=env, cwd=workdir).stdout) if s["turns"] == 3]
    assert len(sessions) == 1
    with Store.open(isolated_home / "state" / "usage.sqlite3") as store:
        calls = store.calls_for_session(sessions[0]["session_id"])
    assert [c.usage.as_dict() for c in calls] == [PER_CALL] * 3 and [c.turn for c in calls] == [1, 2, 3]


def test_a_line_chat_of_an_agent_with_a_flag_only_codex_exec_takes_keeps_codex_exec(
    isolated_home: Path, agents_dir: Path, workdir: Path
) -> None:
    agent(agents_dir, workdir, provider_flags=["--sandbox", "workspace-write"])
    with cfake.ResponsesFake() as api:
        api.script.push(cfake.TextReply("answer 1", USAGE))
        env = cfake.prepare_codex_home(isolated_home, api.base_url, request_max_retries=0, stream_max_retries=0)
        env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
        assert chat(env, workdir, 1) == 0
        requests = api.model_requests
    assert [r.headers.get("originator") for r in requests] == ["codex_exec"]


def test_the_model_gets_the_request_codex_exec_sends(tmp_path: Path, workdir: Path) -> None:
    """Why the doctor's capture run and the prefix fingerprint stay those of ``codex exec``: through the app-server
    (``-c developer_instructions`` and the thread as agentlaunch opens it) the request is the same, ids aside."""
    codex = str(ensure_cli("codex"))
    instructions = ["-c", 'developer_instructions="The contract agent. One word answers."']
    with cfake.ResponsesFake() as api:
        env = cfake.prepare_codex_home(tmp_path / "home", api.base_url)
        subprocess.run(
            [codex, *cfake.codex_quiet_args(), *instructions, "exec", "--json", "--skip-git-repo-check", "--", "hi"],
            env=env,
            cwd=workdir,
            capture_output=True,
            timeout=120,
            check=True,
        )
        argv = rpc.app_server_argv(codex, [])
        assert argv is not None
        server = StdioRpc([argv[0], *instructions, *argv[1:]], env, workdir)
        try:
            for message in rpc.initialize(101):  # ids the client's own requests do not use
                server.send(message)
            opened = rpc.open_thread(102, str(workdir), None, "gpt-5.5")
            server.send(opened)
            answer = server.wait_for(lambda m: m.get("id") == 102)
            server.turn(answer["result"]["thread"]["id"], "hi")
        finally:
            server.close()
        by_exec, by_server = (r.body for r in api.model_requests)

    def without_ids(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: without_ids(v) for k, v in value.items() if k not in ("id", "prompt_cache_key", "client_metadata")}
        if isinstance(value, list):
            return [without_ids(v) for v in value]
        return value

    assert without_ids(by_exec) == without_ids(by_server)
    assert len(json.dumps(by_exec)) > 20_000  # the whole request, Codex's base prompt and tools included
