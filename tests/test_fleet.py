"""The fleet's read model: records, panes, setups and notes a test makes, joined into one list of agents.

No real home (the conftest's state folder), and tmux only on a private socket where a real listing is needed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlaunch.fleet import states
from agentlaunch.fleet.model import Agent, join, read_fleet
from agentlaunch.fleet.panes import FIELDS, LeanTmux, Pane, list_panes, parse
from agentlaunch.fleet.records import read_folder, read_record
from agentlaunch.processes import process_start


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def record(agent: str, state: str = "waiting", *, pid: int | None = None, **fields: Any) -> dict[str, Any]:
    pid = os.getpid() if pid is None else pid
    return {
        "version": 1,
        "agent": agent,
        "state": state,
        "pid": pid,
        "pid_start": process_start(pid),
        "session_id": f"{agent}-session",
        "working_dir": "/work",
        "started": "2026-12-06T10:00:00+00:00",
        **fields,
    }


def write(folder: Path, name: str, data: dict[str, Any] | str | bytes) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(data, dict):
        data = json.dumps(data)
    (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def row(
    agent: str,
    pane_id: str,
    *,
    pid: int = 0,
    dead: bool = False,
    status: str = "",
    stopped: str = "",
    sid: str = "",
    fork: str = "",
    title: str = "",
) -> str:
    """One line of ``tmux list-panes -F PANE_FORMAT``, in the order of FIELDS."""
    return "\t".join(
        (agent, "team", pane_id, "1" if dead else "0", status, str(pid), stopped, sid, fork, "", "@1", agent or "sh", title)
    )


def by_key(agents: list[Agent]) -> dict[str, Agent]:
    return {a.key: a for a in agents}


def test_a_record_joins_its_pane_by_pid_and_a_record_without_a_pane_still_runs(tmp_path: Path) -> None:
    write(tmp_path, "1.json", record("cx"))
    write(tmp_path, "2.json", record("plain", pid=os.getppid()))  # a launch in a terminal: no pane
    records, unreadable = read_folder(tmp_path, clean=False)
    agents = by_key(join(records, parse(row("cx", "%3", pid=os.getpid(), sid="cx-session"))))
    assert unreadable == []
    cx, plain = agents["live:1.json"], agents["live:2.json"]
    assert (cx.state, cx.running, cx.pane.pane_id if cx.pane else None, cx.session_id) == ("waiting", True, "%3", "cx-session")
    assert (plain.state, plain.running, plain.pane) == ("waiting", True, None)


def test_a_record_of_a_dead_pid_is_stale_kept_until_cleaned(tmp_path: Path) -> None:
    write(tmp_path, "1.json", record("gone", pid=dead_pid()))
    (agent,) = join(read_folder(tmp_path, clean=False)[0])
    assert (agent.state, agent.running, agent.needs_you) == (states.STALE, False, False)
    assert agent.problem == "its agentlaunch process is gone (stale record)"
    assert (tmp_path / "1.json").exists()
    read_folder(tmp_path, clean=True)
    assert not (tmp_path / "1.json").exists()


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ('{"agent": "torn", "state": "wai', "is not JSON"),
        ("", "is not JSON"),
        (b"\xff\xfe{}", "is not JSON"),
        ("[1, 2]", "is not a JSON object"),
        ("null", "is not a JSON object"),
        ("[" * 100_000, "is not JSON"),
    ],
)
def test_a_torn_partial_or_garbage_record_is_said_unreadable_and_the_others_are_read(
    tmp_path: Path, content: str | bytes, why: str
) -> None:
    write(tmp_path, "1.json", record("fine"))
    write(tmp_path, "2.json", content)
    records, unreadable = read_folder(tmp_path, clean=False)
    assert [r.agent for r in records] == ["fine"] and unreadable == [("2.json", why)]
    bad = by_key(join(records, unreadable=unreadable))["bad:2.json"]
    assert (bad.name, bad.state, bad.problem) == ("2", states.UNREADABLE, f"status record 2.json {why}")


def test_a_fifo_or_a_huge_file_is_no_record_and_never_blocks(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    os.mkfifo(tmp_path / "1.json")
    write(tmp_path, "2.json", b" " * (300 << 10) + b"{}")
    records, unreadable = read_folder(tmp_path)
    assert records == [] and [name for name, _ in unreadable] == ["1.json", "2.json"]
    assert all(why.startswith("cannot be read: ") for _, why in unreadable)


def test_unknown_fields_are_kept_when_plain_and_left_out_otherwise(tmp_path: Path) -> None:
    write(tmp_path, "1.json", record("cx", future="kept", later=3, nested={"a": 1}, listed=[1], context="x"))
    (r,) = read_folder(tmp_path)[0]
    assert (r.data["future"], r.data["later"]) == ("kept", 3)
    assert not {"nested", "listed", "context"} & set(r.data)


def test_a_dead_pane_with_no_record_is_dead_stopped_or_budget_stopped() -> None:
    listing = "\n".join(
        [
            row("crashed", "%1", pid=11, dead=True, status="3"),
            row("halted", "%2", pid=12, dead=True, status="143", stopped="12 2026-12-06T10:00:00+00:00"),
            row("spent", "%3", pid=13, dead=True, status="6"),
            row("again", "%4", pid=14, dead=True, status="1", stopped="99 2026-12-06T10:00:00+00:00"),  # an older process's mark
            row("", "%5", pid=15, dead=True, status="1"),  # not an agent's pane
        ]
    )
    agents = {a.name: a for a in join([], parse(listing))}
    assert {n: (a.state, a.exit_status) for n, a in agents.items()} == {
        "crashed": (states.DEAD, 3),
        "halted": (states.STOPPED, 143),
        "spent": (states.BUDGET_STOPPED, 6),
        "again": (states.DEAD, 1),
    }


def test_a_live_pane_with_no_record_yet_is_no_agent_of_its_own() -> None:
    """A launch that has not written its record yet (its first moments) shows as its definition, not as a pane."""
    (agent,) = join([], parse(row("early", "%6", pid=16)), names=["early"])
    assert (agent.key, agent.state, agent.pane) == ("def:early", states.NOT_RUNNING, None)


def test_a_dead_pane_of_an_agent_running_elsewhere_is_its_past_unless_a_fork(tmp_path: Path) -> None:
    write(tmp_path, "1.json", record("cx"))
    listing = "\n".join(
        [
            row("cx", "%1", pid=1, dead=True, status="1", sid="old"),
            row("cx", "%2", pid=2, dead=True, status="1", sid="forked", fork="cx-session"),
        ]
    )
    agents = join(read_folder(tmp_path)[0], parse(listing))
    assert sorted(a.key for a in agents) == ["live:1.json", "pane:%2"]


def test_forks_are_numbered_by_start_and_an_ended_fork_comes_after(tmp_path: Path) -> None:
    others = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(2)]
    try:
        write(tmp_path, "1.json", record("cx", started="2026-12-06T10:00:00+00:00"))
        write(
            tmp_path,
            "2.json",
            record("cx", pid=others[0].pid, started="2026-12-06T10:09:00+00:00", fork_of="cx-session", session_id="f2"),
        )
        write(
            tmp_path,
            "3.json",
            record("cx", pid=others[1].pid, started="2026-12-06T10:05:00+00:00", fork_of="cx-session", session_id="f1"),
        )
        listing = row("cx", "%9", pid=1, dead=True, status="143", stopped="1", sid="f0", fork="cx-session")
        agents = join(read_folder(tmp_path)[0], parse(listing))
        assert sorted(a.label for a in agents) == ["cx", "cx ⑂ 2", "cx ⑂ 3", "cx ⑂ 4"]
        assert {a.session_id: a.label for a in agents if a.fork} == {"f1": "cx ⑂ 2", "f2": "cx ⑂ 3", "f0": "cx ⑂ 4"}
    finally:
        for proc in others:
            proc.kill()
            proc.wait()


def test_defined_agents_not_seen_are_not_running_or_stopped_by_their_note(tmp_path: Path) -> None:
    write(tmp_path / "status", "1.json", record("cx"))
    write(tmp_path / "stopped", "halted.json", {"agent": "halted", "reason": "agentlaunch stop", "at": "2026-12-06T10:00:00"})
    write(tmp_path / "stopped", "broken.json", "not json")
    found = read_fleet(tmp_path, names=["cx", "halted", "broken", "idle"])
    assert {a.name: a.state for a in found.agents} == {
        "cx": "waiting",
        "halted": states.STOPPED,
        "broken": states.NOT_RUNNING,
        "idle": states.NOT_RUNNING,
    }


def test_a_failed_or_running_worktree_setup_is_an_agent_of_the_fleet(tmp_path: Path) -> None:
    write(
        tmp_path / "worktree-setup",
        "a.json",
        {"agent": "setup", "worktree": str(tmp_path), "log": "/l", "ok": False, "exit": 2, "command": "npm ci"},
    )
    write(tmp_path / "worktree-setup", "b.json", {"agent": "gone", "worktree": str(tmp_path / "no"), "log": "/l", "ok": False})
    found = read_fleet(tmp_path, names=["setup"])
    assert [(a.name, a.state, a.working_dir) for a in found.agents] == [("setup", states.SETUP_FAILED, str(tmp_path))]


@pytest.mark.parametrize(
    ("state", "needs"),
    [
        ("asking", True),
        ("stalled", True),
        ("paused", True),
        ("retrying", True),
        ("waiting", False),
        ("thinking", False),
        ("starting", False),
    ],
)
def test_needs_you_is_decided_once(tmp_path: Path, state: str, needs: bool) -> None:
    write(tmp_path, "1.json", record("cx", state))
    (agent,) = join(read_folder(tmp_path)[0])
    assert agent.needs_you is needs


def test_a_listing_row_that_is_not_one_is_skipped_and_a_title_may_hold_tabs() -> None:
    listing = "garbage\n" + row("cx", "%1", pid=5, title="a\tb") + "\n\t\t\n"
    (pane,) = parse(listing)
    assert (pane.agent, pane.pid, pane.title, pane.dead) == ("cx", 5, "a\tb", False)
    assert len(FIELDS) == 13


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=2000))
def test_the_record_reader_takes_any_bytes(tmp_path: Path, blob: bytes) -> None:
    path = tmp_path / "1.json"
    path.write_bytes(blob)
    data, why = read_record(str(path))
    assert (data is None) == bool(why)
    if data is not None:
        assert all(isinstance(k, str) for k in data)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
KNOWN = ("agent", "state", "pid", "session_id", "fork_of", "started", "context", "percent", "usage", "cache", "done")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(KNOWN) | st.text(max_size=8), JSON, max_size=10), st.text(max_size=200))
def test_any_record_joins_without_raising_and_every_agent_has_a_name_and_state(
    tmp_path: Path, data: dict[str, Any], listing: str
) -> None:
    (tmp_path / "1.json").write_text(json.dumps(data))
    records, unreadable = read_folder(tmp_path, clean=False)
    for agent in join(records, parse(listing), unreadable=unreadable, names=["x"]):
        assert isinstance(agent.name, str) and isinstance(agent.state, str) and isinstance(agent.label, str)
        assert agent.session_id is None or isinstance(agent.session_id, str)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("\t\n%@#01a "), max_size=300))
def test_any_listing_parses_without_raising(listing: str) -> None:
    for pane in parse(listing):
        assert isinstance(pane, Pane) and isinstance(pane.pid, int)


@pytest.fixture
def private_tmux() -> Iterator[str]:
    socket = f"al-fleet-{uuid.uuid4().hex[:10]}"
    yield socket
    subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


def test_the_lean_listing_reads_a_real_server_and_no_server_is_no_problem(private_tmux: str) -> None:
    tmux = LeanTmux.found(private_tmux)
    assert tmux is not None
    assert (list_panes(tmux).panes, list_panes(tmux).problem) == ([], None)  # no server yet

    def run(*args: str) -> str:
        return subprocess.run(["tmux", "-L", private_tmux, *args], capture_output=True, text=True, check=True).stdout

    pane = run("new-session", "-d", "-s", "team", "-P", "-F", "#{pane_id}", "sleep", "60").strip()
    run(
        "set-option",
        "-p",
        "-t",
        pane,
        "@agentlaunch_agent",
        "cx",
        ";",
        "set-option",
        "-p",
        "-t",
        pane,
        "@agentlaunch_session",
        "s1",
    )
    (found,) = list_panes(tmux).panes
    assert (found.agent, found.tmux_session, found.pane_id, found.session_id, found.dead) == ("cx", "team", pane, "s1", False)
    assert found.pid > 0 and list_panes(tmux, "team").panes == [found] and list_panes(tmux, "other").code != 0
