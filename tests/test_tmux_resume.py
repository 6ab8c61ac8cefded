"""Restore after a reboot: the session row remembers its tmux place; `tmux down` says how to resume; `up --resume` does.

A private tmux server per test (the ``socket`` fixture of test_tmux.py), agents on the offline fake provider.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from agentlaunch import paths
from agentlaunch.usage import store_file
from agentlaunch.usage.recorder import tmux_place
from agentlaunch.usage.store import Store
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.required import need
from tests.support.waits import wait_for
from tests.test_tmux import add_agent_copies, panes, screen, send_line, status_records, tmux, up

need("tmux")


def sessions() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = json.loads(run_cli_inprocess("sessions", "--json").stdout)
    return rows


def test_a_store_of_the_first_schema_is_migrated_and_keeps_its_sessions(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(db)
    store_file.MIGRATIONS[0](conn)
    conn.execute("PRAGMA user_version = 1")
    conn.execute(
        "INSERT INTO sessions (session_id, agent, provider, working_dir, started, last_used, turns)"
        " VALUES ('s-old', 'demo', 'fake', '/w', 1.0, 2.0, 3)"
    )
    conn.commit()
    conn.close()
    with Store.open(db) as store:
        assert store.schema_version == store_file.SCHEMA_VERSION
        row = store.get_session("s-old")
        assert row is not None and row.turns == 3 and row.tmux_session is None and row.title is None
        assert store.set_place("s-old", "team", "demo", "windows") and store.set_title("s-old", "first\n  prompt")
        assert not store.set_title("s-old", "second prompt")  # the first prompt is the title
        row = store.get_session("s-old")
        assert row is not None and (row.tmux_session, row.tmux_window, row.tmux_layout) == ("team", "demo", "windows")
        assert row.title == "first prompt"


def test_the_place_comes_from_the_panes_environment() -> None:
    from agentlaunch.live import tmux as live_tmux
    from agentlaunch.usage import recorder

    assert live_tmux.PLACE_ENV == recorder.PLACE_ENV  # written by `tmux up`, read by the launch in the pane
    assert tmux_place({"AGENTLAUNCH_TMUX_PLACE": "team\tagents\ttiled"}) == ("team", "agents", "tiled")
    assert tmux_place({}) is None and tmux_place({"AGENTLAUNCH_TMUX_PLACE": "no tabs"}) is None


def test_down_names_what_to_resume_and_up_resume_brings_the_same_sessions_back_in_place(
    socket: str, agents_dir: Path, workdir: Path
) -> None:
    add_agent_copies(agents_dir, ["talker", "quiet"])
    assert up(socket, agents_dir, workdir, "talker", "quiet", "--layout", "tiled", "--session", "team").returncode == 0
    talker = panes(socket, "team")["talker"]["pane"]
    wait_for(lambda: "›" in screen(socket, talker), what="the prompt")
    send_line(socket, talker, "remember the blue door")
    wait_for(lambda: 'You said: "remember the blue door"' in screen(socket, talker), what="the first answer")
    wait_for(lambda: any(s["turns"] == 1 for s in sessions()), what="the turn in the store")
    (first,) = [s for s in sessions() if s["agent"] == "talker"]
    with Store.open(paths.store_path()) as store:
        row = store.get_session(str(first["session_id"]))
    assert row is not None and (row.tmux_session, row.tmux_window, row.tmux_layout) == ("team", "agents", "tiled")

    down = run_cli("tmux", "down", "team", "--socket", socket)
    err = down.stderr.decode()
    assert down.returncode == 0, err
    assert f"resume them with: agentlaunch tmux up --resume talker --socket {socket}" in err
    assert "nothing to resume for quiet (no turn yet)" in err
    assert "AGENT" not in err

    again = run_cli(
        "tmux",
        "up",
        "--resume",
        "talker",
        "quiet",
        "--socket",
        socket,
        "--no-attach",
        "--agents-dir",
        str(agents_dir),
        cwd=workdir,
    )
    said = again.stderr.decode()
    assert again.returncode == 0, said
    assert f"talker: resuming session {str(first['session_id'])[:8]} “remember the blue door” (1 turn)" in said
    assert "quiet: no earlier session with a turn: starting fresh" in said
    back = panes(socket, "team")["talker"]
    assert tmux(socket, "display-message", "-p", "-t", back["pane"], "#{window_name}").strip() == "agents"
    records = wait_for(lambda: {str(r["agent"]): r for r in status_records() if r["agent"] == "talker"}, what="talker's record")
    assert records["talker"]["session_id"] == first["session_id"] and records["talker"]["resumed"] is True
    send_line(socket, back["pane"], "which door?")
    # The fake CLI counts the session's turns from its transcript: the earlier turn came back with the session.
    wait_for(lambda: "Fake provider here, turn 2." in screen(socket, back["pane"]), what="the second turn of the same session")
    assert run_cli("tmux", "down", "team", "--socket", socket).returncode == 0
    assert [s["turns"] for s in sessions() if s["agent"] == "talker"] == [2]


def test_resume_of_an_agent_whose_directory_is_gone_is_refused_before_anything_starts_naming_what_works(
    socket: str, agents_dir: Path, workdir: Path, tmp_path: Path
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    with Store.open(paths.store_path()) as store:
        store.start_session("s-gone", agent="demo", provider="fake", working_dir=gone)
        store.touch_session("s-gone")
    gone.rmdir()
    result = run_cli(
        "tmux", "up", "--resume", "demo", "--socket", socket, "--no-attach", "--agents-dir", str(agents_dir), cwd=workdir
    )
    said = result.stderr.decode()
    assert result.returncode == 2, said  # the session cannot be resumed (not a definition error: exit 3 said so before)
    assert f"demo's session s-gone ran in {gone}, which no longer exists: it cannot be resumed there" in said
    assert "agentlaunch tmux up demo --fresh starts demo in a new session" in said
    assert not tmux(socket, "list-sessions", check=False)  # nothing was started
