"""``agentlaunch fleet --watch --json`` on this machine: every agent, ``synced``, then one line per change as the
status folder changes, nothing while nothing changes; its end (the reader gone, stdin closed); the lines a host
that goes down and comes back makes (:class:`~agentlaunch.hosts.watch.Merged`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.fleet.stream import Changes
from agentlaunch.hosts.config import Host
from agentlaunch.hosts.watch import UNREACHABLE_ID, Merged
from tests.support.cli_runs import run_cli_inprocess
from tests.support.fleet_stream import Stream, change

pytestmark = pytest.mark.timeout(60)


def write_record(state_dir: Path, pid: int, **fields: object) -> Path:
    folder = state_dir / "status"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{pid}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"agent": "cx", "pid": pid, "state": "waiting", "session_id": "s-1"} | fields))
    tmp.rename(path)  # as a launch writes it: whole, at once
    return path


@pytest.fixture
def stream(isolated_home: Path, agents_dir: Path) -> Iterator[Stream]:
    watch = Stream("--agents-dir", str(agents_dir))
    yield watch
    watch.close()


def test_every_agent_then_synced_then_each_change_and_nothing_while_nothing_changes(stream: Stream, isolated_home: Path) -> None:
    first = stream.until(change("agent", id="def:demo"), what="the defined agent")
    assert first["version"] == 1 and first["agent"]["state"] == "not-running" and first["agent"]["host"] is None
    stream.until(change("synced"), what="synced")
    record = write_record(isolated_home / "state", os.getpid())  # this process: a live agentlaunch for the fleet
    live = stream.until(change("agent", id=f"live:{os.getpid()}.json"), timeout=10, what="the record")
    assert live["agent"]["state"] == "waiting" and live["agent"]["running"] is True
    assert live["agent"]["session_id"] == "s-1"
    write_record(isolated_home / "state", os.getpid(), state="asking")
    asking = stream.until(change("agent", id=f"live:{os.getpid()}.json"), timeout=10, what="the change to asking")
    assert asking["agent"]["state"] == "asking" and asking["agent"]["needs_you"] is True
    assert stream.quiet(1.5) == []  # nothing changed: nothing written
    record.unlink()
    stream.until(change("gone", id=f"live:{os.getpid()}.json"), timeout=10, what="the record gone")


def test_watch_needs_json(isolated_home: Path) -> None:
    done = run_cli_inprocess("fleet", "--watch")
    assert done.returncode == 2 and b"add --json" in done.stderr


def test_the_stream_ends_when_its_reader_closes_it(isolated_home: Path, agents_dir: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentlaunch", "fleet", "--watch", "--json", "--agents-dir", str(agents_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    while b'"synced"' not in proc.stdout.readline():
        pass
    proc.stdout.close()
    write_record(isolated_home / "state", os.getpid())  # its next line finds no reader
    assert proc.wait(15) == 0
    assert proc.stderr.read() == b""  # no BrokenPipeError said


def test_a_host_s_watch_ends_when_its_stdin_closes(isolated_home: Path, agents_dir: Path) -> None:
    stream = Stream("--local", "--end-with-stdin", "--agents-dir", str(agents_dir))
    stream.until(change("synced"))
    assert stream.proc.stdin is not None
    stream.proc.stdin.close()  # what a dropped connection does to the host's agentlaunch
    assert stream.proc.wait(10) == 0


def test_changes_say_only_what_changed() -> None:
    changes = Changes("box")
    a, b = {"agent": "a", "state": "waiting"}, {"agent": "b", "state": "tool"}
    first = changes.lines({"live:1": a, "def:b": b}, [])
    assert [(c["change"], c.get("id")) for c in first] == [("agent", "live:1"), ("agent", "def:b"), ("problems", None)]
    assert all(c["host"] == "box" and c["version"] == 1 for c in first)
    assert changes.lines({"live:1": a, "def:b": b}, []) == []
    again = changes.lines({"live:1": {**a, "state": "asking"}}, ["tmux: gone"])
    assert [(c["change"], c.get("id")) for c in again] == [("agent", "live:1"), ("gone", "def:b"), ("problems", None)]
    assert again[2]["problems"] == ["tmux: gone"]


def test_a_host_down_is_its_agents_gone_and_one_row_until_it_comes_back() -> None:
    said: list[dict[str, Any]] = []
    merged = Merged(said.append)
    box = Host(name="box", ssh="box")
    merged.got({"version": 1, "change": "agent", "host": "box", "id": "live:9.json", "agent": {"agent": "cx"}})
    merged.got({"version": 1, "change": "synced", "host": "box"})
    said.clear()
    merged.down(box, "host unreachable: box: the connection ended")
    assert [(c["change"], c.get("id")) for c in said] == [("gone", "live:9.json"), ("agent", UNREACHABLE_ID), ("synced", None)]
    row = said[1]["agent"]
    assert row["state"] == "host-unreachable" and row["host"] == "box" and row["agent"] == "box"
    assert row["problem"] == "host unreachable: box: the connection ended"
    said.clear()
    merged.down(box, "host unreachable: box: the connection ended")  # tried again, still down: not a change
    assert said == []
    merged.down(box, "host unreachable: box: connection refused (no ssh server listens there)")
    assert [c["change"] for c in said] == ["agent"] and "connection refused" in said[0]["agent"]["problem"]
    said.clear()
    merged.got({"version": 1, "change": "agent", "host": "box", "id": "live:9.json", "agent": {"agent": "cx"}})
    assert [(c["change"], c.get("id")) for c in said] == [("gone", UNREACHABLE_ID), ("agent", "live:9.json")]
