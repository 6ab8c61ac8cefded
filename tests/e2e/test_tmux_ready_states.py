"""`starting` until the CLI reports it is up, `asking` when it waits on its own screen, Gemini's permission prompts.

Real CLIs in a private tmux server started by `tmux up`, against their fake APIs on 127.0.0.1; the panes are
read with `capture-pane` and the states with `status --json`. The bounded time (`ready_timeout`) is injected
through the config directory's `config.yaml`, never waited for by a fixed sleep.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.fakeapi import gemini as gfake
from agentlaunch.fakeapi.anthropic import FakeAnthropic, claude_env, text_reply
from testbed.agent_files import write_agent
from testbed.claude_tui import seed_home
from testbed.clis import ensure_cli
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.codex_tui_home import codex_tui_env
from tests.support.gemini_process import one_gemini_process
from tests.support.required import need
from tests.support.waits import turn_over, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

need("tmux")


def tmux(socket: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True, check=True).stdout


def pane_of(socket: str, agent: str) -> str:
    rows = tmux(socket, "list-panes", "-s", "-t", "=agentlaunch", "-F", "#{@agentlaunch_agent}\t#{pane_id}")
    for line in rows.splitlines():
        name, pane = line.split("\t")
        if name == agent:
            return pane
    raise AssertionError(f"no pane for {agent}")


def screen(socket: str, pane: str) -> str:
    return tmux(socket, "capture-pane", "-p", "-J", "-t", pane)


def shows(socket: str, pane: str, text: str, timeout: float) -> None:
    """Wait until the pane shows ``text``; fail with what it shows instead."""
    try:
        wait_for(lambda: text in screen(socket, pane), timeout=timeout, what=repr(text))
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the pane shows:\n{screen(socket, pane)}") from None


def record(env: dict[str, str], cwd: Path, agent: str) -> dict[str, Any]:
    records = json.loads(run_cli_inprocess("status", "--json", env=env, cwd=cwd, timeout=60).stdout)
    return next((r for r in records if r.get("agent") == agent), {})


def needs_you(socket: str, pane: str) -> str:
    return tmux(socket, "display-message", "-p", "-t", pane, "#{@agentlaunch_needs_you}").strip()


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "config"
    folder.mkdir()
    return folder


def test_a_claude_stopped_on_its_trust_dialog_is_starting_then_asking_with_the_needs_you_flag(
    socket: str,
    anthropic: FakeAnthropic,
    isolated_home: Path,
    agents_dir: Path,
    workdir: Path,
    claude_bin: Path,
    config_dir: Path,
) -> None:
    # The folder is not trusted: Claude Code opens its trust dialog and runs no hook until someone answers.
    # notify_after: the end of a turn that took 30 s (the default) is flagged too, and a loaded machine can take that
    # long: this test reads asking's flag only.
    (config_dir / "config.yaml").write_text("ready_timeout: 4\nnotify_after: 3600\n")
    api = anthropic
    if True:  # one block: the test reads as the person's steps
        assert api.server is not None
        env = claude_env(api.server.url, isolated_home, {"CLAUDE_CODE_MAX_RETRIES": "0"})
        seed_home(isolated_home, [], key=env["ANTHROPIC_API_KEY"])
        env.update(AGENTLAUNCH_AGENTS_DIR=str(agents_dir), AGENTLAUNCH_CONFIG_DIR=str(config_dir))
        write_agent(
            agents_dir,
            "shy",
            {"provider": "claude", "model": "claude-sonnet-4-5", "command": str(claude_bin), "working_dir": str(workdir)},
        )
        api.push(text_reply("Ready."))
        up = run_cli("tmux", "up", "shy", "--socket", socket, "--no-attach", "--wait", "60", env=env, cwd=workdir, timeout=120)
        err = up.stderr.decode()
        # Before: "started (waiting)" at once, although Claude Code waited on its dialog. Now: asking, said so.
        assert up.returncode == 0, err
        assert "started (asking)" in err, err
        pane = pane_of(socket, "shy")
        assert "trust" in screen(socket, pane).lower()
        shown = record(env, workdir, "shy")
        assert shown["state"] == "asking"
        assert needs_you(socket, pane) == "shy asking"
        # The person answers the dialog: Claude Code reports (SessionStart, its first prompt) and the flag goes.
        tmux(socket, "send-keys", "-t", pane, "Down")  # the cursor starts on "No, exit"
        shows(socket, pane, "❯ Yes, I trust this folder", 30)
        tmux(socket, "send-keys", "-t", pane, "Enter")
        try:
            wait_for(lambda: record(env, workdir, "shy").get("state") == "waiting", timeout=90, what="waiting after the dialog")
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {record(env, workdir, 'shy')}\n{screen(socket, pane)}") from None
        wait_for(lambda: record(env, workdir, "shy").get("turns"), timeout=60, what="the startup message's turn counted")
        assert needs_you(socket, pane) == "", record(env, workdir, "shy")
        assert run_cli("tmux", "down", "--socket", socket, env=env, cwd=workdir, timeout=120).returncode == 0


@pytest.fixture
def gemini_team(
    request: pytest.FixtureRequest, isolated_home: Path, agents_dir: Path, config_dir: Path
) -> Iterator[tuple[gfake.GeminiFake, dict[str, str], Path]]:
    binary = ensure_cli("gemini")
    with tempfile.TemporaryDirectory(prefix="alrd-") as folder, gfake.GeminiFake() as api:
        root = Path(folder)
        home, work = root / "home", root / "work"
        home.mkdir()
        work.mkdir()
        env = gfake.prepare_gemini_home(home, api.base_url, max_attempts=1, no_relaunch=one_gemini_process(request))
        # The user's own settings hold a hook of theirs and comments: it keeps running, their file is only read.
        own = home / ".gemini" / "settings.json"
        theirs = json.loads(own.read_text())
        log = root / "users-hook.log"
        theirs["hooks"] = {"BeforeTool": [{"hooks": [{"type": "command", "command": f"cat >> {log}"}]}]}
        own.write_text("// the user's settings\n" + json.dumps(theirs, indent=2))
        env.update(
            TERM="xterm-256color",
            AGENTLAUNCH_TITLE="0",
            AGENTLAUNCH_AGENTS_DIR=str(agents_dir),
            AGENTLAUNCH_CONFIG_DIR=str(config_dir),
        )
        env.update({k: v for k, v in os.environ.items() if k.startswith("AGENTLAUNCH_") and k not in env})
        write_agent(
            agents_dir,
            "gem",
            {
                "provider": "gemini",
                "model": "gemini-2.5-pro",
                "command": str(binary),
                "working_dir": str(work),
                "startup": "STARTUP-4410: say hello",
            },
        )
        yield api, env, work
        assert "the user's settings" in own.read_text(), "the user's own settings.json is never written"


def test_gemini_permission_prompt_is_asking_end_to_end_and_a_resumed_gemini_is_ready(
    socket: str, gemini_team: tuple[gfake.GeminiFake, dict[str, str], Path], config_dir: Path
) -> None:
    api, env, work = gemini_team
    # notify_after: the end of a turn that took 30 s (the default) is flagged too, and a loaded machine can take that
    # long: this test reads asking's flag only.
    (config_dir / "config.yaml").write_text("ready_timeout: 25\nnotify_after: 3600\n")
    usage = gfake.GeminiUsage(prompt=900, output=7)
    api.script.push(gfake.TextReply("Hello, ready.", usage))
    api.script.push(gfake.FunctionCallReply("run_shell_command", {"command": "echo hi > out.txt", "description": "w"}, usage))
    api.script.push(gfake.TextReply("Wrote it.", usage))
    up = run_cli("tmux", "up", "gem", "--socket", socket, "--no-attach", "--wait", "90", env=env, cwd=work, timeout=150)
    assert up.returncode == 0, up.stderr.decode()
    pane = pane_of(socket, "gem")
    wait_for(lambda: turn_over(record(env, work, "gem")), timeout=90, what="the startup turn over")
    tmux(socket, "send-keys", "-t", pane, "-l", "write the file")
    shows(socket, pane, "write the file", 30)
    sent = len(api.model_requests)
    for _ in range(3):  # Gemini 0.61 under load keeps an Enter read with the typed keys in its box (taken as a paste)
        tmux(socket, "send-keys", "-t", pane, "Enter")
        with contextlib.suppress(AssertionError):  # pressed again only while no call was made: no prompt to answer yet
            wait_for(lambda: len(api.model_requests) > sent, timeout=5, what="the prompt's call")
            break
    # Before: the state stayed `tool` while Gemini's permission prompt waited. Now its Notification hook says asking.
    shows(socket, pane, "Allow execution", 60)
    wait_for(lambda: record(env, work, "gem").get("state") == "asking", timeout=30, what="status --json: asking")
    assert needs_you(socket, pane) == "gem asking"
    tmux(socket, "send-keys", "-t", pane, "Enter")  # "Allow once"
    wait_for(lambda: (work / "out.txt").exists(), timeout=60, what="the allowed tool ran")
    wait_for(lambda: record(env, work, "gem").get("state") == "waiting", timeout=60, what="the turn over")
    assert needs_you(socket, pane) == ""
    assert "Wrote it." in screen(socket, pane)
    # The user's own hook ran beside agentlaunch's.
    log = work.parent / "users-hook.log"
    assert log.exists() and "run_shell_command" in log.read_text()
    down = run_cli("tmux", "down", "--socket", socket, env=env, cwd=work, timeout=120)
    assert down.returncode == 0, down.stderr.decode()
    # Resumed, Gemini writes nothing until the next prompt: its SessionStart hook says it is up (not asking).
    resumed = run_cli(
        "tmux", "up", "--resume", "gem", "--socket", socket, "--no-attach", "--wait", "90", env=env, cwd=work, timeout=150
    )
    err = resumed.stderr.decode()
    assert resumed.returncode == 0, err
    assert "started (waiting)" in err, err
    assert record(env, work, "gem").get("state") == "waiting"
    assert run_cli("tmux", "down", "--socket", socket, env=env, cwd=work, timeout=120).returncode == 0


def test_codex_new_and_resumed_report_that_they_are_up(
    socket: str, isolated_home: Path, agents_dir: Path, config_dir: Path
) -> None:
    from agentlaunch.fakeapi import responses as cfake

    binary = ensure_cli("codex")
    (config_dir / "config.yaml").write_text("ready_timeout: 25\n")
    with tempfile.TemporaryDirectory(prefix="alrc-") as folder, cfake.ResponsesFake() as api:
        home, work = Path(folder) / "home", Path(folder) / "work"
        home.mkdir()
        work.mkdir()
        env = codex_tui_env(home, api.server.url, [work], agents_dir, config_dir)
        write_agent(
            agents_dir,
            "cdx",
            {
                "provider": "codex",
                "model": "gpt-5.5",
                "command": str(binary),
                "working_dir": str(work),
                "startup": "STARTUP-5510: say hello",
            },
        )
        usage = cfake.ResponsesUsage(input_tokens=900, cached_tokens=0, output_tokens=7)
        for _ in range(4):  # the startup turn, and a call Codex makes of its own (the thread's title)
            api.script.push(cfake.TextReply("Hello from Codex.", usage))
        up = run_cli("tmux", "up", "cdx", "--socket", socket, "--no-attach", "--wait", "90", env=env, cwd=work, timeout=150)
        assert up.returncode == 0, up.stderr.decode()
        wait_for(lambda: turn_over(record(env, work, "cdx")), timeout=90, what="the startup turn over")
        assert run_cli("tmux", "down", "--socket", socket, env=env, cwd=work, timeout=120).returncode == 0
        resumed = run_cli(
            "tmux", "up", "--resume", "cdx", "--socket", socket, "--no-attach", "--wait", "90", env=env, cwd=work, timeout=150
        )
        err = resumed.stderr.decode()
        assert resumed.returncode == 0, err
        pane = pane_of(socket, "cdx")
        assert "started (waiting)" in err, f"{err}\n{screen(socket, pane)}"
        assert run_cli("tmux", "down", "--socket", socket, env=env, cwd=work, timeout=120).returncode == 0
