"""The deck's preview shows an asking agent's question, for each CLI, in a pane taller than the preview.

Real CLIs in a private tmux server started by `tmux up` (panes of 220x60, `tmux up`'s own size), against their
fake APIs on 127.0.0.1: Claude Code asks "Do you want to proceed?" for a Bash call (two Claude agents in the
tiled layout, their window made 100 rows tall), Codex asks "Would you like to run the following command?" for an
escalated command, Gemini asks "Allow execution" for a shell command (both in the windows layout). The deck runs
in a session of the same server, smaller than the agents' panes (its preview has fewer rows than the row the
question is on), and is read with capture-pane: the question shows in its preview, and the record's question (the
tool and its input, from Claude Code's PermissionRequest hook, Codex's approval request, Gemini's ToolPermission
notification) on its message line.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

import pytest

from agentlaunch.fakeapi import gemini as gfake
from agentlaunch.fakeapi import responses as cfake
from agentlaunch.fakeapi.anthropic import FakeAnthropic, claude_env, text_reply, tool_reply
from testbed.agent_files import write_agent
from testbed.claude_tui import seed_home
from testbed.clis import ensure_cli
from testbed.native_tui import TitledResponsesFake, seed_codex_home
from tests.e2e.test_deck_e2e import deck_screen, shows
from tests.e2e.test_native_run_codex_gemini import environment
from tests.e2e.test_tmux_claude import claude_agent
from tests.e2e.test_tmux_ready_states import config_dir, gemini_team, pane_of, record, tmux  # noqa: F401 - fixtures
from tests.e2e.test_tmux_ready_states import shows as pane_shows
from tests.support.cli_runs import run_cli
from tests.support.waits import turn_over, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(400)]

DECK_SIZE = (110, 30)  # columns, rows: a preview of about 17 rows, under the agents' 60-row panes
ESCALATED = {"cmd": "touch made-by-preview", "sandbox_permissions": "require_escalated", "justification": "a test"}


def open_deck(socket: str, env: dict[str, str], cwd: Path) -> None:
    """The deck in its own session of the agents' server, smaller than their panes."""
    full = {**os.environ, **env}
    tmux(
        socket,
        "new-session",
        "-d",
        "-s",
        "deck",
        "-x",
        str(DECK_SIZE[0]),
        "-y",
        str(DECK_SIZE[1]),
        "-c",
        str(cwd),
        *[f"-e{k}={v}" for k, v in full.items() if k.startswith(("AGENTLAUNCH_", "HOME", "XDG_"))],
        sys.executable,
        "-m",
        "agentlaunch",
        "deck",
    )


def question_row(socket: str, pane: str, question: str) -> int:
    """The row of the agent's pane the question is on (its first row is 0)."""
    rows = tmux(socket, "capture-pane", "-p", "-t", pane).split("\n")
    return next(i for i, line in enumerate(rows) if question in line)


def preview_rows() -> int:
    return DECK_SIZE[1]  # an upper bound: the preview has fewer rows than the deck has


def select(socket: str, agent: str) -> None:
    """Filter the deck's list to ``agent`` (it is then the selected row)."""
    tmux(socket, "send-keys", "-t", "=deck:", "/")
    shows(socket, "filter (empty: all):")
    tmux(socket, "send-keys", "-t", "=deck:", "-l", agent)
    tmux(socket, "send-keys", "-t", "=deck:", "Enter")
    shows(socket, f"{agent} · tmux")


def preview_shows(socket: str, text: str, timeout: float = 60) -> None:
    """``text`` on a row of the deck's preview (below its list): the capture of the deck's own pane."""
    shows(socket, text, timeout)
    lines = deck_screen(socket).splitlines()
    title = next(i for i, line in enumerate(lines) if " · tmux " in line)
    assert any(text in line for line in lines[title + 1 :]), deck_screen(socket)


