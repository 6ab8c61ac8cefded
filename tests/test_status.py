"""The live status record: what it holds, how often it is written, stale records, `agentlaunch status`."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentlaunch import paths
from agentlaunch.launch.loop import Loop
from agentlaunch.live import status as status_module
from agentlaunch.live.status import StatusWriter, line_for, one_line, process_running, read_records, status_dir
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.waits import wait_for


def record(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "agent": "demo",
        "provider": "fake",
        "model": "fake-1",
        "session_id": "s1",
        "pid": os.getpid(),
        "state": "waiting",
        "context": 12_000,
        "window": 60_000,
        "window_source": "agent.yaml",
        "percent": 20.0,
        "to_compaction": 15_000,
        "cost": "$0.0123",
        "calls": 2,
        "updated": "2026-01-01T00:00:00+00:00",
    }
    base.update(overrides)
    return base


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# -- the one-line form ------------------------------------------------------


def test_one_line_has_agent_state_context_percent_tokens_to_compaction_and_cost() -> None:
    assert one_line(record()) == "demo · waiting · ctx 20.0% · 15,000 to compaction · $0.0123"


def test_one_line_past_threshold_unknown_window_and_no_cost() -> None:
    line = one_line(record(state="thinking", to_compaction=-5, cost=None))
    assert line == "demo · thinking · ctx 20.0% · past compaction threshold"
    observed = one_line(record(percent=100.0, window_source="observed", to_compaction=None, cost="unpriced"))
    assert observed == "demo · waiting · ctx 12,000 · unpriced"


# -- the writer --------------------------------------------------------------


def run_loop_until(loop: Loop, condition: Any, timeout: float, what: str) -> None:
    """Run ``loop`` until ``condition()`` holds (checked every 20 ms), or fail after ``timeout`` seconds."""

    def check() -> None:
        if condition():
            loop.stop()
        else:
            loop.call_later(0.02, check)

    deadline = loop.call_later(timeout, loop.stop)
    check()
    loop.run()
    deadline.cancel()
    assert condition(), f"timed out after {timeout}s waiting for {what}"


def test_writer_replaces_the_record_at_most_twice_a_second_and_never_loses_the_last(tmp_path: Path) -> None:
    clock = FakeClock()
    loop = Loop()  # the launch's loop, which the trailing write waits on
    writer = StatusWriter(tmp_path, pid=os.getpid(), interval=0.5, clock=clock, pane_title=False, later=loop.call_later)
    writer.update(record(calls=1))
    assert writer.writes == 1
    for calls in range(2, 12):  # a burst inside one interval: held back
        clock.now += 0.01
        writer.update(record(calls=calls))
    assert writer.writes == 1
    assert json.loads(writer.path.read_text())["calls"] == 1
    # The trailing timer writes the last update of the burst without any further event.
    run_loop_until(loop, lambda: writer.writes == 2, timeout=5, what="the trailing write")
    assert json.loads(writer.path.read_text())["calls"] == 11
    clock.now += 0.6
    writer.update(record(calls=12))
    assert writer.writes == 3
    writer.close()


def test_writer_writes_every_change_of_state_at_once(tmp_path: Path) -> None:
    clock = FakeClock()
    writer = StatusWriter(tmp_path, interval=0.5, clock=clock, pane_title=False)
    writer.update(record(state="thinking"))
    clock.now += 0.01
    writer.update(record(state="exited"))
    assert writer.writes == 2
    assert json.loads(writer.path.read_text())["state"] == "exited"
    clock.now += 0.01
    writer.update(record(state="starting"))
    assert writer.writes == 3
    # A turn's end is written at once (CI run 40: a send --wait had its answer while the record still said
    # thinking, so the next look at status found a turn that was over); its figures within the interval do wait.
    for state in ("thinking", "waiting"):
        clock.now += 0.01
        writer.update(record(state=state))
    assert writer.writes == 5 and json.loads(writer.path.read_text())["state"] == "waiting"
    clock.now += 0.01
    writer.update(record(state="waiting", calls=7))
    assert writer.writes == 5


def test_writer_does_not_write_again_a_record_the_file_already_holds(tmp_path: Path) -> None:
    """A session's end emits `exited` and then its close with the same figures: one write, not two."""
    clock = FakeClock()
    writer = StatusWriter(tmp_path, interval=0.5, clock=clock, pane_title=False)
    writer.update(record(state="exited", calls=3))
    clock.now += 1
    writer.update(record(state="exited", calls=3))
    assert writer.writes == 1
    clock.now += 1
    writer.update(record(state="exited", calls=4))
    assert writer.writes == 2 and json.loads(writer.path.read_text())["calls"] == 4
    writer.close()
    assert not writer.path.exists()


