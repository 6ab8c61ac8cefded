"""``fleet --watch --json`` across hosts, against a real sshd (tests/support/ssh_server.py): a host's agents and its
changes come over one long-lived watch; the connection killed mid-watch, or the host going down, makes its agents one
row "host unreachable: HOST: WHY"; the watch is started again by itself and the host's agents come back."""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_runs import run_cli_inprocess
from tests.support.fleet_stream import Stream, change
from tests.support.required import need
from tests.support.slow_proxy import SlowProxy
from tests.support.ssh_server import SshServer
from tests.support.waits import wait_for
from tests.test_fleet_watch import write_record
from tests.test_hosts_config import write_config

need("sshd")

pytestmark = pytest.mark.timeout(120)

REC = f"live:{os.getpid()}.json"


def solo_there(sshd: SshServer) -> None:
    """The remote side: one agent defined (``~/agents/solo``) and a running record (this test's process: alive, as a
    launch there would be)."""
    agents = sshd.remote / "home" / "agents"
    shutil.rmtree(agents, ignore_errors=True)
    (agents / "solo").mkdir(parents=True)
    (agents / "solo" / "agent.yaml").write_text("provider: claude\n")
    shutil.rmtree(sshd.remote / "state" / "status", ignore_errors=True)
    write_record(sshd.remote / "state", os.getpid())


@pytest.fixture
def watched(sshd: SshServer, isolated_home: Path) -> Iterator[tuple[SshServer, Stream]]:
    """Host ``box`` with one agent defined (``~/agents/solo``) and a running record, watched from here."""
    solo_there(sshd)
    write_config({"hosts": {"box": sshd.host(agents_dir="~/agents", timeout=10)}})
    stream = Stream("--agents-dir", str(isolated_home / "none"))
    yield sshd, stream
    stream.close()
    if sshd.proc is None:
        sshd.start()


def test_a_host_s_agents_and_changes_come_over_its_watch(watched: tuple[SshServer, Stream]) -> None:
    sshd, stream = watched
    stream.until(change("synced"), what="this machine synced")
    before = len(stream.seen)
    stream.until(change("synced", "box"), what="the host synced")
    agents = {c["id"]: c["agent"] for c in stream.seen[before:] if c["change"] == "agent"}
    assert set(agents) == {"def:solo", REC}
    assert agents["def:solo"]["host"] == "box" and agents["def:solo"]["state"] == "not-running"
    assert agents[REC]["running"] is True and agents[REC]["host"] == "box"
    write_record(sshd.remote / "state", os.getpid(), state="asking", state_reason="Bash: rm -rf 'x y'")
    asking = stream.until(change("agent", "box", id=REC), timeout=15, what="the change made on the host")
    assert asking["agent"]["state"] == "asking" and asking["agent"]["needs_you"] is True
    assert stream.quiet(2) == []  # nothing changes on either machine: nothing travels, nothing is written


def test_the_connection_killed_mid_watch_is_one_row_then_the_host_comes_back_by_itself(
    watched: tuple[SshServer, Stream],
) -> None:
    sshd, stream = watched
    stream.until(change("synced", "box"), what="the host synced")
    sshd.drop_connections()  # the shared connection (and the watch on it) killed: the server listens on
    gone = stream.until(change("gone", "box"), timeout=30, what="the host's agents gone")
    assert gone["id"] in {"def:solo", REC}
    down = stream.until(change("agent", "box", id="host-unreachable"), timeout=30, what="the host's one row")
    assert down["agent"]["state"] == "host-unreachable" and down["agent"]["agent"] == "box"
    assert down["agent"]["problem"].startswith("host unreachable: box: ")
    stream.until(change("gone", "box", id="host-unreachable"), timeout=30, what="the row taken off: the host is back")
    back = len(stream.seen) - 1
    stream.until(change("synced", "box"), timeout=30, what="the host synced again")
    assert {c["id"] for c in stream.seen[back:] if c["change"] == "agent"} == {"def:solo", REC}


def test_a_host_down_says_why_and_is_read_again_when_it_is_back(watched: tuple[SshServer, Stream]) -> None:
    sshd, stream = watched
    stream.until(change("synced", "box"), what="the host synced")
    sshd.stop()  # the host goes down: nothing listens on its port
    stream.until(
        change("agent", "box", id="host-unreachable", agent__problem=lambda p: "connection refused" in str(p)),
        timeout=30,
        what="the host's row saying no ssh server listens there",
    )
    sshd.start()
    stream.until(change("gone", "box", id="host-unreachable"), timeout=40, what="the host back by itself")
    back = len(stream.seen) - 1
    stream.until(change("synced", "box"), timeout=30, what="the host synced again")
    assert {c["id"] for c in stream.seen[back:] if c["change"] == "agent"} == {"def:solo", REC}


