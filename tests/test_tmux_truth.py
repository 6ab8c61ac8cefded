"""`tmux up` tells the truth: agents that cannot start are refused first, agents that die are named, `status` shows them.

A private tmux server per test (the ``socket`` fixture of test_tmux.py), agents on the offline fake provider.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from agentlaunch.live.startup_wait import AgentStart, StartWatch, pane_error, wait_started
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.required import need
from tests.support.waits import wait_for
from tests.test_tmux import panes, screen, server_running, up

need("tmux")


def copy_demo(agents_dir: Path, name: str, extra: str = "") -> Path:
    shutil.copytree(agents_dir / "demo", agents_dir / name)
    yaml_file = agents_dir / name / "agent.yaml"
    text = yaml_file.read_text()
    if "working_dir:" in extra:
        text = text.replace('working_dir: "@scratch"', "")
    yaml_file.write_text(text + extra)
    return yaml_file


def exits_at_once(tmp_path: Path, message: str = "cli: licence expired", code: int = 3) -> Path:
    script = tmp_path / "dies.sh"
    script.write_text(f"#!/bin/sh\necho '{message}' >&2\nexit {code}\n")
    script.chmod(0o755)
    return script


def test_an_agent_whose_cli_exits_at_once_fails_up_by_name_while_the_others_run(
    socket: str, agents_dir: Path, workdir: Path, tmp_path: Path
) -> None:
    copy_demo(agents_dir, "fk1")
    yaml_file = copy_demo(agents_dir, "broken", f"command: {exits_at_once(tmp_path)}\n")
    result = up(socket, agents_dir, workdir, "fk1", "broken")
    err = result.stderr.decode()
    assert result.returncode == 1, err
    lines = {line.split()[0]: line for line in err.splitlines() if line.startswith("  ")}
    assert "started (waiting)" in lines["fk1"]
    assert "  broken  failed" in lines["broken"] and "cli: licence expired" in lines["broken"]
    assert "the provider CLI exited (code 3)" in lines["broken"]
    assert "started fk1; failed broken" in err
    found = panes(socket)
    assert found["broken"]["dead"] == "1" and found["fk1"]["dead"] == "0"  # the failed pane stays, readable
    assert "cli: licence expired" in screen(socket, found["broken"]["pane"])

    # status shows the dead agent beside the running one, in every form.
    env = {"AGENTLAUNCH_TMUX_SOCKET": socket}
    records = json.loads(run_cli_inprocess("status", "--json", env=env).stdout)
    by_agent = {r["agent"]: r for r in records}
    assert by_agent["fk1"]["state"] == "waiting"
    # tmux 3.3 does not always learn a dead pane's exit status (it read the pane's end first): then it is null.
    assert by_agent["broken"]["state"] == "dead" and by_agent["broken"]["exit_status"] in (1, None)
    assert by_agent["broken"]["pane"] == found["broken"]["pane"]
    table = run_cli_inprocess("status", env=env).stdout.decode()
    assert "broken" in table and "dead" in table
    line = run_cli_inprocess("status", "--line", "broken", env=env).stdout.decode().strip()
    assert line.startswith("broken · dead") and found["broken"]["pane"] in line

    # A second up restarts it, and says the same truth.
    again = up(socket, agents_dir, workdir, "fk1", "broken")
    assert again.returncode == 1
    assert "already running" in again.stderr.decode() and "failed broken" in again.stderr.decode()
    assert again.stderr.decode().count("cli: licence expired") == 1
    # Mended, it is restarted in its pane and reported started.
    yaml_file.write_text(yaml_file.read_text().replace("command:", "# command:"))
    mended = up(socket, agents_dir, workdir, "broken")
    assert mended.returncode == 0, mended.stderr
    assert b"restarted broken" in mended.stderr
    assert panes(socket)["broken"]["pane"] == found["broken"]["pane"]
    assert run_cli("tmux", "down", "--socket", socket).returncode == 0


def test_an_agent_that_agentlaunch_itself_refuses_at_start_is_reported_with_its_error(
    socket: str, agents_dir: Path, workdir: Path
) -> None:
    # The user's own CLAUDE.md where the agent would write its instructions: agentlaunch refuses (exit 4) in the pane.
    copy_demo(agents_dir, "own", f"delivery: file\nworking_dir: {workdir}\n")
    (workdir / "CLAUDE.md").write_text("mine\n")
    result = up(socket, agents_dir, workdir, "demo", "own")
    err = result.stderr.decode()
    assert result.returncode == 1, err
    # tmux 3.3 does not always learn the exit status of a process that ends this early: "(exit 4)" may be missing.
    assert "  own   failed" in err and "was not written by agentlaunch" in err
    assert "started demo; failed own" in err
    assert (workdir / "CLAUDE.md").read_text() == "mine\n"
    assert run_cli("tmux", "down", "--socket", socket).returncode == 0


def test_a_missing_cli_is_refused_before_anything_is_created_naming_every_problem(
    socket: str, agents_dir: Path, workdir: Path, tmp_path: Path
) -> None:
    copy_demo(agents_dir, "nocli", "command: /nonexistent/claude\n")
    plain = tmp_path / "not-executable"
    plain.write_text("#!/bin/sh\n")
    copy_demo(agents_dir, "noexec", f"command: {plain}\n")
    copy_demo(agents_dir, "nodir", f"working_dir: {tmp_path / 'gone'}\n")
    result = up(socket, agents_dir, workdir, "demo", "nocli", "noexec", "nodir")
    err = result.stderr.decode()
    assert result.returncode == 127, err  # the first problem's code: a missing program
    assert "agent nocli: /nonexistent/claude: provider CLI not found" in err
    assert f"agent noexec: {plain}: provider CLI is not executable" in err
    assert "agent nodir:" in err and "does not exist" in err
    assert "nothing was started" in err and "check `command:`" in err
    assert not server_running(socket)


def test_a_working_dir_that_is_a_file_is_refused(socket: str, agents_dir: Path, workdir: Path, tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    copy_demo(agents_dir, "filedir", f"working_dir: {a_file}\n")
    result = up(socket, agents_dir, workdir, "filedir")
    assert result.returncode == 3 and b"agent filedir:" in result.stderr
    assert not server_running(socket)


def test_wait_zero_does_not_check(socket: str, agents_dir: Path, workdir: Path) -> None:
    result = up(socket, agents_dir, workdir, "demo", "--wait", "0")
    assert result.returncode == 0 and b"not checked: --wait 0" in result.stderr
    wait_for(lambda: "›" in screen(socket, panes(socket)["demo"]["pane"]), what="the prompt")
    assert run_cli("tmux", "down", "--socket", socket).returncode == 0


# -- the wait, in process --------------------------------------------------------------------


class FakePanes:
    def __init__(self, panes: dict[str, tuple[int, bool, str]], screens: dict[str, str] | None = None) -> None:
        self.listing, self.screens = panes, screens or {}

    def panes(self) -> dict[str, tuple[int, bool, str]]:
        return self.listing

    def screen(self, pane_id: str) -> str:
        return self.screens.get(pane_id, "")


def write_record(folder: Path, pid: int, state: str, cli_pid: int | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    record = {"agent": "a", "pid": pid, "pid_start": None, "state": state, "cli_pid": cli_pid, "turns": 0}
    (folder / f"{pid}.json").write_text(json.dumps(record))


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


def test_wait_reports_a_pane_still_starting_when_time_is_up(tmp_path: Path) -> None:
    clock = Clock()
    status = tmp_path / "status"
    write_record(status, os.getpid(), "starting")
    source = FakePanes({"%1": (os.getpid(), False, "")})
    (result,) = wait_started(source, {"a": "%1"}, timeout=2, status_dir=status, clock=clock, sleep=clock.sleep)
    assert not result.started and "not started after 2s" in result.detail
    assert clock.t >= 2


def test_wait_says_started_only_after_the_agent_stayed_up(tmp_path: Path) -> None:
    clock = Clock()
    status = tmp_path / "status"
    write_record(status, os.getpid(), "waiting", cli_pid=os.getpid())
    source = FakePanes({"%1": (os.getpid(), False, "")})
    (result,) = wait_started(source, {"a": "%1"}, timeout=10, settle=1.0, status_dir=status, clock=clock, sleep=clock.sleep)
    assert result == AgentStart("a", "%1", True, "started", "waiting")
    assert 1.0 <= clock.t < 2


def test_wait_names_a_dead_cli_and_a_closed_pane(tmp_path: Path) -> None:
    clock = Clock()
    status = tmp_path / "status"
    write_record(status, os.getpid(), "waiting", cli_pid=2**21 + 12345)  # no such process
    source = FakePanes({"%1": (os.getpid(), False, "")})
    results = wait_started(source, {"a": "%1", "b": "%2"}, timeout=1, status_dir=status, clock=clock, sleep=clock.sleep)
    assert [r.started for r in results] == [False, False]
    assert "provider CLI exited" in results[0].detail
    assert "its pane closed" in results[1].detail


class RealPanes(FakePanes):
    """Panes whose pids are real processes (as tmux's are): a listing is taken again only when one ends."""

    real_pids = True

    def __init__(self, panes: dict[str, tuple[int, bool, str]]) -> None:
        super().__init__(panes)
        self.listed = 0

    def panes(self) -> dict[str, tuple[int, bool, str]]:
        self.listed += 1
        return super().panes()


def test_wait_lists_the_panes_again_only_when_a_panes_process_ended(tmp_path: Path) -> None:
    clock = Clock()
    status = tmp_path / "status"
    pane = subprocess.Popen(["sleep", "60"])
    try:
        write_record(status, pane.pid, "starting")
        source = RealPanes({"%1": (pane.pid, False, "")})
        watch = StartWatch(30, status_dir=status)
        watch.add("a", "%1", clock())
        for _ in range(20):
            watch.look(source, clock())
            clock.sleep(0.1)
        assert source.listed == 1 and watch.starting("a")  # its process runs: the first listing still holds
        pane.kill()
        pane.wait()
        source.listing = {"%1": (pane.pid, True, "1")}  # tmux marks the pane dead once its process ended
        watch.look(source, clock())
        assert source.listed == 2
        assert [r.started for r in watch.results()] == [False] and "failed (exit 1)" in watch.results()[0].detail
    finally:
        pane.kill()
        pane.wait()


def test_a_source_without_real_pids_is_listed_at_every_look(tmp_path: Path) -> None:
    clock = Clock()
    source = FakePanes({"%1": (os.getpid(), False, "")})
    calls = []
    listing = source.panes
    source.panes = lambda: calls.append(1) or listing()  # type: ignore[method-assign]
    watch = StartWatch(30, status_dir=tmp_path / "status")
    watch.add("a", "%1", clock())
    for _ in range(5):
        watch.look(source, clock())
    assert len(calls) == 5  # a fake's pids may be anyone's: never trusted to stand for the pane


def test_pane_error_takes_the_last_runs_error_block() -> None:
    screen_text = "\n".join(
        [
            "old prompt",
            "error: the first run's",
            "",
            "Demo · new session",
            "error: the CLI exited (code 3)",
            "  cli: licence expired",
            "",
            "Pane is dead (status 1, Tue Dec  1)",
            "",
        ]
    )
    assert pane_error(screen_text) == "error: the CLI exited (code 3) cli: licence expired"
    assert pane_error("a\nb\nc\nd\n") == "b c d"
    assert "\x1b" not in pane_error("\x1b]0;evil\x07boom\n")  # a pane is anyone's output: no escapes pass
    assert pane_error("") == "(the pane shows nothing)"
    assert len(pane_error("error: " + "x" * 5000)) == 400


def test_the_chat_ends_with_the_clis_words_when_its_cli_exits_at_the_prompt(
    agents_dir: Path, workdir: Path, tmp_path: Path
) -> None:
    import sys

    import pexpect

    copy_demo(agents_dir, "broken", f"command: {exits_at_once(tmp_path, 'cli: no licence', 7)}\n")
    env = {**os.environ, "NO_COLOR": "1"}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agentlaunch", "run", "broken", "--agents-dir", str(agents_dir)],
        cwd=str(workdir),
        env=env,
        encoding="utf-8",
        timeout=30,
    )
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1, child.before
    assert "the provider CLI exited (code 7) while waiting for you" in child.before
    assert "cli: no licence" in child.before


