"""An agent with skills runs Claude Code with a folder of its own (``CLAUDE_CONFIG_DIR``), and hides nothing from
Claude Code's own tools: the real CLI against the fake API on 127.0.0.1, in the test's HOME.

A user whose first Claude Code session is through agentlaunch has no ``~/.claude``: the session's transcript
must still land in ``~/.claude/projects``, where a bare ``claude --resume`` (its own picker, on a PTY) and
ccusage (pinned below, from npm) find it. A ``~/.claude.json`` the user writes after the first launch (here an
MCP server added with ``claude mcp add --scope user``) reaches the agent's next launch. Launches of one agent at
once all run, and every transcript lands in the user's folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch.fakeapi.anthropic import FakeAnthropic, claude_env, first_user_text, text_reply
from agentlaunch.providers import claude_home
from testbed import claude_tui, pty_screen
from testbed.agent_files import write_agent
from testbed.clis import _install, ensure_cli, install_root
from tests.support.cli_runs import run_cli
from tests.support.git_repo import run_at_once

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

CCUSAGE = "20.0.24"
"""ccusage's pinned version (20.0.26 names a native package npm does not have for linux-x64)."""
MCP_PROBE = Path(__file__).resolve().parents[1] / "support" / "mcp_probe.py"


def ensure_ccusage() -> Path:
    """The ccusage binary at :data:`CCUSAGE`, installed into the test CLI cache beside the provider CLIs."""
    root = install_root("ccusage", CCUSAGE)
    binary = root / "node_modules" / ".bin" / "ccusage"
    _install(f"ccusage@{CCUSAGE}", CCUSAGE, root, binary)
    return binary


class Agent:
    """The agent ``alpha`` (one skill: its own ``CLAUDE_CONFIG_DIR``) on the real claude, in a HOME with no Claude files."""

    def __init__(self, api: FakeAnthropic, home: Path, agents_dir: Path, workdir: Path) -> None:
        assert api.server is not None
        self.api, self.home, self.workdir = api, home, workdir
        skill = agents_dir / "skills" / "probe-skill"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text("---\nname: probe-skill\ndescription: PROBE-DESC\n---\nbody\n")
        write_agent(
            agents_dir,
            "alpha",
            {
                "provider": "claude",
                "model": "claude-sonnet-4-5",
                "command": str(ensure_cli("claude")),
                "working_dir": str(workdir),
                "skills": ["probe-skill"],
                "startup": "FIRST-SESSION-4417 say hello",
            },
        )
        self.launch_env = {"CLAUDE_CODE_MAX_RETRIES": "0", "AGENTLAUNCH_AGENTS_DIR": str(agents_dir)}
        self.env = {**os.environ, **claude_env(api.server.url, home, self.launch_env)}
        self.folder = claude_home.home_path(home / "state", "alpha")

    def run(self, prompt: str) -> None:
        self.api.push(text_reply(f"answer to {prompt}"))
        done = run_cli("run", "alpha", prompt, cwd=self.workdir, env=self.env, timeout=240)
        assert done.returncode == 0, done.stderr.decode()

    def transcripts(self) -> dict[str, str]:
        """Session id -> transcript text, of every transcript in the user's own ``~/.claude/projects``."""
        return {p.stem: p.read_text() for p in (self.home / ".claude" / "projects").glob("*/*.jsonl")}


@pytest.fixture
def agent(isolated_home: Path, agents_dir: Path, workdir: Path) -> Iterator[Agent]:
    assert not (isolated_home / ".claude").exists() and not (isolated_home / ".claude.json").exists()
    api = FakeAnthropic()
    with api.serve():
        yield Agent(api, isolated_home, agents_dir, workdir)