def test_claude_codes_question_in_a_tall_tiled_pane_shows_in_the_deck_with_its_command(
    socket: str,
    anthropic: FakeAnthropic,
    isolated_home: Path,
    agents_dir: Path,
    workdir: Path,
    claude_bin: Path,
    config_dir: Path,  # noqa: F811 - the fixture
) -> None:
    (config_dir / "config.yaml").write_text("notify_after: 3600\n")
    assert anthropic.server is not None
    env = claude_env(anthropic.server.url, isolated_home, {"CLAUDE_CODE_MAX_RETRIES": "0"})
    seed_home(isolated_home, [workdir], key=env["ANTHROPIC_API_KEY"])
    env.update(AGENTLAUNCH_AGENTS_DIR=str(agents_dir), AGENTLAUNCH_CONFIG_DIR=str(config_dir), AGENTLAUNCH_TMUX_SOCKET=socket)
    for name in ("asker", "calm"):
        claude_agent(agents_dir, name, claude_bin, workdir, startup=f"STARTUP {name}: say ready")
    anthropic.push(text_reply("Ready."), text_reply("Ready."))
    up = run_cli(
        "tmux",
        "up",
        "asker",
        "calm",
        "--layout",
        "tiled",
        "--socket",
        socket,
        "--no-attach",
        "--wait",
        "90",
        env=env,
        cwd=workdir,
        timeout=200,
    )
    assert up.returncode == 0, up.stderr.decode()
    for name in ("asker", "calm"):
        wait_for(lambda name=name: turn_over(record(env, workdir, name)), timeout=90, what=f"{name}'s startup turn over")
    pane = pane_of(socket, "asker")
    # Two tiled panes share `tmux up`'s 60 rows: the window made taller, each pane is taller than the deck.
    tmux(socket, "resize-window", "-t", pane, "-x", "220", "-y", "100")
    assert int(tmux(socket, "display-message", "-p", "-t", pane, "#{pane_height}")) >= 45

    anthropic.push(tool_reply("Bash", {"command": "touch preview-4242.txt", "description": "Make a file"}), text_reply("Done."))
    sent = run_cli("send", "asker", "print the word", env=env, cwd=workdir, timeout=60)
    assert sent.returncode == 0, sent.stderr.decode()
    pane_shows(socket, pane, "Do you want to proceed?", 90)
    asking = wait_for(lambda: (r := record(env, workdir, "asker")).get("state") == "asking" and r, timeout=30, what="asking")
    assert (asking["state_reason"], asking["state_source"]) == ("Bash: touch preview-4242.txt", "hooks"), asking
    # Claude Code's own report says blocked too (read in tmux: the relay answered its probe); whichever of the two
    # came first, the row keeps the hook's question.
    blocked = wait_for(
        lambda: ((r := record(env, workdir, "asker")).get("cli_report") or {}).get("state") == "blocked" and r,
        timeout=30,
        what="Claude Code's own blocked report",
    )
    assert blocked["cli_report"]["kind"] == "permission", blocked
    assert (blocked["state"], blocked["state_reason"], blocked["state_source"]) == (
        "asking",
        "Bash: touch preview-4242.txt",
        "hooks",
    ), blocked
    # Before: the preview showed the pane's first rows; the question is further down than the preview is tall.
    assert question_row(socket, pane, "Do you want to proceed?") >= preview_rows()

    open_deck(socket, env, workdir)
    shows(socket, "asker")
    select(socket, "asker")
    preview_shows(socket, "Do you want to proceed?")
    shows(socket, "⚠ asker is asking: Bash: touch preview-4242.txt")
    tmux(socket, "kill-session", "-t", "=deck")