# -- "needs you", end to end in a pane ------------------------------------------------------------


def test_asking_reaches_the_status_record_the_pane_border_the_window_flag_and_the_notify_command(
    socket: str, agents_dir: Path, workdir: Path, tmp_path: Path
) -> None:
    import sys

    from tests.test_tmux import send_line, status_records, tmux

    out = tmp_path / "notified.jsonl"
    script = tmp_path / "notify.py"
    script.write_text(f"import sys\nopen({str(out)!r}, 'a').write(sys.stdin.read())\n")
    copy_demo(agents_dir, "pinger", f"notify: [{sys.executable}, {script}]\nnotify_after: 0\n")
    assert up(socket, agents_dir, workdir, "pinger").returncode == 0
    pane = panes(socket)["pinger"]
    pane_id, window = pane["pane"], pane["window"]
    send_line(socket, pane_id, "/tool")
    wait_for(lambda: "Allow Write" in screen(socket, pane_id), what="the permission question")

    def asking() -> bool:
        return any(r["agent"] == "pinger" and r["state"] == "asking" for r in status_records())

    wait_for(asking, what="asking in the status record")
    first = wait_for(lambda: out.exists() and [json.loads(x) for x in out.read_text().splitlines()], what="the notify JSON")
    assert first[0]["state"] == "asking" and first[0]["agent"] == "pinger" and first[0]["pane"] == pane_id
    assert first[0]["working_dir"] and first[0]["session"]
    flag = tmux(socket, "show-options", "-w", "-v", "-t", window, "@agentlaunch_needs_you").strip()
    assert flag == "pinger asking"
    assert tmux(socket, "show-options", "-p", "-v", "-t", pane_id, "@agentlaunch_pane_needs_you").strip() == "pinger asking"
    title = tmux(socket, "display-message", "-p", "-t", pane_id, "#{@agentlaunch_line}").strip()
    assert title.startswith("pinger · ASKING: needs you") and "since " in title
    border = tmux(
        socket,
        "display-message",
        "-p",
        "-t",
        pane_id,
        tmux(socket, "show-options", "-w", "-v", "-t", window, "pane-border-format").strip(),
    )
    assert "bg=red" in border  # highlighted
    line = run_cli_inprocess("status", "--line", "pinger").stdout.decode()
    assert "pinger · ASKING: needs you" in line and " · for " in line

    send_line(socket, pane_id, "y")
    wait_for(lambda: len(out.read_text().splitlines()) == 2, what="the turn's end announced (notify_after: 0)")
    second = json.loads(out.read_text().splitlines()[1])
    assert second["state"] == "waiting" and "your turn" in second["reason"]
    # Busy again, then waiting: the flag follows (the waiting announcement sets it again).
    assert tmux(socket, "show-options", "-w", "-v", "-t", window, "@agentlaunch_needs_you").strip() == "pinger waiting"
    assert run_cli("tmux", "down", "--socket", socket).returncode == 0


