"""What a prompt becomes on the headless and line-chat path of the real CLIs (docs/scripting.md's table).

Claude Code takes it as a stream-json user message, Codex as `codex exec`'s argument, Gemini as `gemini -p`'s.
Measured on the pinned CLIs: no path has a shell mode (`!touch FILE` reaches the model as written and makes no
file), Claude Code runs a leading `/` as a slash command or skill (`/cost` answers with no model call) and Gemini
runs `/init`: agentlaunch refuses a leading `/` there (exit 2), and `send --command` sends one to Claude Code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pexpect
import pytest

from agentlaunch.fakeapi.anthropic import FakeAnthropic, claude_env, text_reply
from tests.e2e.test_run_claude import last_user_text
from tests.e2e.test_run_codex_gemini import Provider, provider  # noqa: F401 (the fixture)
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.waits import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


def chat_ready(env: dict[str, str], agent: str, turns: int) -> None:
    """Wait until ``agent``'s line chat waits at its prompt with its socket named, ``turns`` turns done."""

    def check() -> bool:
        records = json.loads(run_cli_inprocess("status", "--json", env=env).stdout)
        r = next((r for r in records if r.get("agent") == agent), {})
        return bool(r.get("control")) and r.get("state") == "waiting" and r.get("turns", 0) >= turns

    wait_for(check, timeout=120, what=f"{agent}'s line chat")


@pytest.fixture
def claude_run_env(anthropic: FakeAnthropic, agents_dir: Path, isolated_home: Path) -> dict[str, str]:
    assert anthropic.server is not None
    env = claude_env(anthropic.server.url, isolated_home, {"CLAUDE_CODE_MAX_RETRIES": "0"})
    env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
    return env


@pytest.fixture
def line_chat(request: pytest.FixtureRequest, workdir: Path) -> Iterator[Callable[[str, dict[str, str]], pexpect.spawn]]:
    """Start ``agentlaunch run AGENT --line`` at a terminal; ended with Ctrl-D after the test."""
    spawned: list[pexpect.spawn] = []

    def start(agent: str, env: dict[str, str]) -> pexpect.spawn:
        full = dict(os.environ)
        full.update(env)
        child = pexpect.spawn(
            sys.executable,
            ["-m", "agentlaunch", "run", agent, "--line"],
            cwd=str(workdir),
            env=full,
            encoding="utf-8",
            timeout=120,
            dimensions=(40, 160),
        )
        spawned.append(child)
        child.expect("› ")
        return child

    yield start
    for child in spawned:
        if child.isalive():
            child.sendcontrol("d")
            child.expect(pexpect.EOF)
        child.close()


