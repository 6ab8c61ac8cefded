"""Native Codex's app-server started from the last launch's plan before agentlaunch's imports, on the real Codex 0.171.0.

The agent's command is a wrapper of the real ``codex`` that notes each ``app-server`` it runs (its pid, which the
exec keeps, and its arguments) and can be told to fail it; agentlaunch's entry point is wrapped to note each
adoption decision. Against the scripted fake Responses API on 127.0.0.1, on a PTY (pexpect, pyte). Pinned: a
second launch adopts the app-server its entry point started (one app-server for the launch, the startup turn
answered once); a plan that no longer holds (another ``-c`` flag, another CODEX_HOME) starts a fresh one and the
early one is ended without a request (its CODEX_HOME points at a second fake API that hears nothing); an early
app-server that cannot start is a clear error; one whose agentlaunch is SIGKILLed before adopting it ends.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch.fakeapi import responses as cfake
from agentlaunch.launch.early import early_appserver, early_plans
from testbed.clis import ensure_cli
from testbed.native_tui import TitledResponsesFake, seed_codex_home
from testbed.pty_screen import Screen, spawn
from tests.e2e.test_native_codex_remote import STARTUP, setup
from tests.e2e.test_native_run_codex_gemini import Agent, quit_tui, until
from tests.support.waits import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

STALE = 'model_verbosity="low"'
# agentlaunch's entry point, noting each adoption decision on an early app-server (its pid, adopted or not).
REPORTING = """
import os
from agentlaunch.launch.early import early_appserver
real_adopt = early_appserver.adopt
def adopt(pending, *args):
    server = real_adopt(pending, *args)
    with open(os.environ["EARLY_REPORT"], "a") as fh:
        fh.write(f"{pending.server.pid} {server is not None}\\n")
    return server
early_appserver.adopt = adopt
from agentlaunch.entry import main
main()
"""
# The entry point's early start alone, then agentlaunch is killed before it could adopt anything.
# The entry point killed once its early app-server is up (its socket made): killed sooner, the server's wrapper could
# die of the parent-death signal before it noted its start (CI, once under load), and the test would prove nothing.
KILLED = """
import os, signal, sys, time
from agentlaunch.launch.early import prespawn
from agentlaunch.launch.early.early_appserver import socket_of
prespawn.start(sys.argv[1:])
listen = socket_of(getattr(prespawn._pending, "argv", []))
deadline = time.monotonic() + 60
while listen and not os.path.exists(listen) and time.monotonic() < deadline:
    time.sleep(0.02)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.fixture
def short_root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="alce-") as folder:
        yield Path(folder)


class Early:
    """The agent, its wrapped ``codex`` and what the wrapper and the entry point noted."""

    def __init__(self, root: Path, agents_dir: Path, api: TitledResponsesFake) -> None:
        self.starts, self.report, self.fail = root / "app-servers.log", root / "adoptions.log", root / "fail-app-server"
        wrapper = root / "codex-noting"
        wrapper.write_text(  # notes "PID SOCKET-ARG MARK" (MARK: "stale" when given the -c flag a test plants)
            "#!/bin/sh\n"
            "server=; listen=; mark=-; prev=\n"
            'for a in "$@"; do\n'
            '  [ "$a" = app-server ] && server=1\n'
            f'  [ "$a" = {STALE!r} ] && mark=stale\n'
            '  [ "$prev" = --listen ] && listen=$a\n'
            "  prev=$a\n"
            "done\n"
            'if [ -n "$server" ]; then\n'
            f'  echo "$$ $listen $mark" >> {self.starts}\n'
            f'  [ -e {self.fail} ] && {{ echo "boom: no server today" >&2; exit 3; }}\n'
            "fi\n"
            f'exec {ensure_cli("codex")} "$@"\n'
        )
        wrapper.chmod(0o755)
        self.agent: Agent = setup(root, agents_dir, api, command=str(wrapper))
        self.agent.env["EARLY_REPORT"] = str(self.report)

    def run(self, entry: str = REPORTING) -> Screen:
        a = self.agent
        return spawn([sys.executable, "-c", entry, "run", a.name, "--agents-dir", str(a.agents_dir)], a.env, a.work)

    def launch(self) -> None:
        """One launch until the startup answer shows and the session waits, then quit."""
        tui = self.run()
        try:
            until(tui, lambda: "STARTUP-ANSWER" in tui.text(), "the startup answer in the interface")
            until(tui, lambda: self.agent.state() == "waiting", "status 'waiting' after the startup turn")
        finally:
            quit_tui(tui)

    def servers(self) -> list[tuple[int, str, bool]]:
        """Each app-server the wrapper ran: its pid, its ``--listen`` value, whether it had the planted -c flag."""
        lines = self.starts.read_text().splitlines() if self.starts.exists() else []
        return [(int(pid), listen, mark == "stale") for pid, listen, mark in (line.split() for line in lines)]

    def adoptions(self) -> list[tuple[int, bool]]:
        lines = self.report.read_text().splitlines() if self.report.exists() else []
        return [(int(pid), adopted == "True") for pid, adopted in (line.split() for line in lines)]

    def plan_path(self) -> Path:
        (path,) = (Path(self.agent.env["AGENTLAUNCH_STATE_DIR"]) / early_plans.CACHE_DIR).glob(f"*{early_appserver.SUFFIX}.json")
        return path