def test_a_host_whose_agentlaunch_is_older_or_missing_is_one_row_saying_so(sshd: SshServer, isolated_home: Path) -> None:
    old = sshd.remote / "bin" / "no-watch-agentlaunch"
    old.write_text('#!/bin/sh\necho "Error: No such option: --watch" >&2\nexit 2\n')
    old.chmod(0o755)
    write_config({"hosts": {"old": sshd.host(agentlaunch=str(old)), "bare": sshd.host(agentlaunch="/nonexistent/agentlaunch")}})
    stream = Stream("--agents-dir", str(isolated_home / "none"))
    try:
        both = {"old", "bare"}
        stream.until(lambda _: {c["host"] for c in stream.seen if c["change"] == "synced"} >= both, what="both hosts' rows")
        rows = {c["host"]: c["agent"] for c in stream.seen if c["change"] == "agent"}
        assert "its agentlaunch is older than this one (no fleet --watch)" in rows["old"]["problem"]
        assert "agentlaunch is not installed there (`/nonexistent/agentlaunch`" in rows["bare"]["problem"]
    finally:
        stream.close()


def test_a_slow_host_never_holds_up_this_machine_s_rows_nor_a_fast_host_s(
    sshd: SshServer, isolated_home: Path, agents_dir: Path
) -> None:
    """Host ``slow`` is the same server behind a proxy that delays each chunk (tests/support/slow_proxy.py): past its
    timeout it is one row saying so, beside this machine's and the fast host's rows; in the watch, held back, the
    fast host's rows and this machine's come first, and the slow host's once it answers."""
    solo_there(sshd)
    proxy = SlowProxy(sshd.port, delay=1.0)  # an ssh handshake is several round trips: seconds past a timeout of 2
    held = SlowProxy(sshd.port, delay=0.25, held=True)
    try:
        box = sshd.host(agents_dir="~/agents")
        write_config({"hosts": {"box": box, "slow": sshd.host_via(proxy.port, agents_dir="~/agents", timeout=2)}})
        agents = json.loads(run_cli_inprocess("fleet", "--json", "--agents-dir", str(agents_dir)).stdout)["agents"]
        by_host = {h: [a for a in agents if a["host"] == h] for h in (None, "box", "slow")}
        assert {a["agent"] for a in by_host[None]} >= {"demo"}, agents  # this machine's, read meanwhile
        assert {a["agent"] for a in by_host["box"]} == {"solo", "cx"}, agents
        (slow,) = by_host["slow"]
        assert slow["state"] == "host-unreachable" and slow["problem"] == "host unreachable: slow: no answer within 2s"
        rows = json.loads(run_cli_inprocess("status", "--json").stdout)
        assert [(r["host"], r["agent"]) for r in rows if r["host"] == "box"] == [("box", "cx")], rows
        assert [(r["state"], r["problem"]) for r in rows if r["host"] == "slow"] == [
            ("host-unreachable", "host unreachable: slow: no answer within 2s")
        ]
        assert proxy.connections >= 1  # slow was reached through the proxy, only too slowly

        write_config({"hosts": {"slow": sshd.host_via(held.port, agents_dir="~/agents", timeout=60), "box": box}})
        stream = Stream("--agents-dir", str(agents_dir))
        try:
            stream.until(change("synced"), what="this machine synced")
            stream.until(change("synced", "box"), what="the fast host synced, the slow one held back")
            wait_for(lambda: held.connections, what="the slow host's watch connecting through the proxy")

            def slow_agents() -> set[str]:  # (a held handshake past ssh's ConnectTimeout: a host-unreachable row first)
                return {c["id"] for c in stream.seen if c["host"] == "slow" and c["change"] == "agent"} - {"host-unreachable"}

            assert slow_agents() == set()
            held.release()
            stream.until(lambda _: slow_agents() == {"def:solo", REC}, timeout=60, what="the slow host's agents once it answered")
        finally:
            stream.close()
    finally:
        proxy.close()
        held.close()


def test_a_watch_that_ends_is_tried_again_after_1_2_4_s_at_most_retry_most_and_soon_again_once_it_was_up() -> None:
    """:class:`HostWatch`'s backoff, its streams stood in for: each wait between two tries as it asked for it."""
    from agentlaunch.hosts.config import Host
    from agentlaunch.hosts.watch import HostWatch

    ends = iter([False, False, False, False, True, False, False])  # whether each stream had said synced
    downs: list[str] = []
    watch = HostWatch(Host(name="box", ssh="box"), lambda _: None, lambda _, why: downs.append(why), retry_most=4)
    waits: list[float] = []

    class Clock(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            waits.append(float(timeout or 0))
            if len(waits) == 7:
                self.set()
            return self.is_set()

    watch.stopped = Clock()
    watch._once = lambda: (next(ends), "host unreachable: box: the connection ended")  # type: ignore[method-assign]
    watch._run()
    assert waits == [1, 2, 4, 4, 1, 2, 4]  # doubling, at most 4; back to 1 s after a stream that was up
    assert downs == ["host unreachable: box: the connection ended"] * 7
