"""The native interface started from the last launch's plan before agentlaunch's imports (launch/early/early_interface.py).

The CLI is ``tests/support/fake_tui.py`` as a claude agent's command, on a real PTY (pexpect); it logs every
start (``FAKE_TUI_STARTS``), so each test sees how many interfaces were started and with which argv. Waits are
``expect`` on output or polls of files, never sleeps.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import pexpect
import pytest

from agentlaunch.launch.early import early_interface
from testbed.agent_files import write_agent
from tests.support.waits import turn_over, wait_for
from tests.test_native_ready import record
from tests.test_native_relay import FAKE_TUI, env_with, ready, spawn


@pytest.fixture
def tui_agent(agents_dir: Path, workdir: Path) -> str:
    write_agent(
        agents_dir,
        "tui",
        {
            "provider": "claude",
            "command": str(FAKE_TUI),
            "working_dir": str(workdir),
            "startup": "Startup for the fake interface.",
        },
    )
    return "tui"


def starts(log: Path) -> list[list[Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def launch(agents_dir: Path, log: Path, **env: str) -> list[str]:
    """One native launch until the interface is up, then `q`; the argv the interface saw."""
    child = spawn(agents_dir, env=env_with(FAKE_TUI_STARTS=str(log), **env))
    argv = ready(child)
    child.send(b"q")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    return argv


def plans(isolated_home: Path) -> list[Path]:
    return sorted((isolated_home / "state" / "launch-plans").glob(f"*{early_interface.SUFFIX}.json"))


def test_a_new_native_launch_keeps_its_start_without_the_session_or_the_runtime_folder(
    agents_dir: Path, tui_agent: str, isolated_home: Path, tmp_path: Path
) -> None:
    argv = launch(agents_dir, tmp_path / "starts.log")
    (path,) = plans(isolated_home)
    plan = json.loads(path.read_text())
    session = argv[argv.index("--session-id") + 1]
    assert session not in path.read_text() and early_interface.SESSION in plan["argv"]
    assert any(early_interface.RUNTIME in a for a in plan["argv"])  # the --settings naming the hook socket
    assert plan["sockets"] and plan["files"]  # Claude Code's hook socket and its config file
    assert all(early_interface.RUNTIME in text for text in plan["files"].values())


def test_the_next_launch_adopts_the_interface_started_from_the_plan(
    agents_dir: Path, tui_agent: str, isolated_home: Path, tmp_path: Path
) -> None:
    log = tmp_path / "starts.log"
    launch(agents_dir, log)
    second = launch(agents_dir, log)
    assert len(starts(log)) == 2  # one interface per launch: the early one was adopted, none killed
    assert second == starts(log)[1][1] and not any("{" in a and "}" in a and "session" in a for a in second)


def test_an_interface_started_from_a_stale_plan_is_killed_and_started_anew(
    agents_dir: Path, tui_agent: str, isolated_home: Path, tmp_path: Path
) -> None:
    log = tmp_path / "starts.log"
    launch(agents_dir, log)
    (path,) = plans(isolated_home)
    plan = json.loads(path.read_text())
    plan["argv"].insert(1, f"--stale={tmp_path}")  # what this launch would no longer start
    path.write_text(json.dumps(plan))
    argv = launch(agents_dir, log)
    assert not any(a.startswith("--stale") for a in argv) and argv == starts(log)[-1][1]
    # The early one may be killed before it logged anything; it is gone either way.
    assert not [p for p in Path("/proc").glob("[0-9]*") if f"--stale={tmp_path}".encode() in _cmdline(p)]


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


def test_adopt_takes_only_the_interface_started_exactly_so(tmp_path: Path) -> None:
    """In process: a child started as the launch would start it is adopted; any difference kills it and removes
    what the early start made (its runtime folder, its sockets)."""
    from agentlaunch.launch.transport import Child

    def started(argv: list[str]) -> early_interface.EarlyInterface:
        runtime = tmp_path / f"runtime-{len(list(tmp_path.iterdir()))}"
        runtime.mkdir()
        sockets = {str(runtime / "hook.sock"): early_interface._bind(runtime / "hook.sock")}
        child = Child(argv, dict(os.environ), tmp_path)
        return early_interface.EarlyInterface(child, "sid", argv, dict(os.environ), "d", runtime, sockets, 0.0, tmp_path)

    same = started(["sleep", "30"])
    assert early_interface.adopt(same, ["sleep", "30"], dict(os.environ), tmp_path, "d") is same.child
    assert same.adopted and same.runtime is not None
    same.child.stop()
    same.release()
    for argv, env, cwd, digest in (
        (["sleep", "31"], dict(os.environ), tmp_path, "d"),
        (["sleep", "30"], {**os.environ, "X_EARLY": "1"}, tmp_path, "d"),
        (["sleep", "30"], dict(os.environ), tmp_path / "elsewhere", "d"),
        (["sleep", "30"], dict(os.environ), tmp_path, "other instructions"),
    ):
        other = started(["sleep", "30"])
        runtime = other.runtime
        assert runtime is not None
        assert early_interface.adopt(other, argv, env, cwd, digest) is None
        assert other.child.poll() is not None and not runtime.exists() and other.sockets == {}


def test_no_early_start_when_the_soul_changed_or_it_is_turned_off(
    agents_dir: Path, tui_agent: str, isolated_home: Path, tmp_path: Path
) -> None:
    log = tmp_path / "starts.log"
    launch(agents_dir, log)

    def holds() -> bool:
        (path,) = plans(isolated_home)
        return early_interface._holds(json.loads(path.read_text()), datetime.now())

    assert holds()
    (agents_dir / "tui" / "soul.md").write_text("A new soul.\n")  # a part the agent did not have
    assert not holds()
    launch(agents_dir, log)
    assert holds()
    (agents_dir / "tui" / "soul.md").write_text("Another soul.\n")  # a part changed
    assert not holds()
    launch(agents_dir, log)
    launch(agents_dir, log, AGENTLAUNCH_NO_PRESPAWN="1")
    assert len(starts(log)) == 4  # never an interface started from a plan that no longer holds


def test_the_hooks_reach_the_launch_through_the_socket_the_early_start_bound(
    agents_dir: Path, tui_agent: str, isolated_home: Path, tmp_path: Path
) -> None:
    log = tmp_path / "starts.log"
    launch(agents_dir, log)
    child = spawn(agents_dir, env=env_with(FAKE_TUI_STARTS=str(log), FAKE_TUI_HOOKS="1", FAKE_TUI_STARTUP_DELAY="0"))
    try:
        ready(child)
        wait_for(lambda: turn_over(record("tui")), timeout=30, what="the startup turn reported by the hooks")
        assert len(starts(log)) == 2
    finally:
        child.terminate(force=True)


SPAWN_PROBE = """
import sys
import agentlaunch.launch.transport as transport
started = transport.Child.__init__
def probe(self, *args, **kwargs):
    loaded = [m for m in ('rich', 'jinja2', 'yaml', 'pydantic') if m in sys.modules]
    sys.stdout.write('SPAWN loaded=%s\\r\\n' % ','.join(loaded))
    sys.stdout.flush()
    started(self, *args, **kwargs)
