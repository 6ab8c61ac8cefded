"""Restarting a pane keeps its conversation: `tmux up AGENT` on a dead pane resumes the session the pane ran.

A private tmux server per test (the ``socket`` fixture of test_tmux.py), agents on the offline fake provider.
"""

from __future__ import annotations

import os
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agentlaunch import paths
from agentlaunch.live.resume import plan_comebacks
from agentlaunch.usage.store import Store
from tests.support.cli_runs import run_cli
from tests.support.required import need
from tests.support.waits import wait_for
from tests.test_tmux import panes, screen, send_line, status_records, tmux, up

need("tmux")


def record_of(agent: str) -> dict[str, object] | None:
    return next((r for r in status_records() if r["agent"] == agent and r.get("state") == "waiting"), None)


def kill_launch(socket: str, agent: str) -> None:
    """End the pane's agentlaunch as a crash or a reboot's SIGTERM would: exit 143, the pane kept (dead)."""
    os.kill(int(panes(socket)[agent]["pid"]), signal.SIGTERM)
    wait_for(lambda: panes(socket)[agent]["dead"] == "1", what="the pane dead")


def test_up_on_a_dead_pane_resumes_the_session_it_ran_with_its_turns(socket: str, agents_dir: Path, workdir: Path) -> None:
    assert up(socket, agents_dir, workdir, "demo").returncode == 0
    pane = panes(socket)["demo"]["pane"]
    wait_for(lambda: "›" in screen(socket, pane), what="the prompt")
    send_line(socket, pane, "remember the blue door")
    wait_for(lambda: 'You said: "remember the blue door"' in screen(socket, pane), what="the first answer")
    first = wait_for(lambda: record_of("demo"), what="demo waiting")
    # The launch names its session on its pane, so the pane can be brought back in it.
    assert tmux(socket, "show-options", "-p", "-v", "-t", pane, "@agentlaunch_session").strip() == first["session_id"]
    kill_launch(socket, "demo")

    again = up(socket, agents_dir, workdir, "demo")
    said = again.stderr.decode()
    assert again.returncode == 0, said
    assert f"demo: restarting in its session {str(first['session_id'])[:8]} “remember the blue door” (1 turn)" in said
    assert "restarted demo" in said
    back = wait_for(lambda: record_of("demo"), what="the restarted demo waiting")
    assert back["session_id"] == first["session_id"] and back["resumed"] is True
    send_line(socket, pane, "which door?")
    # The fake CLI counts the session's turns from its transcript: the earlier turn came back with the session.
    wait_for(lambda: "Fake provider here, turn 2." in screen(socket, pane), what="the second turn of the same session")

    # --fresh asks for a new session; only then is one started.
    kill_launch(socket, "demo")
    fresh = up(socket, agents_dir, workdir, "demo", "--fresh")
    assert fresh.returncode == 0 and b"demo: restarting in a new session (--fresh)" in fresh.stderr, fresh.stderr
    new = wait_for(lambda: record_of("demo"), what="the fresh demo waiting")
    assert new["session_id"] != first["session_id"] and not new["resumed"]
    assert run_cli("tmux", "down", "--socket", socket).returncode == 0


def test_fresh_and_resume_together_are_refused(socket: str, agents_dir: Path, workdir: Path) -> None:
    result = up(socket, agents_dir, workdir, "demo", "--fresh", "--resume")
    assert result.returncode == 2 and b"--fresh and --resume contradict" in result.stderr


def _session(store: Store, sid: str, turns: int, when: datetime, window: str = "demo") -> None:
    store.start_session(sid, agent="demo", provider="fake", working_dir=Path("/w"), at=when)
    for _ in range(turns):
        store.touch_session(sid, at=when)
    store.set_place(sid, "team", window, "windows")


def test_resume_says_when_a_longer_session_of_the_same_pane_is_not_the_latest() -> None:
    now = datetime.now(UTC)
    with Store.open(paths.store_path()) as store:
        _session(store, "long-one", 40, now - timedelta(hours=2))
        _session(store, "short-one", 1, now - timedelta(minutes=5))
        _session(store, "elsewhere", 90, now - timedelta(hours=3), window="other")  # another pane: not said
        (plan,) = plan_comebacks(store, ["demo"])
    assert plan.row is not None and plan.row.session_id == "short-one"
    assert plan.longer is not None and plan.longer.session_id == "long-one"
    said = plan.said()
    assert "demo: resuming session short-on (1 turn)" in said
    assert "a longer session of the same pane, long-one (40 turns" in said
    assert "agentlaunch restart demo --session long-one" in said


def test_resume_says_nothing_more_when_the_latest_is_the_longest() -> None:
    now = datetime.now(UTC)
    with Store.open(paths.store_path()) as store:
        _session(store, "old-short", 2, now - timedelta(hours=2))
        _session(store, "new-long", 5, now - timedelta(minutes=5))
        (plan,) = plan_comebacks(store, ["demo"])
    assert plan.row is not None and plan.row.session_id == "new-long" and plan.longer is None
    assert "longer" not in plan.said()