def test_writer_makes_its_folders_once_and_again_when_they_went(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folders are made (and tightened to 0700) before the first write only, not before each of a session's
    writes; a folder removed since is made again and the record still written."""
    made: list[Path] = []
    real = status_module.private_dir
    monkeypatch.setattr(status_module, "private_dir", lambda path: made.append(path) or real(path))
    clock = FakeClock()
    writer = StatusWriter(tmp_path / "state" / "status", interval=0.5, clock=clock, pane_title=False)
    for state in ("starting", "thinking", "waiting"):
        clock.now += 1
        writer.update(record(state=state))
    assert writer.writes == 3 and made == [tmp_path / "state", tmp_path / "state" / "status"]
    shutil.rmtree(tmp_path / "state")
    clock.now += 1
    writer.update(record(state="thinking"))
    assert writer.writes == 4 and json.loads(writer.path.read_text())["state"] == "thinking"
    assert len(made) == 4 and stat.S_IMODE((tmp_path / "state" / "status").stat().st_mode) == 0o700


def test_writer_close_flushes_then_removes_the_record(tmp_path: Path) -> None:
    clock = FakeClock()
    writer = StatusWriter(tmp_path, interval=10, clock=clock, pane_title=False)
    writer.update(record(calls=1))
    writer.update(record(calls=2))
    writer.close(remove=False)
    assert json.loads(writer.path.read_text())["calls"] == 2
    writer.update(record(calls=3))  # after close: ignored
    assert json.loads(writer.path.read_text())["calls"] == 2
    writer2 = StatusWriter(tmp_path / "b", interval=10, clock=clock, pane_title=False)
    writer2.update(record())
    writer2.close()
    assert not writer2.path.exists()


def test_writer_leaves_no_temporary_files(tmp_path: Path) -> None:
    writer = StatusWriter(tmp_path, interval=0, pane_title=False)
    for i in range(20):
        writer.update(record(calls=i))
    assert [p.name for p in tmp_path.iterdir()] == [writer.path.name]


# -- reading -------------------------------------------------------------------


def test_records_of_dead_processes_are_flagged_stale_then_removed(tmp_path: Path) -> None:
    (tmp_path / "1.json").write_text(json.dumps(record(agent="alive")))
    (tmp_path / "2.json").write_text(json.dumps(record(agent="gone", pid=dead_pid())))
    (tmp_path / "3.json").write_text("{not json")
    (tmp_path / ".4.json.tmp").write_text("partial")
    first = read_records(tmp_path)
    assert [(r.agent, r.stale) for r in first] == [("alive", False), ("gone", True)]
    assert first[1].state == "stale" and first[1].as_dict()["stale"] is True
    assert not (tmp_path / "2.json").exists()
    assert [r.agent for r in read_records(tmp_path)] == ["alive"]


def test_a_reused_pid_is_stale(tmp_path: Path) -> None:
    (tmp_path / "1.json").write_text(json.dumps(record(pid_start="1")))  # our pid, another start time
    assert read_records(tmp_path, clean=False)[0].stale


def test_line_for_an_agent_that_is_not_running_is_empty(tmp_path: Path) -> None:
    (tmp_path / "1.json").write_text(json.dumps(record(agent="gone", pid=dead_pid())))
    assert line_for("demo", tmp_path) == ""
    assert line_for("gone", tmp_path) == ""
    (tmp_path / "2.json").write_text(json.dumps(record()))
    assert line_for("demo", tmp_path).startswith("demo · waiting")


# -- the command -----------------------------------------------------------------


def test_status_command_without_agents() -> None:
    result = run_cli_inprocess("status", "--json")
    assert result.returncode == 0 and json.loads(result.stdout) == []
    result = run_cli_inprocess("status")
    assert result.returncode == 0 and result.stdout == b"" and b"no agent is running" in result.stderr
    result = run_cli_inprocess("status", "--line", "demo")
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")


def test_status_line_refuses_json_and_watch() -> None:
    assert run_cli_inprocess("status", "--line", "demo", "--json").returncode == 2
    assert run_cli_inprocess("status", "--watch", "--json").returncode == 2


def test_status_shows_a_stale_record_once_and_cleans_it() -> None:
    folder = status_dir()
    folder.mkdir(parents=True)
    (folder / "99.json").write_text(json.dumps(record(pid=dead_pid())))
    shown = json.loads(run_cli_inprocess("status", "--json").stdout)
    assert [(r["agent"], r["stale"]) for r in shown] == [("demo", True)]
    assert json.loads(run_cli_inprocess("status", "--json").stdout) == []


def start_slow_run(agents_dir: Path, workdir: Path) -> subprocess.Popen[bytes]:
    # stderr goes to a file, so that an unexpected exit code can be explained (see stderr_of).
    return subprocess.Popen(
        [sys.executable, "-m", "agentlaunch", "run", "demo", "/slow hello", "--agents-dir", str(agents_dir)],
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=(workdir / "agentlaunch.stderr").open("wb"),
    )


def stderr_of(workdir: Path) -> str:
    path = workdir / "agentlaunch.stderr"
    return path.read_text(errors="replace") if path.exists() else ""


def live_record(pid: int, state: str | None = None) -> dict[str, Any] | None:
    for r in read_records(clean=False):
        if r.data.get("pid") == pid and (state is None or r.data.get("state") == state):
            return r.data
    return None


def test_a_running_session_keeps_a_record_that_goes_away_when_it_ends(agents_dir: Path, workdir: Path) -> None:
    proc = start_slow_run(agents_dir, workdir)
    try:
        data = wait_for(lambda: live_record(proc.pid, "thinking"), what="a thinking record")
        assert data["agent"] == "demo" and data["provider"] == "fake" and data["model"] == "fake-1"
        assert data["session_id"] and data["cli_pid"] and data["cli_pid"] != proc.pid
        assert data["window"] == 60_000 and data["state"] == "thinking"
        assert set(data["usage"]) == {"input", "cache_write", "cache_read", "output", "reasoning"}
        assert {"percent", "to_compaction", "cost_usd", "cost", "calls", "turns"} <= set(data)
        line = run_cli_inprocess("status", "--line", "demo").stdout.decode()
        assert line.startswith("demo · thinking") and line.endswith("\n")
        table = run_cli_inprocess("status").stdout.decode()
        assert "demo" in table and "thinking" in table and str(proc.pid) in table
        # SIGTERM is a clean end: the record is removed, not left stale.
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 143, stderr_of(workdir)
        assert list(status_dir().glob("*.json")) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_killed_session_leaves_a_stale_record(agents_dir: Path, workdir: Path) -> None:
    proc = start_slow_run(agents_dir, workdir)
    try:
        data = wait_for(lambda: live_record(proc.pid, "thinking"), what="a thinking record")
        proc.kill()
        proc.wait()
        # The fake CLI notices its stdin closed and ends; make sure, it is ours.
        try:
            wait_for(lambda: not process_running(data["cli_pid"]), timeout=10, what="the fake CLI to end")
        except AssertionError:
            os.kill(data["cli_pid"], signal.SIGKILL)
        shown = json.loads(run_cli_inprocess("status", "--json").stdout)
        assert [(r["agent"], r["stale"]) for r in shown] == [("demo", True)]
        assert run_cli_inprocess("status", "--line", "demo").stdout == b""
        assert json.loads(run_cli_inprocess("status", "--json").stdout) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_headless_turn_ends_with_no_record_left(agents_dir: Path, workdir: Path) -> None:
    result = run_cli("run", "demo", "hello", "--agents-dir", str(agents_dir), cwd=workdir)
    assert result.returncode == 0
    assert status_dir().is_dir() and list(status_dir().iterdir()) == []
    assert paths.state_dir() in status_dir().parents


@pytest.mark.parametrize("state", ["starting", "waiting", "thinking", "tool", "exited"])
def test_every_state_shows_in_the_line(state: str) -> None:
    assert one_line(record(state=state)).split(" · ")[1] == state


def test_status_watch_refreshes_until_ctrl_c(agents_dir: Path, workdir: Path) -> None:
    import pexpect

    argv = ["-m", "agentlaunch", "status", "--watch", "--interval", "0.2"]
    watch = pexpect.spawn(sys.executable, argv, env=dict(os.environ), timeout=30, dimensions=(40, 250))
    try:
        watch.expect("no agent is running")
        proc = start_slow_run(agents_dir, workdir)
        try:
            wait_for(lambda: live_record(proc.pid, "thinking"), what="a thinking record")
            watch.expect("thinking")  # the table picked up the new session without a restart
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        watch.sendintr()
        watch.expect(pexpect.EOF)
    finally:
        watch.close(force=True)
    assert watch.exitstatus == 0


def test_asking_stands_out_in_the_line_the_table_and_stays_asking_in_json() -> None:
    # A permission prompt or a question waits (native mode): a person is needed.
    assert one_line(record(state="asking")) == "demo · ASKING: needs you · ctx 20.0% · 15,000 to compaction · $0.0123"
    folder = status_dir()
    folder.mkdir(parents=True)
    (folder / f"{os.getpid()}.json").write_text(json.dumps(record(state="asking")))
    assert [r["state"] for r in json.loads(run_cli_inprocess("status", "--json").stdout)] == ["asking"]
    assert run_cli_inprocess("status", "--line", "demo").stdout.decode().startswith("demo · ASKING: needs you · ")
    table = run_cli_inprocess("status").stdout.decode()
    assert "ASKING: needs you" in table or "ASKING:" in table  # a narrow table may wrap the cell
