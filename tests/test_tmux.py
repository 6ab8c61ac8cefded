"""`agentlaunch tmux up|down` on a private tmux server, with agents on the offline fake provider.

Each test gets its own server (``tmux -L <unique name>``), killed at the end,
so nothing here touches a person's tmux. Waits poll for a condition with a
deadline.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from agentlaunch import paths
from agentlaunch.live.status import process_running
from agentlaunch.live.tmux import BORDER_FORMAT, Tmux, TmuxMissing, literal, tmux_arg
from agentlaunch.usage.store import Store
from testbed.agent_files import write_agent
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.required import need
from tests.support.waits import wait_for

HAVE_TMUX = shutil.which("tmux") is not None
need("tmux")


def tmux(socket: str, *args: str, check: bool = True) -> str:
    proc = subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True, check=False)
    if check and proc.returncode:
        raise AssertionError(f"tmux {args}: {proc.stderr}")
    return proc.stdout


def server_running(socket: str) -> bool:
    return subprocess.run(["tmux", "-L", socket, "list-sessions"], capture_output=True).returncode == 0


def panes(socket: str, session: str = "agentlaunch") -> dict[str, dict[str, str]]:
    """agent -> pane facts, from the pane option agentlaunch sets."""
    keys = ("agent", "pane", "window", "window_name", "pid", "title", "dead", "command")
    fmt = "\t".join(
        ("#{@agentlaunch_agent}", "#{pane_id}", "#{window_id}", "#{window_name}", "#{pane_pid}", "#{pane_title}")
        + ("#{pane_dead}", "#{pane_start_command}")
    )
    listing = tmux(socket, "list-panes", "-s", "-t", f"={session}", "-F", fmt)
    rows = [dict(zip(keys, line.split("\t"), strict=True)) for line in listing.splitlines()]
    return {row["agent"]: row for row in rows if row["agent"]}


def screen(socket: str, pane: str) -> str:
    return tmux(socket, "capture-pane", "-p", "-J", "-S", "-", "-t", pane)  # with the scrollback


def up(socket: str, agents_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return run_cli("tmux", "up", *args, "--socket", socket, "--no-attach", "--agents-dir", str(agents_dir), cwd=cwd)


def add_agent_copies(agents_dir: Path, names: list[str]) -> None:
    for name in names:
        shutil.copytree(agents_dir / "demo", agents_dir / name)


def send_line(socket: str, pane: str, text: str) -> None:
    tmux(socket, "send-keys", "-t", pane, "-l", text)
    tmux(socket, "send-keys", "-t", pane, "Enter")


def status_records() -> list[dict[str, object]]:
    result = run_cli_inprocess("status", "--json")
    assert result.returncode == 0, result.stderr
    records: list[dict[str, object]] = json.loads(result.stdout)
    return records


# -- the real thing ---------------------------------------------------------------


def test_up_runs_each_agent_in_its_own_window_shows_status_and_down_ends_them(
    socket: str, agents_dir: Path, workdir: Path
) -> None:
    add_agent_copies(agents_dir, ["helper"])
    result = up(socket, agents_dir, workdir, "demo", "helper")
    assert result.returncode == 0, result.stderr
    assert b"started demo, helper" in result.stderr and result.stdout == b""

    found = panes(socket)
    assert sorted(found) == ["demo", "helper"]
    windows = tmux(socket, "list-windows", "-t", "=agentlaunch", "-F", "#{window_name}").split()
    assert windows == ["demo", "helper"]
    for agent, pane in found.items():
        assert pane["window_name"] == agent
        # The command tmux runs: this Python's agentlaunch, the agent, the agents directory.
        assert "-m agentlaunch run " + agent in pane["command"] and str(agents_dir) in pane["command"]
        options = ("show-options", "-w", "-v", "-t", pane["window"])
        assert tmux(socket, *options, "pane-border-status").strip() == "top"
        assert tmux(socket, *options, "pane-border-format").strip() == BORDER_FORMAT.strip()
        wait_for(lambda p=pane: "›" in screen(socket, p["pane"]), what=f"{agent}'s prompt")
        assert "Demo Agent" in screen(socket, pane["pane"])

    # A message typed into the demo pane is answered there, and the border title follows the session.
    demo = found["demo"]["pane"]
    send_line(socket, demo, "hello from tmux")
    wait_for(lambda: 'You said: "hello from tmux"' in screen(socket, demo), what="the answer in the pane")

    def titled() -> bool:
        title = tmux(socket, "display-message", "-p", "-t", demo, "#{@agentlaunch_line}").strip()
        return title.startswith("demo · done · ctx ") and "to compaction" in title  # its turn ended: done

    wait_for(titled, what="the live status line in the border's pane option")
    records = {r["agent"]: r for r in status_records()}
    assert set(records) == {"demo", "helper"}
    assert records["demo"]["calls"] == 1 and records["helper"]["calls"] == 0, (json.dumps(records), screen(socket, demo))
    assert records["demo"]["pid"] == int(found["demo"]["pid"])
    line = run_cli_inprocess("status", "--line", "demo").stdout.decode().strip()
    assert line.startswith("demo · done · ctx ")

    # Idempotent: nothing is duplicated, a missing agent is added.
    again = up(socket, agents_dir, workdir, "demo", "helper", "demo")
    assert again.returncode == 0 and b"already running demo, helper" in again.stderr
    add_agent_copies(agents_dir, ["third"])
    more = up(socket, agents_dir, workdir, "helper", "third")
    assert more.returncode == 0 and b"started third" in more.stderr and b"already running helper" in more.stderr
    assert sorted(panes(socket)) == ["demo", "helper", "third"]
    assert len(tmux(socket, "list-windows", "-t", "=agentlaunch", "-F", "#{window_id}").split()) == 3
    wait_for(lambda: len(rs := status_records()) == 3 and all(r["cli_pid"] for r in rs), what="three status records with CLIs")

    session_id = str(records["demo"]["session_id"])
    pids = [int(p["pid"]) for p in panes(socket).values()] + [int(str(r["cli_pid"])) for r in status_records()]
    down = run_cli("tmux", "down", "agentlaunch", "--socket", socket)
    assert down.returncode == 0, down.stderr
    assert b"ended" in down.stderr and b"killed tmux session agentlaunch" in down.stderr
    assert tmux(socket, "has-session", "-t", "=agentlaunch", check=False) == ""
    assert not server_running(socket)
    wait_for(lambda: not any(process_running(pid) for pid in pids), timeout=15, what="every agent process to end")
    assert status_records() == []
    # Ended cleanly (SIGTERM, 143): the session is recorded and resumable.
    with Store.open(paths.store_path()) as store:
        row = store.get_session(session_id)
    assert row is not None and row.exit_status == 143 and row.turns == 1


def test_tiled_layout_puts_every_agent_in_one_window(socket: str, agents_dir: Path, workdir: Path) -> None:
    add_agent_copies(agents_dir, ["t1", "t2"])
    assert up(socket, agents_dir, workdir, "demo", "t1", "--layout", "tiled").returncode == 0
    assert up(socket, agents_dir, workdir, "t1", "t2", "--layout", "tiled").returncode == 0
    found = panes(socket)
    assert sorted(found) == ["demo", "t1", "t2"]
    assert {p["window"] for p in found.values()} == {found["demo"]["window"]}
    assert tmux(socket, "list-windows", "-t", "=agentlaunch", "-F", "#{window_name}").split() == ["agents"]
    for pane in found.values():
        wait_for(lambda p=pane: "›" in screen(socket, p["pane"]), what="each pane's prompt")
    assert run_cli("tmux", "down", "--socket", socket).returncode == 0
    assert not server_running(socket)


def test_up_from_inside_another_tmux_does_not_nest(socket: str, agents_dir: Path, workdir: Path) -> None:
    env = {"TMUX": "/tmp/some-other-server,1234,0", "TMUX_PANE": "%9"}
    result = run_cli("tmux", "up", "demo", "--socket", socket, "--attach", "--agents-dir", str(agents_dir), cwd=workdir, env=env)
    assert result.returncode == 0, result.stderr
    assert b"not attaching" in result.stderr
    assert sorted(panes(socket)) == ["demo"]
    assert run_cli("tmux", "down", "--socket", socket).returncode == 0


def test_a_pane_whose_agent_failed_stays_readable_and_up_restarts_it(
    socket: str, agents_dir: Path, workdir: Path, tmp_path: Path
) -> None:
    yaml_file = agents_dir / "demo" / "agent.yaml"
    original = yaml_file.read_text()
    # A CLI that exits at once (a missing one is refused before anything starts: test_tmux_truth.py).
    dies = tmp_path / "dies.sh"
    dies.write_text("#!/bin/sh\necho 'cli: cannot start here' >&2\nexit 3\n")
    dies.chmod(0o755)
    yaml_file.write_text(original + f"command: {dies}\n")
    failed = up(socket, agents_dir, workdir, "demo")
    assert failed.returncode == 1 and b"failed demo" in failed.stderr, failed.stderr
    assert panes(socket)["demo"]["dead"] == "1"
    pane = panes(socket)["demo"]["pane"]
    # The pane stays, with the error to read (tmux's "Pane is dead (status 1)" note comes once it reaps the process).
    wait_for(lambda: "cli: cannot start here" in screen(socket, pane), what="the error in the kept pane")
    yaml_file.write_text(original)
    again = up(socket, agents_dir, workdir, "demo")
    assert again.returncode == 0 and b"restarted demo" in again.stderr
    wait_for(lambda: "›" in screen(socket, panes(socket)["demo"]["pane"]), what="the restarted prompt")
    assert len(panes(socket)) == 1
    assert run_cli("tmux", "down", "--socket", socket).returncode == 0


# -- names that must never run anything -------------------------------------------------


@pytest.mark.parametrize("name", ["a;touch pwned", "x y", "q'uote", 'd"q', "semi;", "$(touch pwned)", "#(touch pwned)"])
def test_agent_names_with_shell_characters_are_refused_before_anything_starts(
    socket: str, agents_dir: Path, workdir: Path, name: str
) -> None:
    shutil.copytree(agents_dir / "demo", agents_dir / name)
    result = up(socket, agents_dir, workdir, "demo", name)
    assert result.returncode == 3, result.stderr
    assert b"is not allowed" in result.stderr
    assert not server_running(socket)  # validated first: not even demo was started
    assert not list(workdir.rglob("pwned")) and not list(agents_dir.rglob("pwned"))


@pytest.mark.parametrize("session", ["my session", "x;touch pwned", "a'b", 'a"b', "#(touch pwned)", "a:b", "a.b", "semi;", ""])
def test_session_names_tmux_would_misread_are_refused(socket: str, agents_dir: Path, workdir: Path, session: str) -> None:
    result = up(socket, agents_dir, workdir, "demo", "--session", session)
    assert result.returncode == 2, result.stderr
    assert b"tmux session name" in result.stderr
    assert not server_running(socket)
    assert not list(workdir.rglob("pwned"))
    down = run_cli("tmux", "down", session, "--socket", socket)
    assert down.returncode == 2 and not server_running(socket)


def test_directories_with_shell_and_tmux_characters_work_and_run_nothing(socket: str, tmp_path: Path) -> None:
    # The agents directory and the working directory reach tmux as -c and as command arguments:
    # '#(...)' is a tmux format there, ';' at the end a tmux command separator, quotes and spaces shell syntax.
    base = tmp_path / "d #(touch pwned) $(touch pwned) 'q' \"dq\" x;"
    agents = base / "agents;"
    shutil.copytree(Path(__file__).resolve().parent.parent / "agents", agents)
    work = base / "work #{session_name};"
    work.mkdir()
    result = up(socket, agents, work, "demo")
    assert result.returncode == 0, result.stderr
    pane = panes(socket)["demo"]
    wait_for(lambda: "›" in screen(socket, pane["pane"]), what="the prompt")
    cwd = tmux(socket, "display-message", "-p", "-t", pane["pane"], "#{pane_current_path}").strip()
    assert cwd == str(work)
    send_line(socket, pane["pane"], "hi")
    wait_for(lambda: 'You said: "hi"' in screen(socket, pane["pane"]), what="the answer")
    assert run_cli("tmux", "down", "--socket", socket).returncode == 0
    assert not list(tmp_path.rglob("pwned")) and not Path("pwned").exists()


def test_unknown_agent_is_refused_before_anything_starts(socket: str, agents_dir: Path, workdir: Path) -> None:
    result = up(socket, agents_dir, workdir, "demo", "nosuch")
    assert result.returncode == 3 and b"not found" in result.stderr
    assert not server_running(socket)


def test_an_agent_with_a_definition_error_is_refused_before_anything_starts(socket: str, agents_dir: Path, workdir: Path) -> None:
    write_agent(agents_dir, "broken", {"provider": "fake", "no_such_key": 1})
    result = up(socket, agents_dir, workdir, "demo", "broken")
    assert result.returncode == 3 and b"no_such_key" in result.stderr
    assert not server_running(socket)


def test_down_of_a_missing_session_says_so(socket: str) -> None:
    result = run_cli("tmux", "down", "nosuch", "--socket", socket)
    assert result.returncode == 1 and b"no tmux session 'nosuch'" in result.stderr


def test_tmux_missing_is_exit_127_with_a_hint(
    agents_dir: Path, workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    env = {"PATH": str(empty)}
    result = run_cli("tmux", "up", "demo", "--no-attach", "--agents-dir", str(agents_dir), cwd=workdir, env=env)
    assert result.returncode == 127
    assert b"tmux is not installed" in result.stderr and b"apt-get install tmux" in result.stderr
    assert run_cli("tmux", "down", env=env).returncode == 127
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(TmuxMissing):
        Tmux()


def test_tmux_argument_escaping() -> None:
    assert tmux_arg("plain") == "plain"
    assert tmux_arg("x;") == "x\\;" and tmux_arg("x;y") == "x;y" and tmux_arg(";") == "\\;"
    assert literal("#(touch x)") == "##(touch x)"


# -- load -----------------------------------------------------------------------------------


def test_ten_agents_in_one_session_each_answer_and_every_call_is_stored(socket: str, agents_dir: Path, workdir: Path) -> None:
    names = [f"load{i}" for i in range(10)]
    add_agent_copies(agents_dir, names)
    result = up(socket, agents_dir, workdir, *names)
    assert result.returncode == 0, result.stderr
    found = panes(socket)
    assert sorted(found) == names
    for name in names:
        wait_for(lambda n=name: "›" in screen(socket, found[n]["pane"]), timeout=60, what=f"{name}'s prompt")
    for name in names:
        send_line(socket, found[name]["pane"], f"turn for {name}")
    for name in names:
        answered = f'You said: "turn for {name}"'
        wait_for(lambda n=name, a=answered: a in screen(socket, found[n]["pane"]), timeout=60, what=f"{name}'s answer")

    def all_answered() -> list[dict[str, object]] | None:
        records = status_records()
        done = [r for r in records if r["state"] == "waiting" and r["calls"] == 1]
        return records if len(done) == 10 else None

    records = wait_for(all_answered, timeout=30, what="ten status records, one call each")
    assert sorted(str(r["agent"]) for r in records) == names
    assert len({r["session_id"] for r in records}) == 10
    with Store.open(paths.store_path()) as store:
        for r in records:
            calls = store.calls_for_session(str(r["session_id"]))
            assert len(calls) == r["calls"] == 1
            assert calls[0].agent == r["agent"]
    down = run_cli("tmux", "down", "--socket", socket, "--timeout", "60")
    assert down.returncode == 0, down.stderr
    assert not server_running(socket)
    pids = [int(p["pid"]) for p in found.values()]
    wait_for(lambda: not any(process_running(pid) for pid in pids), timeout=15, what="every agent to end")
    assert status_records() == []