def test_a_first_session_through_agentlaunch_is_in_the_users_projects_for_claude_resume_and_ccusage(agent: Agent) -> None:
    # A set-up user of an API key has a ~/.claude.json (onboarding done, the key approved) and no ~/.claude yet.
    claude_tui.seed_home(agent.home, [agent.workdir])
    assert agent.api.server is not None
    keep = {k: v for k, v in os.environ.items() if k.startswith(("AGENTLAUNCH_", "XDG_"))}
    env = claude_tui.tui_env(agent.api.server.url, agent.home, {**keep, **agent.launch_env, "AGENTLAUNCH_TITLE": "0"})
    agent.api.push(text_reply("STARTUP-ANSWER"), text_reply("TYPED-ANSWER"))
    argv = [sys.executable, "-m", "agentlaunch", "run", "alpha"]
    with pty_screen.running(argv, env, agent.workdir) as screen:  # Claude Code's own interface, through agentlaunch
        screen.wait_for(lambda text: "STARTUP-ANSWER" in text, 90, "the startup turn's answer")
        screen.type_when_taken("TYPED-PROMPT-2208")
        screen.submit(lambda: "TYPED-ANSWER" in screen.text())
        screen.wait_for(lambda text: "TYPED-ANSWER" in text, 60, "the typed prompt's answer")
        screen.until(lambda: "TYPED-ANSWER" in "".join(agent.transcripts().values()), 30, "the answer in the transcript")
        claude_tui.quit_with_ctrl_c(screen)
    (session,) = agent.transcripts()
    assert "FIRST-SESSION-4417" in agent.transcripts()[session]
    assert "TYPED-PROMPT-2208" in (agent.home / ".claude" / "history.jsonl").read_text()  # the up arrow's history
    assert sorted(p.name for p in agent.folder.iterdir() if not p.is_symlink()) == ["skills"]  # nothing kept private

    ccusage = ensure_ccusage()
    counted = subprocess.run(
        [str(ccusage), "session", "--json", "--offline"], env=agent.env, capture_output=True, text=True, timeout=120
    )
    assert counted.returncode == 0, counted.stderr
    assert [s["period"] for s in json.loads(counted.stdout)["session"]] == [session]

    # Claude Code's own picker, opened in that folder without agentlaunch
    plain = claude_tui.tui_env(agent.api.server.url, agent.home)
    with pty_screen.running([str(ensure_cli("claude")), "--resume"], plain, agent.workdir) as screen:
        # the picker titles a session with its last prompt
        screen.wait_for(lambda text: "TYPED-PROMPT-2208" in text, 60, "the first session in claude --resume's picker")
        screen.child.send("\x1b")


def test_an_mcp_server_the_user_adds_after_the_first_launch_reaches_the_agent(agent: Agent) -> None:
    agent.run("before")
    assert not any("probe_ping" in r.raw.decode() for r in agent.api.message_requests())
    user_env = {k: v for k, v in agent.env.items() if k != "CLAUDE_CONFIG_DIR"}
    added = subprocess.run(
        [str(ensure_cli("claude")), "mcp", "add", "--scope", "user", "probe", "--", sys.executable, str(MCP_PROBE)],
        env=user_env,
        cwd=agent.workdir,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert added.returncode == 0, added.stderr
    assert "probe" in json.loads((agent.home / ".claude.json").read_text())["mcpServers"]
    agent.run("after")
    last = [r for r in agent.api.message_requests() if "after" in first_user_text(r.body)]
    # Claude Code 2.1.332 defers MCP tools: it names them (once the server answered tools/list) in a reminder
    assert last and "mcp__probe__probe_ping" in last[-1].raw.decode()


def test_launches_of_one_agent_at_once_all_run_and_land_in_the_users_projects(agent: Agent) -> None:
    launches = 4
    for i in range(launches):
        agent.api.push(text_reply(f"answer {i}"))
    results = run_at_once(["alpha"] * launches, "AT-ONCE-PROMPT", agent.workdir, agent.env)
    assert [code for code, _out, _err in results] == [0] * launches, [err for _c, _o, err in results]
    assert len(agent.transcripts()) == launches
    assert all("AT-ONCE-PROMPT" in text for text in agent.transcripts().values())
    assert sorted(p.name for p in agent.folder.iterdir() if not p.is_symlink()) == ["skills"]
