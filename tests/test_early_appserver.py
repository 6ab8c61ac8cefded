"""Native Codex's app-server started from the last launch's plan before agentlaunch's imports (launch/early/early_appserver).

The server here is a small Python program standing in for ``codex app-server --listen unix://PATH``: it binds
that socket and waits. Real processes, real process groups and signals; the real Codex is in
``tests/e2e/test_native_codex_early.py``. Waits are polls of the process table and files, never sleeps.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.launch.early import early_appserver, prespawn
from agentlaunch.launch.early.early_appserver import EarlyAppServer
from tests.support.waits import wait_for

SERVER = "import socket, sys, time; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[2][7:]); s.listen(); time.sleep(120)"
KEY = "k" * 24
INSTRUCTIONS = b"the rendered instructions\n"
DIGEST = hashlib.sha256(INSTRUCTIONS).hexdigest()  # what the launch compares the delivered instructions by
FAKE_RUNTIME = "/tmp/agentlaunch-planned"


@pytest.fixture
def agent(tmp_path: Path) -> dict[str, Path]:
    folder = tmp_path / "agents" / "coder"
    folder.mkdir(parents=True)
    (folder / "agent.yaml").write_text("provider: codex\n")
    (folder / "soul.md").write_text("You are terse.\n")
    instructions = tmp_path / "rendered.md"
    instructions.write_bytes(INSTRUCTIONS)
    work = tmp_path / "work"
    work.mkdir()
    return {"yaml": folder / "agent.yaml", "soul": folder / "soul.md", "instructions": instructions, "work": work}


def planned_argv(server: str = SERVER, listen: str = f"unix://{FAKE_RUNTIME}/cx.sock") -> list[str]:
    return [sys.executable, "-c", server, "--listen", listen]


def keep(state: Path, agent: dict[str, Path], argv: list[str] | None = None, env: dict[str, str] | None = None) -> None:
    early_appserver.remember(
        KEY,
        state,
        argv=argv or planned_argv(),
        env={**os.environ, **(env or {})},
        cwd=agent["work"],
        runtime=Path(FAKE_RUNTIME),
        instructions=agent["instructions"],
        digest=DIGEST,
        agent_yaml=agent["yaml"],
        inputs=[agent["soul"]],
    )


@pytest.fixture(autouse=True)
def runtime_base(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A runtime base of the test's own (short: a socket path is at most 107 bytes)."""
    base = Path(tempfile.mkdtemp(prefix="alea-"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(early_appserver, "terminal_size", lambda: (120, 40))


@pytest.fixture
def state(isolated_home: Path) -> Path:
    return isolated_home / "state"


def started(state: Path) -> EarlyAppServer:
    pending = early_appserver.start(state, KEY)
    assert pending is not None
    path = early_appserver.socket_of(pending.argv)
    wait_for(lambda: os.path.exists(path), 30, "the stand-in server's socket")
    return pending


def gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_a_plan_keeps_the_runtime_folder_as_a_placeholder_and_only_what_the_launch_adds(
    state: Path, agent: dict[str, Path]
) -> None:
    keep(state, agent, env={"CODEX_HOME": f"{FAKE_RUNTIME}/../home"})
    plan: dict[str, Any] = json.loads(early_appserver.plan_path(state, KEY).read_text())
    assert plan["argv"][-1] == early_appserver.LISTEN and FAKE_RUNTIME not in json.dumps(plan)
    assert plan["env"] == {"CODEX_HOME": f"{early_appserver.RUNTIME}/../home"}  # not the rest of os.environ
    assert plan["cwd"] == str(agent["work"]) and plan["digest"] == DIGEST


def test_the_server_started_from_the_plan_is_adopted_when_the_launch_would_start_it_so(
    state: Path, agent: dict[str, Path], terminal: None
) -> None:
    keep(state, agent)
    pending = started(state)
    runtime = pending.hand_over()
    try:
        assert early_appserver.socket_of(pending.argv) == str(runtime / "cx.sock")
        assert os.getpgid(pending.server.pid) == pending.server.pid  # its own session: the terminal's signals are not its
        server = early_appserver.adopt(pending, pending.argv, pending.env, agent["work"], DIGEST)
        assert server is pending.server and pending.adopted and server.poll() is None
        prespawn.discard(pending)  # adopted: the launch's now, never ended here
        assert server.poll() is None
    finally:
        pending.server.kill()
        pending.server.wait()


@pytest.mark.parametrize("change", ["argv", "codex_home", "cwd", "digest"])
def test_a_server_the_launch_would_start_otherwise_is_ended_with_its_socket(
    state: Path, agent: dict[str, Path], terminal: None, tmp_path: Path, change: str
) -> None:
    keep(state, agent)
    pending = started(state)
    runtime = pending.hand_over()
    argv, env, cwd, digest = list(pending.argv), dict(pending.env), agent["work"], DIGEST
    if change == "argv":
        argv[1:1] = ["-c", 'model_verbosity="low"']  # another -c flag
    elif change == "codex_home":
        env["CODEX_HOME"] = str(tmp_path / "another-home")
    elif change == "cwd":
        cwd = tmp_path
    else:
        digest = "0" * 64
    assert early_appserver.adopt(pending, argv, env, cwd, digest) is None
    assert pending.server.poll() is not None and gone(pending.server.pid)
    assert not (runtime / "cx.sock").exists()  # the launch's own server binds that path next
    assert runtime.is_dir()  # handed over: the launch's to remove


def test_a_server_that_exited_is_not_adopted(state: Path, agent: dict[str, Path], terminal: None) -> None:
    keep(state, agent, argv=planned_argv(server="raise SystemExit(3)"))
    pending = early_appserver.start(state, KEY)
    assert pending is not None
    pending.server.wait(30)
    runtime = pending.hand_over()
    assert early_appserver.adopt(pending, pending.argv, pending.env, agent["work"], DIGEST) is None
    assert pending.server.returncode == 3 and runtime.is_dir()


def test_a_server_never_adopted_is_ended_and_its_runtime_folder_removed(
    state: Path, agent: dict[str, Path], terminal: None
) -> None:
    keep(state, agent)
    pending = started(state)
    runtime = pending.runtime
    assert runtime is not None
    prespawn.discard(pending)  # what the atexit hook does with one the launch never took
    assert gone(pending.server.pid) and not runtime.exists()


@pytest.mark.parametrize(
    "why", ["socket_elsewhere", "two_listens", "direct_route", "no_terminal", "soul_edited", "instructions", "agent_env"]
)
def test_nothing_starts_from_a_plan_that_does_not_hold(
    state: Path, agent: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, runtime_base: Path, why: str
) -> None:
    monkeypatch.setattr(early_appserver, "terminal_size", lambda: None if why == "no_terminal" else (120, 40))
    argv = planned_argv()
    if why == "socket_elsewhere":  # a path another process may hold: never bound by a server started from a plan
        argv = planned_argv(listen=f"unix://{tmp_path}/taken.sock")
    elif why == "two_listens":
        argv = [*argv, "--listen", f"unix://{tmp_path}/taken.sock"]
    keep(state, agent, argv=argv)
    if why == "direct_route":
        monkeypatch.setenv(early_appserver.ROUTE_ENV, "direct")
    elif why == "soul_edited":
        agent["soul"].write_text("You are verbose.\n")
    elif why == "instructions":
        agent["instructions"].write_text("other instructions\n")
    elif why == "agent_env":
        agent["yaml"].write_text("provider: codex\nenv:\n  SECRET: x\n")
    assert early_appserver.start(state, KEY) is None
    assert os.listdir(runtime_base) == []  # no runtime folder made, nothing started


def test_a_server_whose_agentlaunch_is_killed_before_adopting_it_gets_sigterm(
    state: Path, agent: dict[str, Path], tmp_path: Path
) -> None:
    keep(state, agent)
    code = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from agentlaunch.launch.early import early_appserver\n"
        "early_appserver.terminal_size = lambda: (120, 40)\n"
        f"pending = early_appserver.start(Path({str(state)!r}), {KEY!r})\n"
        "print(pending.server.pid, pending.runtime, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60, env=os.environ)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    pid = int(done.stdout.split()[0])
    try:
        wait_for(lambda: gone(pid), 30, "the end of the early app-server whose agentlaunch was killed")
    finally:
        if not gone(pid):
            os.kill(pid, signal.SIGKILL)  # the test failed: no orphan of its own left behind