def send(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return run_cli("send", *args, env=env, timeout=180)


# -- Claude Code: a stream-json user message ---------------------------------------------------------


def test_claude_headless_refuses_a_slash_command_and_hands_a_bang_to_the_model(
    anthropic: FakeAnthropic, claude_run_env: dict[str, str], claude_agent: str, workdir: Path
) -> None:
    anthropic.push(text_reply("one"), text_reply("two"))
    assert run_cli("run", claude_agent, "first", env=claude_run_env, cwd=workdir).returncode == 0
    before = len(anthropic.message_requests())
    refused = run_cli("run", claude_agent, "-c", "/cost", env=claude_run_env, cwd=workdir)
    assert refused.returncode == 2, refused.stderr.decode()
    assert b"runs it as a slash command" in refused.stderr and refused.stdout == b""
    assert len(anthropic.message_requests()) == before
    bang = run_cli("run", claude_agent, "-c", "!touch BANG", env=claude_run_env, cwd=workdir)
    assert bang.returncode == 0 and bang.stdout == b"two\n", bang.stderr.decode()
    assert last_user_text(anthropic.message_requests()[-1].body) == "!touch BANG"
    assert not (workdir / "BANG").exists()


def test_claude_line_chat_send_refuses_a_slash_command_delivers_a_bang_and_runs_command(
    anthropic: FakeAnthropic,
    claude_run_env: dict[str, str],
    claude_agent: str,
    workdir: Path,
    line_chat: Callable[[str, dict[str, str]], pexpect.spawn],
) -> None:
    anthropic.push(text_reply("one"), text_reply("two"))
    chat = line_chat(claude_agent, claude_run_env)
    chat.sendline("first")
    chat.expect("one")
    chat_ready(claude_run_env, claude_agent, 1)
    refused = send(claude_run_env, claude_agent, "/cost", "--wait")
    assert refused.returncode == 2 and b"runs it as a slash command" in refused.stderr, refused.stderr
    assert len(anthropic.message_requests()) == 1
    bang = send(claude_run_env, claude_agent, "!touch BANG", "--wait")
    assert bang.returncode == 0 and bang.stdout == b"two\n", bang.stderr
    assert last_user_text(anthropic.message_requests()[-1].body) == "!touch BANG"
    assert not (workdir / "BANG").exists()
    chat_ready(claude_run_env, claude_agent, 2)
    command = send(claude_run_env, claude_agent, "/cost", "--command", "--wait")
    assert command.returncode == 0, command.stderr
    assert b"cost" in command.stdout.lower(), command.stdout  # Claude Code's own /cost text is the answer
    assert len(anthropic.message_requests()) == 2, "Claude Code answers /cost without a model call"


# -- Codex and Gemini: a fresh CLI per turn, the prompt as its argument --------------------------------


def test_codex_and_gemini_headless_hand_a_bang_and_a_dash_to_the_model_and_gemini_refuses_a_slash(
    provider: Provider,  # noqa: F811
    workdir: Path,
) -> None:
    p = provider
    for _ in range(3):
        p.push_text("ok")
    assert p.run("run", "planner", "first", cwd=workdir).returncode == 0
    for text in ("!touch BANG", "-dash first"):  # "-dash first" was read as options before it went after "--"
        result = p.run("run", "planner", "-c", "-p", text, cwd=workdir)
        assert result.returncode == 0, result.stderr.decode()
        assert p.user_texts(p.calls()[-1].body)[-1] == text
    assert not (workdir / "BANG").exists()
    before = len(p.calls())
    init = p.run("run", "planner", "-c", "/init", cwd=workdir)
    if p.name == "gemini":  # gemini -p runs /init (its own prompt instead of the text)
        assert init.returncode == 2 and b"runs it as a slash command" in init.stderr, init.stderr.decode()
        assert len(p.calls()) == before
    else:  # codex exec has no slash commands
        assert init.returncode == 0, init.stderr.decode()
        assert p.user_texts(p.calls()[-1].body)[-1] == "/init"


def test_codex_and_gemini_line_chat_send_delivers_a_bang_and_refuses_or_takes_a_command(
    provider: Provider,  # noqa: F811
    workdir: Path,
    line_chat: Callable[[str, dict[str, str]], pexpect.spawn],
) -> None:
    p = provider
    p.push_text("one")
    p.push_text("two")
    chat = line_chat("planner", p.env)
    chat.sendline("first")
    chat.expect("one")
    chat_ready(p.env, "planner", 1)
    bang = send(p.env, "planner", "!touch BANG", "--wait")
    assert bang.returncode == 0 and bang.stdout == b"two\n", bang.stderr
    assert p.user_texts(p.calls()[-1].body)[-1] == "!touch BANG"
    assert not (workdir / "BANG").exists()
    chat_ready(p.env, "planner", 2)
    p.push_text("three")
    before = len(p.calls())
    slash = send(p.env, "planner", "/init", "--wait")
    if p.name == "gemini":  # gemini -p would run /init
        assert slash.returncode == 2 and b"runs it as a slash command" in slash.stderr, slash.stderr
        assert len(p.calls()) == before
        chat_ready(p.env, "planner", 2)
        command = send(p.env, "planner", "/about", "--command", "--wait")  # sent as it is: gemini -p "/about"
        assert command.returncode == 0, command.stderr
        assert p.user_texts(p.calls()[-1].body)[-1] == "/about", "gemini -p hands /about to the model"
    else:  # codex exec has no slash commands: the text reaches the model, and --command has nothing to run
        assert slash.returncode == 0 and slash.stdout == b"three\n", slash.stderr
        assert p.user_texts(p.calls()[-1].body)[-1] == "/init"
        chat_ready(p.env, "planner", 3)
        command = send(p.env, "planner", "/about", "--command", "--wait")
        assert command.returncode == 2 and b"runs no slash command" in command.stderr, command.stderr
        assert len(p.calls()) == before + 1