def answers(n: int) -> cfake.ResponsesScript:
    return cfake.ResponsesScript([cfake.TextReply("STARTUP-ANSWER", cfake.ResponsesUsage(9000, 8000, 7, 3))] * n)


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def holding(text: str) -> list[int]:
    """The processes whose command line holds ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes() and running(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_the_next_launch_adopts_the_app_server_its_entry_point_started(short_root: Path, agents_dir: Path) -> None:
    with TitledResponsesFake(answers(2)) as api:
        early = Early(short_root, agents_dir, api)
        early.launch()
        assert early.adoptions() == [] and len(early.servers()) == 1  # nothing to start from yet
        plan = json.loads(early.plan_path().read_text())
        assert plan["argv"][-2:] == ["--listen", early_appserver.LISTEN]  # the runtime folder a placeholder
        assert early.servers()[0][1].removeprefix("unix://").rsplit("/", 1)[0] not in json.dumps(plan)

        early.launch()
        (second,) = early.servers()[1:]  # one app-server for the second launch: the early one, adopted
        assert early.adoptions() == [(second[0], True)]
        assert not holding(second[1])  # ended with the launch
    assert len(api.turn_requests) == 2  # the startup turn of each launch, once
    assert all(STARTUP in "\n".join(cfake.user_texts(r.body)) for r in api.turn_requests)


def test_a_plan_that_no_longer_holds_starts_a_fresh_app_server_and_the_stale_one_calls_nothing(
    short_root: Path, agents_dir: Path
) -> None:
    with TitledResponsesFake(answers(3)) as api, TitledResponsesFake(answers(1)) as elsewhere:
        early = Early(short_root, agents_dir, api)
        early.launch()
        path = early.plan_path()
        plan = json.loads(path.read_text())
        plan["argv"][1:1] = ["-c", STALE]  # another -c flag than this launch gives
        path.write_text(json.dumps(plan))
        early.launch()
        stale, fresh = early.servers()[1:]
        assert stale[2] and not fresh[2]
        assert early.adoptions() == [(stale[0], False)] and not running(stale[0])

        other = seed_codex_home(short_root / "other-home", elsewhere.base_url, early.agent.work)["CODEX_HOME"]
        plan = json.loads(path.read_text())
        plan["env"]["CODEX_HOME"] = other  # another CODEX_HOME: its config.toml names the second fake API
        path.write_text(json.dumps(plan))
        early.launch()
        stale, fresh = early.servers()[3:]
        assert early.adoptions()[1:] == [(stale[0], False)] and not running(stale[0])
        assert not holding(stale[1]) and not holding(fresh[1])
    assert elsewhere.server.requests == []  # the stale app-server sent nothing at all, least of all a model call
    assert len(api.turn_requests) == 3  # each launch's startup turn, once, from the fresh app-server


def test_an_early_app_server_that_cannot_start_is_a_clear_error(short_root: Path, agents_dir: Path) -> None:
    with TitledResponsesFake(answers(1)) as api:
        early = Early(short_root, agents_dir, api)
        early.launch()
        early.fail.touch()  # from now on the wrapper fails every app-server, the early one first
        tui = early.run()
        try:
            tui.within(lambda: not tui.child.isalive(), 60)
            tui.child.wait()
        finally:
            tui.close()
        assert len(api.turn_requests) == 1  # the first launch's
    assert tui.child.exitstatus == 1, tui.text()
    shown = " ".join(tui.text().split())
    assert "codex app-server exited before it opened its socket (exit code 3)" in shown, shown
    assert "boom: no server today" in shown and "Traceback" not in shown
    assert early.servers()[1][0] in [pid for pid, _ in early.adoptions()]  # the early one was started, and refused


def test_an_early_app_server_ends_when_agentlaunch_is_killed_before_adopting_it(short_root: Path, agents_dir: Path) -> None:
    with TitledResponsesFake(answers(1)) as api:
        early = Early(short_root, agents_dir, api)
        early.launch()
        tui = early.run(KILLED)
        try:
            tui.within(lambda: not tui.child.isalive(), 60)
            tui.child.wait()
        finally:
            tui.close()
        assert tui.child.signalstatus == signal.SIGKILL
        (server,) = early.servers()[1:]
        socket_arg = server[1]
        try:
            wait_for(lambda: not holding(socket_arg), 30, "the early app-server and its binary to end")
        finally:
            for pid in holding(socket_arg):
                os.kill(pid, signal.SIGKILL)  # the test failed: no orphan of its own left behind
        assert len(api.turn_requests) == 1  # the first launch's: the orphaned server called nothing
