"""A real Claude Code agent on another host, over a real OpenSSH server (tests/support/ssh_server.py): started with
`tmux up --host`, seen in the fleet with its host, asked with `send --host --wait` (a prompt a shell would misread,
which the fake API must receive byte for byte), and stopped. The host has its own HOME, state, tmux server and the
fake API's address in its own settings (``REMOTE/env``): nothing of this side's environment is sent.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from agentlaunch.fakeapi.anthropic import FakeAnthropic, claude_env, text_reply
from testbed.agent_files import write_agent
from testbed.claude_tui import seed_home
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.required import need
from tests.support.ssh_server import SshServer
from tests.support.waits import wait_for
from tests.test_hosts_config import write_config

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

need("sshd", "tmux")


def remote_agent(agent: str) -> dict[str, object] | None:
    done = run_cli_inprocess("fleet", "--json")
    assert done.returncode == 0, done.stderr
    return next((a for a in json.loads(done.stdout)["agents"] if a["host"] == "box" and a["agent"] == agent), None)


def test_a_claude_agent_on_a_host_is_started_asked_and_stopped(
    sshd: SshServer, anthropic: FakeAnthropic, isolated_home: Path, claude_bin: Path
) -> None:
    assert anthropic.server is not None
    home, workdir = sshd.remote / "home", sshd.remote / "work"
    workdir.mkdir(exist_ok=True)
    env = claude_env(anthropic.server.url, home, {"CLAUDE_CODE_MAX_RETRIES": "0"})
    seed_home(home, [workdir], key=env["ANTHROPIC_API_KEY"])
    settings = [f"export {k}={shlex.quote(v)}" for k, v in env.items() if k != "HOME"]
    settings.append(f"export PATH={shlex.quote(str(sshd.remote / 'bin') + ':' + os.environ['PATH'])}")  # its node
    (sshd.remote / "env").write_text("\n".join(settings) + "\n")
    model = {"provider": "claude", "model": "claude-sonnet-4-5", "command": str(claude_bin), "working_dir": str(workdir)}
    write_agent(home / "agents", "rc", model)
    write_config({"hosts": {"box": sshd.host(agents_dir="~/agents")}})
    assert "ANTHROPIC_BASE_URL" not in os.environ  # this side has no API to send, and sends no variable anyway
    anthropic.push(text_reply("Ready."), text_reply("The answer is 42."))
    try:
        checked = run_cli_inprocess("hosts", "check", "box", "--json")
        assert checked.returncode == 0, checked.stdout  # claude is on the host's PATH: nothing missing
        assert json.loads(checked.stdout)["agents"] == {"rc": "claude"}

        up = run_cli("tmux", "up", "rc", "--host", "box", "--wait", "90", timeout=180)
        assert up.returncode == 0, up.stderr
        wait_for(lambda: (remote_agent("rc") or {}).get("state") == "waiting", timeout=90, what="rc waiting on box", every=0.5)
        shown = remote_agent("rc")
        assert shown is not None and shown["provider"] == "claude" and shown["running"] is True

        prompt = 'What\'s "$HOME" `id` $(id)?\nTwo lines; \\ and *.'
        answer = run_cli("send", "rc", prompt, "--host", "box", "--wait", "--json", timeout=180)
        assert answer.returncode == 0, answer.stderr
        assert json.loads(answer.stdout)["answer"] == "The answer is 42."
        asked = json.dumps(anthropic.message_requests()[-1].body)
        assert json.dumps(prompt)[1:-1] in asked  # the model got the prompt as written

        stop = run_cli("stop", "rc", "--host", "box", "--json")
        assert stop.returncode == 0 and json.loads(stop.stdout)["ended"] is True, stop.stderr
        wait_for(lambda: (remote_agent("rc") or {}).get("state") == "stopped", what="rc stopped on box", every=0.5)
    finally:
        sshd.kill_remote_tmux()