def test_codexs_approval_in_a_tall_pane_shows_in_the_deck_with_its_command(
    socket: str,
    agents_dir: Path,
    config_dir: Path,  # noqa: F811 - the fixture
) -> None:
    (config_dir / "config.yaml").write_text("ready_timeout: 25\nnotify_after: 3600\n")
    script = cfake.ResponsesScript(
        [
            cfake.TextReply("STARTUP-ANSWER", cfake.ResponsesUsage(9000, 8000, 7, 3)),
            cfake.ShellCallReply(arguments=ESCALATED, usage=cfake.ResponsesUsage(9100, 9000, 5, 0)),
            cfake.TextReply("TOOL-ANSWER", cfake.ResponsesUsage(9200, 9100, 4, 0)),
        ]
    )
    with tempfile.TemporaryDirectory(prefix="aldp-") as folder, TitledResponsesFake(script) as api:
        root = Path(folder)
        work = root / "work"
        work.mkdir()
        extra = 'approval_policy = "on-request"\n[tui]\nscreen_reader_detection_done = true\n'
        env = environment(seed_codex_home(root / "home", api.base_url, work, extra=extra), agents_dir)
        env.update(AGENTLAUNCH_CONFIG_DIR=str(config_dir), AGENTLAUNCH_TMUX_SOCKET=socket)
        write_agent(
            agents_dir,
            "cdx",
            {
                "provider": "codex",
                "model": "gpt-5.5",
                "command": str(ensure_cli("codex")),
                "working_dir": str(work),
                "startup": "STARTUP-5510: say hello",
            },
        )
        up = run_cli("tmux", "up", "cdx", "--socket", socket, "--no-attach", "--wait", "90", env=env, cwd=work, timeout=150)
        assert up.returncode == 0, up.stderr.decode()
        wait_for(lambda: turn_over(record(env, work, "cdx")), timeout=90, what="the startup turn over")
        pane = pane_of(socket, "cdx")
        sent = run_cli("send", "cdx", "run the tool please", env=env, cwd=work, timeout=60)
        assert sent.returncode == 0, sent.stderr.decode()
        pane_shows(socket, pane, "Would you like to run", 90)
        asking = wait_for(lambda: (r := record(env, work, "cdx")).get("state") == "asking" and r, timeout=30, what="asking")
        wait_for(
            lambda: record(env, work, "cdx").get("state_reason") == "shell: touch made-by-preview",
            timeout=30,
            what=f"the command as the question (was {asking.get('state_reason')!r})",
        )

        assert question_row(socket, pane, "Would you like to run") >= preview_rows()  # below the preview's height
        open_deck(socket, env, work)
        shows(socket, "cdx")
        select(socket, "cdx")
        preview_shows(socket, "Would you like to run")
        shows(socket, "⚠ cdx is asking: shell: touch made-by-preview")
        tmux(socket, "kill-session", "-t", "=deck")
        assert run_cli("tmux", "down", "--socket", socket, env=env, cwd=work, timeout=120).returncode == 0


def test_geminis_permission_prompt_in_a_tall_pane_shows_in_the_deck(
    socket: str,
    gemini_team: tuple[gfake.GeminiFake, dict[str, str], Path],  # noqa: F811
    config_dir: Path,  # noqa: F811 - fixtures
) -> None:
    api, env, work = gemini_team
    (config_dir / "config.yaml").write_text("ready_timeout: 25\nnotify_after: 3600\n")
    env = {**env, "AGENTLAUNCH_TMUX_SOCKET": socket}
    usage = gfake.GeminiUsage(prompt=900, output=7)
    api.script.push(gfake.TextReply("Hello, ready.", usage))
    api.script.push(gfake.FunctionCallReply("run_shell_command", {"command": "echo hi > out.txt", "description": "w"}, usage))
    api.script.push(gfake.TextReply("Wrote it.", usage))
    up = run_cli("tmux", "up", "gem", "--socket", socket, "--no-attach", "--wait", "90", env=env, cwd=work, timeout=150)
    assert up.returncode == 0, up.stderr.decode()
    pane = pane_of(socket, "gem")
    wait_for(lambda: turn_over(record(env, work, "gem")), timeout=90, what="the startup turn over")
    tmux(socket, "send-keys", "-t", pane, "-l", "write the file")
    pane_shows(socket, pane, "write the file", 30)
    sent = len(api.model_requests)
    for _ in range(3):  # Gemini 0.61 under load keeps an Enter read with the typed keys in its box (taken as a paste)
        tmux(socket, "send-keys", "-t", pane, "Enter")
        with contextlib.suppress(AssertionError):
            wait_for(lambda: len(api.model_requests) > sent, timeout=5, what="the prompt's call")
            break
    pane_shows(socket, pane, "Allow execution", 60)
    asking = wait_for(lambda: (r := record(env, work, "gem")).get("state") == "asking" and r, timeout=30, what="asking")
    assert asking["state_reason"] == "shell: echo hi > out.txt"  # the notification's details: the command

    assert question_row(socket, pane, "Allow execution") >= preview_rows()  # below the preview's height
    open_deck(socket, env, work)
    shows(socket, "gem")
    select(socket, "gem")
    preview_shows(socket, "Allow execution")
    shows(socket, "⚠ gem is asking: shell: echo hi > out.txt")
    tmux(socket, "kill-session", "-t", "=deck")
    assert run_cli("tmux", "down", "--socket", socket, env=env, cwd=work, timeout=120).returncode == 0
