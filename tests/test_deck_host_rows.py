"""The deck's rows of other hosts (agentlaunch/deck/host_rows.py): a host's stream made rows, greyed while the host
is down and current again when it is back; the host column; the commands a key runs there, quoted."""

from __future__ import annotations

import shlex
from datetime import UTC, datetime
from typing import Any

from agentlaunch.deck.board import style_of, texts
from agentlaunch.deck.host_rows import HostRows, attach_argv, on_host, remote_row
from agentlaunch.deck.rows import COLUMNS, cells
from agentlaunch.hosts.config import Host

BOX = Host(name="box", ssh="me@box", socket="agents")


def agent(name: str, state: str = "waiting", **extra: Any) -> dict[str, Any]:
    return {
        "agent": name,
        "state": state,
        "running": True,
        "session_id": f"{name}-s",
        "provider": "fake",
        "model": "fake-1",
        "tmux": {"session": "team", "pane": "%4", "dead": False, "exit_status": None},
        "record": {"state": state, "cost": "$0.01", "stale": False},
        **extra,
    }


def line(change: str, key: str = "", **fields: Any) -> dict[str, Any]:
    return {"version": 1, "change": change, "host": "box", "id": key, **fields}


def test_a_host_s_lines_become_rows_greyed_while_it_is_down_and_current_when_back() -> None:
    rows = HostRows((BOX,))
    assert rows.rows() == []
    assert rows.got(line("agent", "live:1.json", agent=agent("cx")))
    assert rows.got(line("agent", "def:rv", agent=agent("rv", "not-running", running=False, tmux=None, record=None)))
    assert not rows.got({"version": 1, "change": "agent", "host": "elsewhere", "id": "x", "agent": agent("x")})
    cx, rv = rows.rows()
    assert (cx.who, cx.state, cx.pane, cx.tmux_session, cx.host, cx.live) == ("cx@box", "waiting", "%4", "team", "box", True)
    assert cx.ident == ("cx@box", "cx-s") and cx.record == {"state": "waiting", "cost": "$0.01"}
    assert (rv.state, rv.live, rv.pane) == ("not running", False, None)

    rows.lost("box", "host unreachable: box: connection refused (no ssh server listens there)")
    cx, rv = rows.rows()
    assert cx.host_down == rv.host_down == "host unreachable: box: connection refused (no ssh server listens there)"
    assert style_of(cx) == "dim" and cells(cx, datetime.now(UTC))[1] == "waiting ⚠ host down"
    assert cx.urgency == rv.urgency == 4  # its last known state does not ask for the person

    assert rows.got(line("agent", "live:2.json", agent=agent("cx", "asking")))  # back: its agents given again
    assert rows.got(line("synced"))
    (again,) = rows.rows()  # rv not given again: gone
    assert again.host_down is None and again.state == "asking" and style_of(again) == "bold red"


def test_a_host_never_reached_is_one_row_saying_why() -> None:
    rows = HostRows((BOX,))
    rows.lost("box", "host unreachable: box: its host key has changed")
    (row,) = rows.rows()
    assert (row.who, row.state, row.host_down) == (
        "box@box",
        "host unreachable",
        "host unreachable: box: its host key has changed",
    )
    assert cells(row, datetime.now(UTC))[1] == "host unreachable"


def test_the_host_column_is_second_local_for_this_machine_s_rows() -> None:
    now = datetime.now(UTC)
    row = remote_row(
        "box", "live:1.json", agent("cx", "dead", tmux={"session": "t", "pane": "%1", "dead": True, "exit_status": 3})
    )
    assert row.state == "dead (exit 3)"
    shown = texts(row, now, hosts=True)
    assert shown[:2] == ("cx", "box") and len(shown) == len(COLUMNS) + 1
    row.host = None
    assert texts(row, now, hosts=True)[1] == "local" and len(texts(row, now, hosts=False)) == len(COLUMNS)


def test_a_key_on_a_remote_row_runs_the_command_there_with_the_host_s_own_agents_directory() -> None:
    assert on_host(["restart", "cx", "--session", "s1", "--agents-dir", "/here/agents"], "box") == [
        "restart",
        "cx",
        "--session",
        "s1",
        "--host",
        "box",
    ]
    assert on_host(["send", "cx", "--agents-dir", "x"], "box") == ["send", "cx", "--host", "box"]


def test_enter_on_a_remote_row_is_ssh_t_to_the_host_s_tmux_quoted() -> None:
    argv = attach_argv(BOX, "%4", "team $(x)")
    assert argv[0] == "ssh" and "-t" in argv and argv[-2] == "me@box" and argv[argv.index("--") - 1] == "-t"
    words = shlex.split(argv[-1])
    assert words == ["tmux", "-L", "agents", "select-window", "-t", "%4", ";", "select-pane", "-t", "%4", ";"] + [
        "attach-session",
        "-t",
        "=team $(x)",
    ]
    default = attach_argv(Host(name="b", ssh="b"), "%1", "s")[-1]
    assert default.startswith('tmux ${AGENTLAUNCH_TMUX_SOCKET:+-L "$AGENTLAUNCH_TMUX_SOCKET"} ')
