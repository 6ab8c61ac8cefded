"""``worktree_setup:``: commands run once in an agent's new worktree, with real git; their log, record and failures."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentlaunch import paths
from agentlaunch.definitions.spec import load_agent
from agentlaunch.errors import DefinitionError, ExitCode
from agentlaunch.fleet.setups import setups
from agentlaunch.live.status import checked_record
from agentlaunch.worktrees import setup_commands as worktree_setup
from agentlaunch.worktrees.setup_commands import Place, WorktreeSetupFailed, ensure_setup
from testbed.agent_files import write_agent
from tests.support.cli_runs import run_cli_inprocess
from tests.support.git_repo import make_repo
from tests.support.waits import wait_for

COUNT = 'echo ran >> "$AGENTLAUNCH_WORKTREE/../setup-runs-$AGENTLAUNCH_AGENT"'  # outside the worktree: never dirty it


def runs(worktree: Path, agent: str) -> int:
    path = worktree.parent / f"setup-runs-{agent}"
    return len(path.read_text().splitlines()) if path.exists() else 0


# -- the definition ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("npm ci", "worktree_setup: Input should be a valid list"),
        ([["cp", ".env"]], "worktree_setup.0: Input should be a valid string"),
        ([3], "worktree_setup.0: Input should be a valid string"),
        (["npm ci", ""], "worktree_setup.1: an empty command"),
        (["   "], "worktree_setup.0: an empty command"),
        (["echo a\0b"], "worktree_setup.0: a command cannot hold a NUL character"),
        ({"run": "npm ci"}, "worktree_setup: Input should be a valid list"),
    ],
)
def test_a_bad_worktree_setup_is_a_definition_error_naming_agent_yaml_and_the_key(
    agents_dir: Path, value: object, problem: str
) -> None:
    folder = write_agent(agents_dir, "bad", {"provider": "fake", "worktree": True, "worktree_setup": value})
    with pytest.raises(DefinitionError) as caught:
        load_agent(agents_dir, "bad")
    assert f"{folder / 'agent.yaml'}: {problem}" in str(caught.value)
    checked = run_cli_inprocess("validate", "bad", "--agents-dir", str(agents_dir))  # its report goes to stdout
    assert checked.returncode == 3 and problem.encode() in checked.stdout and b"Traceback" not in checked.stderr
    started = run_cli_inprocess("run", "bad", "hi", "--agents-dir", str(agents_dir))
    assert started.returncode == 3 and problem.encode() in started.stderr and b"Traceback" not in started.stderr


def test_worktree_setup_is_read_into_the_spec(agents_dir: Path) -> None:
    write_agent(agents_dir, "ok", {"provider": "fake", "worktree_setup": ["cp ../.env .env", "npm ci"]})
    assert load_agent(agents_dir, "ok").worktree_setup == ("cp ../.env .env", "npm ci")
    write_agent(agents_dir, "none", {"provider": "fake"})
    assert load_agent(agents_dir, "none").worktree_setup == ()


# -- running it (in process) ---------------------------------------------------------------------------


def place(tmp_path: Path, agent: str = "wt") -> Place:
    repo = tmp_path / "repo"
    tree = tmp_path / "trees" / agent
    tree.mkdir(parents=True, exist_ok=True)
    repo.mkdir(exist_ok=True)
    return Place(agent, tree, repo, f"agentlaunch/{agent}")


def test_it_runs_once_in_a_new_worktree_with_its_place_in_the_environment(tmp_path: Path) -> None:
    state, where, said = tmp_path / "state", place(tmp_path), []
    (where.repo / ".env").write_text("TOKEN=1\n")
    commands = ['cp "$AGENTLAUNCH_REPO/.env" .env', "echo $AGENTLAUNCH_AGENT $AGENTLAUNCH_BRANCH; pwd", COUNT]
    record, ran = ensure_setup(commands, where, state, created=True, report=said.append)
    assert ran and record is not None and record.ok is True and record.exit == 0 and record.command is None
    assert (where.worktree / ".env").read_text() == "TOKEN=1\n" and runs(where.worktree, "wt") == 1
    log = Path(record.log).read_text()
    assert log.startswith(f"$ {commands[0]}\n[exit 0]\n$ {commands[1]}\nwt agentlaunch/wt\n{where.worktree}\n[exit 0]\n")
    assert Path(record.log).stat().st_mode & 0o777 == 0o600  # what a command printed of a .env stays private
    assert said[0].startswith(f"worktree setup: 3 commands in {where.worktree} (log: ")
    assert said[-1].startswith("worktree setup done")
    assert record.shown() == {"ok": True, "exit": 0, "command": None, "log": record.log}
    # Reused, resumed, started again: never again.
    for created in (False, False):
        again, ran = ensure_setup(commands, where, state, created=created, report=said.append)
        assert not ran and again is not None and again.ok is True
    assert runs(where.worktree, "wt") == 1


def test_a_worktree_made_before_it_had_a_setup_is_left_as_it_is(tmp_path: Path) -> None:
    where = place(tmp_path)
    assert ensure_setup([COUNT], where, tmp_path / "state", created=False, report=print) == (None, False)
    assert ensure_setup([], where, tmp_path / "state", created=True, report=print) == (None, False)
    assert runs(where.worktree, "wt") == 0


def test_a_failure_names_the_command_its_exit_and_the_log_and_runs_again_until_it_succeeds(tmp_path: Path) -> None:
    state, where = tmp_path / "state", place(tmp_path)
    failing = [COUNT, "echo 'npm ERR! no lockfile' >&2; exit 3", "echo never"]
    with pytest.raises(WorktreeSetupFailed) as caught:
        ensure_setup(failing, where, state, created=True, report=lambda _: None)
    log = worktree_setup.log_path(state, "wt", where.worktree)
    assert caught.value.exit_code == ExitCode.WORKTREE_SETUP == 8
    message = caught.value.message
    assert message.startswith(f"worktree setup: `{failing[1]}` exited 3 in {where.worktree}; the agent was not started")
    assert "npm ERR! no lockfile" in message and "never" not in message.replace("echo never", "")
    assert str(log) in (caught.value.hint or "")
    record = worktree_setup.read(state, "wt", where.worktree)
    assert record is not None and record.failed and (record.ok, record.exit, record.command) == (False, 3, failing[1])
    assert record.shown() == {"ok": False, "exit": 3, "command": failing[1], "log": str(log)}
    (shown,) = setups(state)  # what `status` and `fleet` show: the reader of the fleet, beside the writer's own
    assert (shown.agent, shown.worktree, shown.ok, shown.exit, shown.command) == ("wt", str(where.worktree), False, 3, failing[1])
    assert not shown.running and shown.shown() == record.shown()
    # Started again (the worktree exists now): the setup runs again, and once it succeeds never more.
    said: list[str] = []
    fixed = [COUNT, "true"]
    again, ran = ensure_setup(fixed, where, state, created=False, report=said.append)
    assert ran and again is not None and again.ok is True and runs(where.worktree, "wt") == 2
    assert "did not finish last time: running it again" in said[0]
    assert ensure_setup(fixed, where, state, created=False, report=said.append)[1] is False
    assert setups(state) == [] and runs(where.worktree, "wt") == 2
    worktree_setup.forget(state, "wt", where.worktree)
    assert worktree_setup.read(state, "wt", where.worktree) is None and not log.exists()


def test_a_setup_whose_process_died_reads_as_interrupted_and_runs_again(tmp_path: Path) -> None:
    state, where = tmp_path / "state", place(tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    folder = state / worktree_setup.SETUP_DIR
    folder.mkdir(parents=True)
    log = worktree_setup.log_path(state, "wt", where.worktree)
    payload = {
        "agent": "wt",
        "worktree": str(where.worktree),
        "log": str(log),
        "ok": None,
        "command": "npm ci",
        "pid": dead.pid,
        "pid_start": "1",
    }
    worktree_setup.record_path(state, "wt", where.worktree).write_text(json.dumps(payload))
    (record,) = setups(state)
    assert not record.running and record.shown()["ok"] is False
    written = worktree_setup.read(state, "wt", where.worktree)
    assert written is not None and written.failed and not written.running
    ours = {**payload, "pid": os.getpid(), "pid_start": None}  # a live process runs it: shown as running
    worktree_setup.record_path(state, "wt", where.worktree).write_text(json.dumps(ours))
    (running,) = setups(state)
    assert running.running and running.shown()["ok"] is None
    worktree_setup.record_path(state, "wt", where.worktree).write_text(json.dumps(payload))
    assert ensure_setup([COUNT], where, state, created=False, report=lambda _: None)[1] is True


@pytest.mark.parametrize("content", ["[1]", '{"agent": 1}', '{"agent": "a", "worktree": "w", "log": "l", "ok": "yes"}', "{"])
def test_an_unreadable_setup_record_is_left_out(tmp_path: Path, content: str) -> None:
    path = worktree_setup.record_path(tmp_path, "a", tmp_path)
    path.parent.mkdir()
    path.write_text(content)
    assert worktree_setup.read(tmp_path, "a", tmp_path) is None and setups(tmp_path) == []


def test_the_status_record_keeps_only_a_well_formed_setup() -> None:
    good = {"ok": False, "exit": 1, "command": "npm ci", "log": "/l"}
    assert checked_record({"worktree_setup": good})["worktree_setup"] == good
    hostile = {"ok": "no", "exit": 2**70, "command": ["x"], "log": 5, "more": {"deep": 1}}
    cleaned = {"ok": None, "exit": None, "command": None, "log": None}
    assert checked_record({"worktree_setup": hostile})["worktree_setup"] == cleaned
    assert "worktree_setup" not in checked_record({"worktree_setup": "failed"})


# -- end to end: a real repository, `agentlaunch run`, `status` -------------------------------------------


def run(agents_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return run_cli_inprocess("run", *args, "--agents-dir", str(agents_dir), cwd=cwd)


def status_json() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(run_cli_inprocess("status", "--json").stdout)
    return rows


def test_end_to_end_a_copied_env_then_a_failing_setup_that_is_fixed(agents_dir: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", {"README": "a project\n", ".gitignore": ".env\nCLAUDE.md\n"})
    (repo / ".env").write_text("API_TOKEN=not-in-git\n")  # not committed: a new worktree does not have it
    setup = ['cp "$AGENTLAUNCH_REPO/.env" .env', "echo 'Read .env first.' > CLAUDE.md", COUNT]
    write_agent(agents_dir, "wt", {"provider": "fake", "model": "fake-1", "worktree": True, "worktree_setup": setup})
    first = run(agents_dir, repo, "wt", "hello")
    assert first.returncode == 0, first.stderr
    (row,) = json.loads(run_cli_inprocess("worktrees", "--json").stdout)
    tree = Path(row["path"])
    assert (tree / ".env").read_text() == "API_TOKEN=not-in-git\n" and runs(tree, "wt") == 1
    assert b"I read CLAUDE.md" in first.stdout  # the setup ran before the CLI started: it found the file made
    assert b"agentlaunch: worktree setup 1/3: " in first.stderr and b"agentlaunch: worktree setup done" in first.stderr
    assert row["clean"] is True  # .env and CLAUDE.md are ignored, the counter lives outside

    # Reused: no setup; the running launch's status record says how its worktree's setup went.
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentlaunch", "run", "wt", "-c", "/slow more", "--agents-dir", str(agents_dir)],
        cwd=repo,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        (live,) = wait_for(lambda: [r for r in status_json() if r.get("state") == "thinking"], what="a thinking record")
        log = str(worktree_setup.log_path(paths.state_dir(), "wt", tree))
        assert live["worktree_setup"] == {"ok": True, "exit": 0, "command": None, "log": log}
        assert live["working_dir"] == str(tree)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert b"worktree setup" not in err and runs(tree, "wt") == 1

    # Another agent whose setup fails: not started, exit 8, the command, its code and the log named.
    failing = ["echo preparing", "echo 'npm ERR! missing lockfile' >&2; exit 3", "echo never-run"]
    write_agent(agents_dir, "broken", {"provider": "fake", "model": "fake-1", "worktree": True, "worktree_setup": failing})
    failed = run(agents_dir, repo, "broken", "hello")
    assert failed.returncode == 8, failed.stderr
    err_text = failed.stderr.decode()
    assert f"error: worktree setup: `{failing[1]}` exited 3 in " in err_text and "the agent was not started" in err_text
    assert "npm ERR! missing lockfile" in err_text and "Traceback" not in err_text and failed.stdout == b""
    broken_tree = next(
        Path(r["path"]) for r in json.loads(run_cli_inprocess("worktrees", "--json").stdout) if r["agent"] == "broken"
    )
    log_file = worktree_setup.log_path(paths.state_dir(), "broken", broken_tree)
    assert f"hint: the whole output is in {log_file}" in err_text
    assert log_file.read_text() == (f"$ {failing[0]}\npreparing\n[exit 0]\n$ {failing[1]}\nnpm ERR! missing lockfile\n[exit 3]\n")
    assert not any(s["agent"] == "broken" for s in json.loads(run_cli_inprocess("sessions", "--json").stdout))
    # status shows it on the agent's row, in the table, the JSON and the one line.
    (shown,) = [r for r in status_json() if r["agent"] == "broken"]
    assert shown["state"] == "setup-failed" and shown["working_dir"] == str(broken_tree)
    assert shown["worktree_setup"] == {"ok": False, "exit": 3, "command": failing[1], "log": str(log_file)}
    table = run_cli_inprocess("status").stdout.decode()
    assert "setup failed (exit 3)" in table and str(log_file) in table
    line = run_cli_inprocess("status", "--line", "broken").stdout.decode()
    assert line.startswith("broken · worktree setup failed (exit 3): ") and str(log_file) in line

    # Fixed: the next start runs it again (the worktree is there already), and the agent starts.
    write_agent(
        agents_dir, "broken", {"provider": "fake", "model": "fake-1", "worktree": True, "worktree_setup": ["echo fixed", COUNT]}
    )
    fixed = run(agents_dir, repo, "broken", "hello")
    assert fixed.returncode == 0, fixed.stderr
    assert b"did not finish last time: running it again" in fixed.stderr and runs(broken_tree, "broken") == 1
    assert not any(r["agent"] == "broken" for r in status_json())
    assert run(agents_dir, repo, "broken", "-c", "again").returncode == 0 and runs(broken_tree, "broken") == 1
    # Removing the worktree forgets its setup.
    assert run_cli_inprocess("worktrees", "remove", "broken", cwd=repo).returncode == 0
    assert worktree_setup.read(paths.state_dir(), "broken", broken_tree) is None and not log_file.exists()


# -- in tmux: `tmux up` says what became of each setup ----------------------------------------------------


def test_tmux_up_names_a_failed_setup_and_one_still_running(agents_dir: Path, tmp_path: Path, socket: str) -> None:
    from tests.test_tmux import up

    repo = make_repo(tmp_path / "proj")
    gate = tmp_path / "gate"
    write_agent(agents_dir, "fails", {"provider": "fake", "model": "fake-1", "worktree_setup": ["echo no >&2; exit 5"]})
    failed = up(socket, agents_dir, repo, "fails", "--worktree")  # decided when its pane dies, well within the wait
    said = failed.stderr.decode()
    # ("failed (exit 8): …" once tmux has reaped the pane's process; "failed: …" when the wait read the pane first)
    assert failed.returncode != 0 and "  fails  failed" in said and "worktree setup: `echo no >&2; exit 5` exited 5" in said
    # A setup that waits for the test (a gate, not a clock) is still running when `up`'s wait is over.
    waiting = f"until [ -e {gate} ]; do sleep 0.1; done"
    write_agent(agents_dir, "slow", {"provider": "fake", "model": "fake-1", "worktree_setup": [waiting]})
    slow = up(socket, agents_dir, repo, "slow", "--worktree", "--wait", "10", "--session", "second")
    assert slow.returncode != 0 and f"its worktree setup still runs (`{waiting}`, log " in slow.stderr.decode()
    rows = {r["agent"]: r for r in status_json() if r["state"] in ("setting-up", "setup-failed")}
    assert rows["slow"]["state"] == "setting-up" and rows["slow"]["worktree_setup"]["ok"] is None
    assert rows["fails"]["state"] == "setup-failed" and rows["fails"]["worktree_setup"]["exit"] == 5
    table = run_cli_inprocess("status", "--socket", socket).stdout.decode()  # the dead panes of that server too
    assert "setting up: until" in table and "setup failed (exit 5)" in table and "dead (exit 8)" in table
    gate.touch()  # the setup ends, the agent starts in its pane
    wait_for(lambda: any(r["agent"] == "slow" and r["state"] == "waiting" for r in status_json()), what="slow started")
    assert not any(r["state"] == "setting-up" for r in status_json())


def test_ctrl_c_during_the_setup_ends_it_and_the_next_start_runs_it_again(agents_dir: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    marker = tmp_path / "interrupt-once"
    marker.touch()
    # The first run interrupts agentlaunch itself (its parent: SIGINT, as Ctrl-C sends it) and would then sleep long.
    setup = [f"if [ -e {marker} ]; then rm {marker}; kill -INT $PPID; exec sleep 30; fi", COUNT]  # exec: one process
    write_agent(agents_dir, "wt", {"provider": "fake", "model": "fake-1", "worktree": True, "worktree_setup": setup})
    first = run(agents_dir, repo, "wt", "hello")
    assert first.returncode == 130, first.stderr
    assert b"Traceback" not in first.stderr
    (row,) = json.loads(run_cli_inprocess("worktrees", "--json").stdout)
    tree = Path(row["path"])
    log = worktree_setup.log_path(paths.state_dir(), "wt", tree)
    assert log.read_text().endswith("[interrupted]\n") and runs(tree, "wt") == 0
    (shown,) = [r for r in status_json() if r["agent"] == "wt"]
    assert shown["state"] == "setup-failed" and shown["worktree_setup"]["ok"] is False
    again = run(agents_dir, repo, "wt", "hello")
    assert again.returncode == 0, again.stderr
    assert b"did not finish last time: running it again" in again.stderr and runs(tree, "wt") == 1


def test_a_state_directory_that_cannot_hold_the_log_is_a_state_error(tmp_path: Path) -> None:
    from agentlaunch.errors import StateError

    state, where = tmp_path / "state", place(tmp_path)
    state.mkdir()
    (state / worktree_setup.SETUP_DIR).write_text("a file where the folder goes")
    with pytest.raises(StateError, match="cannot keep the worktree setup's log and record") as caught:
        ensure_setup([COUNT], where, state, created=True, report=lambda _: None)
    assert caught.value.exit_code == ExitCode.STATE and runs(where.worktree, "wt") == 0