def test_in_a_tiled_window_each_agent_keeps_its_own_needs_you_flag_and_the_window_names_all(
    socket: str, agents_dir: Path, workdir: Path
) -> None:
    from tests.test_tmux import send_line, status_records, tmux

    for name in ("asker1", "asker2"):
        copy_demo(agents_dir, name)
    assert up(socket, agents_dir, workdir, "asker1", "asker2", "--layout", "tiled").returncode == 0
    found = panes(socket)
    first, second = found["asker1"]["pane"], found["asker2"]["pane"]
    window = found["asker1"]["window"]
    assert found["asker2"]["window"] == window

    def states() -> dict[str, str]:
        return {r["agent"]: r["state"] for r in status_records()}

    def window_flag() -> str:
        return tmux(socket, "show-options", "-w", "-v", "-t", window, "@agentlaunch_needs_you").strip()

    def pane_flag(pane: str) -> str:
        return tmux(socket, "display-message", "-p", "-t", pane, "#{@agentlaunch_pane_needs_you}").strip()

    for pane in (first, second):
        send_line(socket, pane, "/tool")
        wait_for(lambda pane=pane: "Allow Write" in screen(socket, pane), what="the permission question")
    wait_for(lambda: states() == {"asker1": "asking", "asker2": "asking"}, what="both asking")
    # The second agent's flag did not overwrite the first's: the window names both, each pane its own.
    wait_for(lambda: window_flag() == "asker1 asking, asker2 asking", what="both in the window's flag")
    assert (pane_flag(first), pane_flag(second)) == ("asker1 asking", "asker2 asking")
    send_line(socket, first, "y")  # the first is answered: its flag goes, the second's stays
    wait_for(lambda: states()["asker1"] in ("thinking", "tool", "waiting"), what="the first answered")
    wait_for(lambda: window_flag() == "asker2 asking", what="only the second in the window's flag")
    assert (pane_flag(first), pane_flag(second)) == ("", "asker2 asking")
    send_line(socket, second, "y")
    wait_for(lambda: window_flag() == "", what="nobody in the window's flag")
    assert run_cli("tmux", "down", "--socket", socket).returncode == 0