transport.Child.__init__ = probe
sys.argv = ['agentlaunch', 'run', 'tui', '--agents-dir', sys.argv[1]]
from agentlaunch.entry import main
main()
"""


@pytest.mark.parametrize("early", [True, False])
def test_the_interface_starts_before_rich_jinja_yaml_or_pydantic_are_imported(
    agents_dir: Path, tui_agent: str, isolated_home: Path, tmp_path: Path, early: bool
) -> None:
    """With the early start and without it (a second launch: the caches are warm), nothing heavy runs first.

    The agent names a model, whose rates the first launch keeps: an agent without one starts genai-prices'
    warm-up thread on every launch (usage/pricing.py), which imports pydantic beside the start."""
    import sys

    write_agent(
        agents_dir,
        "tui",
        {
            "provider": "claude",
            "command": str(FAKE_TUI),
            "model": "claude-sonnet-4-5",
            "working_dir": str(tmp_path),
            "startup": "Startup for the fake interface.",
        },
    )
    launch(agents_dir, tmp_path / "starts.log")  # the first launch fills the caches and leaves the plan
    env = env_with(**({} if early else {"AGENTLAUNCH_NO_PRESPAWN": "1"}))
    child = pexpect.spawn(sys.executable, ["-c", SPAWN_PROBE, str(agents_dir)], env=env, dimensions=(30, 100), timeout=30)
    child.expect(r"SPAWN loaded=(\S*)\r")
    assert child.match.group(1) == b""
    ready(child)
    child.send(b"q")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


WALKS_PROBE = """
import atexit, sys
from agentlaunch.launch import reaper
made = []
init = reaper.Reaper.__init__
def keep(self, *args, **kwargs):
    init(self, *args, **kwargs)
    made.append(self)
reaper.Reaper.__init__ = keep
def report():
    sys.stdout.write('WALKS %s\\r\\n' % [dict(r.walks) for r in made])
    sys.stdout.flush()
atexit.register(report)
sys.argv = ['agentlaunch', 'run', 'tui', '--agents-dir', sys.argv[1]]
from agentlaunch.entry import main
main()
"""


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="the subreaper and the tree walk are Linux's")
def test_an_early_started_interface_is_followed_in_agentlaunchs_own_tree_not_all_of_proc(
    agents_dir: Path, isolated_home: Path, tmp_path: Path
) -> None:
    """The early start becomes a subreaper before it starts the CLI, so the close reads the launch's own tree."""
    import sys

    if not Path(f"/proc/self/task/{os.getpid()}/children").exists():
        pytest.skip("this kernel has no /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN)")
    write_agent(
        agents_dir,
        "tui",
        {
            "provider": "claude",
            "command": str(FAKE_TUI),
            "model": "claude-sonnet-4-5",
            "working_dir": str(tmp_path),
            "startup": "Startup for the fake interface.",
        },
    )
    launch(agents_dir, tmp_path / "starts.log")  # the first launch leaves the plan
    child = pexpect.spawn(sys.executable, ["-c", WALKS_PROBE, str(agents_dir)], env=env_with(), dimensions=(30, 100), timeout=30)
    ready(child)
    child.send(b"q")
    child.expect(r"WALKS (\[.*\])\r")
    walks = json.loads(child.match.group(1).decode().replace("'", '"'))
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert len(walks) == 1 and walks[0]["proc"] == 0 and walks[0]["tree"] >= 1, walks
