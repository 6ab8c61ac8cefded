"""`agentlaunch run AGENT` of a Codex agent through the app-server agentlaunch owns, on the real Codex 0.171.0.

agentlaunch starts ``codex app-server --listen unix://PATH``, opens the thread on its own connection (the
startup message as the first ``turn/start``), and runs ``codex --remote unix://PATH resume THREAD`` on the PTY
(pexpect; pyte reads the screen), against the scripted fake Responses API on 127.0.0.1 with an isolated
CODEX_HOME. Pinned: the interface shows the startup answer; a typed turn is metered once per call; an approval
makes the state ``asking``; ``send --wait`` goes by ``turn/start`` (a text starting with "!", which the
interface would run as a shell command, reaches the model as written) and prints the answer; ``-c`` resumes the
thread with no startup message; an app-server that cannot start, or dies mid-session, is a clear error.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch.fakeapi import responses as cfake
from testbed.agent_files import write_agent
from testbed.clis import ensure_cli
from testbed.native_tui import TitledResponsesFake, seed_codex_home
from testbed.pty_screen import Screen
from tests.e2e.test_native_run_codex_gemini import Agent, environment, quit_tui, type_prompt, until, usage

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

STARTUP = "STARTUP-5120 look around first."
ESCALATED = {"cmd": "touch made-by-tool", "sandbox_permissions": "require_escalated", "justification": "a test"}


@pytest.fixture
def short_root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="alcr-") as folder:
        yield Path(folder)


def app_servers(root_pid: int) -> list[int]:
    """The ``codex app-server --listen unix://…`` processes among ``root_pid``'s descendants, parents first (npm's
    ``codex`` is a node wrapper running the native binary with the same arguments)."""
    found, todo = [], [root_pid]
    while todo:
        pid = todo.pop()
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            todo.append(child)
            try:
                argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"app-server" in argv and b"--listen" in argv:
                found.append(child)
    return found


def setup(root: Path, agents_dir: Path, api: TitledResponsesFake, command: str | None = None) -> Agent:
    work = root / "work"
    work.mkdir(exist_ok=True)
    write_agent(
        agents_dir,
        "coder",
        {
            "provider": "codex",
            "model": "gpt-5.5",
            "command": command or str(ensure_cli("codex")),
            "working_dir": str(work),
            "startup": STARTUP,
        },
    )
    base = seed_codex_home(root / "home", api.base_url, work, extra='approval_policy = "on-request"\n')
    return Agent(environment(base, agents_dir), agents_dir, work, "coder")


def status_of(agent: Agent) -> dict[str, object]:
    records = [r for r in agent.cli("status", "--json") if r.get("agent") == agent.name]
    return dict(records[-1]) if records else {}


def test_the_interface_on_our_app_server_answers_meters_asks_takes_sends_and_resumes(short_root: Path, agents_dir: Path) -> None:
    script = cfake.ResponsesScript(
        [
            cfake.TextReply("STARTUP-ANSWER", cfake.ResponsesUsage(9000, 8000, 7, 3)),
            cfake.ShellCallReply(arguments=ESCALATED, usage=cfake.ResponsesUsage(9100, 9000, 5, 0)),
            cfake.TextReply("TYPED-ANSWER", cfake.ResponsesUsage(9200, 9100, 4, 0)),
            cfake.TextReply("SENT-ANSWER", cfake.ResponsesUsage(9300, 9200, 6, 0)),
            cfake.TextReply("RESUMED-ANSWER", cfake.ResponsesUsage(9400, 9300, 2, 0)),
        ]
    )
    with TitledResponsesFake(script) as api:
        agent = setup(short_root, agents_dir, api)
        tui = agent.run()
        try:
            until(tui, lambda: "STARTUP-ANSWER" in tui.text(), "the startup answer in the interface")
            until(tui, lambda: agent.state() == "waiting", "status 'waiting' after the startup turn")
            server = app_servers(tui.child.pid)  # the route: an app-server of agentlaunch's, on a Unix socket
            assert server, "no codex app-server --listen under agentlaunch"
            type_prompt(tui, "run the tool please", "Would you like to run")
            until(tui, lambda: status_of(agent).get("state") == "asking", "status 'asking' while the approval waits")
            # What it asks, from the approval request that follows the thread's status: the command as Codex shows it.
            until(tui, lambda: status_of(agent).get("state_reason") == "shell: touch made-by-tool", "the question")
            tui.child.send("y")
            until(tui, lambda: "TYPED-ANSWER" in tui.text(), "the typed turn's answer")
            until(tui, lambda: agent.state() == "waiting", "status 'waiting' after the typed turn")
            assert (agent.work / "made-by-tool").exists()
            # Each call once, from the app-server's thread/tokenUsage/updated: the typed turn's two calls apart.
            assert agent.calls() == [usage(1000, 8000, 7, 3), usage(100, 9000, 5), usage(100, 9100, 4)]

            # send --wait: a turn/start on agentlaunch's connection. "!" first would be a shell command if typed.
            sent = subprocess.run(
                [sys.executable, "-m", "agentlaunch", "send", "coder", "!literally this", "--wait", "--timeout", "120"],
                env=agent.env,
                cwd=agent.work,
                capture_output=True,
                timeout=180,
            )
            assert sent.returncode == 0, sent.stderr.decode()
            assert "SENT-ANSWER" in sent.stdout.decode()
            until(tui, lambda: "SENT-ANSWER" in tui.text(), "the sent turn in the interface")
            assert cfake.user_texts(api.turn_requests[-1].body)[-1] == "!literally this"
            assert app_servers(tui.child.pid) == server  # the same one
        finally:
            quit_tui(tui)
        assert agent.calls()[-1] == usage(100, 9200, 6)
        assert STARTUP in "\n".join(cfake.user_texts(api.turn_requests[0].body))
        thread = {r.body.get("prompt_cache_key") for r in api.turn_requests}
        assert thread == {agent.session()["session_id"]}

        tui = agent.run("-c")
        try:
            until(tui, lambda: "Ask Codex" in tui.text(), "the resumed interface")
            until(tui, lambda: agent.state() == "waiting", "status 'waiting' once the thread is resumed")
            type_prompt(tui, "one more", "RESUMED-ANSWER")
            until(tui, lambda: agent.state() == "waiting", "status 'waiting' after the resumed turn")
        finally:
            quit_tui(tui)
    assert len(api.turn_requests) == 5
    assert {r.body.get("prompt_cache_key") for r in api.turn_requests} == thread  # the same thread
    resumed = cfake.user_texts(api.turn_requests[-1].body)
    assert resumed[-1] == "one more" and sum(STARTUP in text for text in resumed) == 1  # the first turn's, once
    assert "TYPED-ANSWER" in str(api.turn_requests[-1].body)  # the conversation kept
    assert len(agent.calls()) == 5 and agent.calls()[-1] == usage(100, 9300, 2)


def test_an_app_server_that_cannot_start_is_a_clear_error(short_root: Path, agents_dir: Path) -> None:
    wrapper = short_root / "codex-no-server"
    wrapper.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do [ "$a" = app-server ] && { echo "boom: no server today" >&2; exit 3; }; done\n'
        f'exec {ensure_cli("codex")} "$@"\n'
    )
    wrapper.chmod(0o755)
    with TitledResponsesFake() as api:
        agent = setup(short_root, agents_dir, api, command=str(wrapper))
        tui = agent.run()
        try:
            tui.within(lambda: not tui.child.isalive(), 60)
            tui.child.wait()
        finally:
            tui.close()
        assert not api.turn_requests
    assert tui.child.exitstatus == 1, tui.text()
    shown = " ".join(tui.text().split())
    assert "codex app-server exited before it opened its socket (exit code 3)" in shown, shown
    assert "boom: no server today" in shown and "Traceback" not in shown


def test_an_app_server_dying_mid_session_ends_the_launch_with_its_usage_kept(short_root: Path, agents_dir: Path) -> None:
    script = cfake.ResponsesScript([cfake.TextReply("STARTUP-ANSWER", cfake.ResponsesUsage(9000, 8000, 7, 3))])
    with TitledResponsesFake(script) as api:
        agent = setup(short_root, agents_dir, api)
        tui: Screen = agent.run()
        try:
            until(tui, lambda: "STARTUP-ANSWER" in tui.text(), "the startup answer")
            until(tui, lambda: agent.state() == "waiting", "status 'waiting' after the startup turn")
            os.kill(app_servers(tui.child.pid)[-1], signal.SIGKILL)  # the server itself (npm's node wrapper's child)
            assert tui.within(lambda: not tui.child.isalive(), 60), tui.text()
            tui.child.wait()
        finally:
            tui.close()
    assert tui.child.exitstatus == 1, tui.text()
    shown = " ".join(tui.text().split())
    assert "codex app-server exited during the session; Codex's interface was ended with it (signal 9)" in shown, shown
    assert "agentlaunch run coder -r" in shown and "Traceback" not in shown
    assert agent.calls() == [usage(1000, 8000, 7, 3)]  # what was metered stays
