"""The deck across hosts, in a real terminal (a pane of a private tmux server, read with capture-pane), with one host
reached through a real sshd (tests/support/ssh_server.py) running the offline fake provider's demo agent: its row
with the host column, its pane there in the preview, Enter attaching to it over ssh (the deck suspended, back on
detach), s, x, r, f run there, the host going down greying its row with the reason, and its row current again when
the host is back; a question on the host answered from the deck."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch.live.status import process_start
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.required import need
from tests.support.ssh_server import SshServer, demo_alone
from tests.support.waits import wait_for
from tests.test_hosts_config import write_config

need("sshd", "tmux")

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def box(sshd: SshServer, isolated_home: Path) -> Iterator[SshServer]:
    """Host ``box``: the demo agent (the offline fake provider) alone in its agents directory, started there."""
    demo_alone(sshd)
    shutil.rmtree(sshd.remote / "state" / "status", ignore_errors=True)
    write_config({"hosts": {"box": sshd.host(agents_dir="~/agents", socket=sshd.remote_socket)}})
    up = run_cli_inprocess("tmux", "up", "demo", "--host", "box", "--wait", "60")
    assert up.returncode == 0, up.stderr
    yield sshd
    if sshd.proc is None:
        sshd.start()
    sshd.kill_remote_tmux()


class Terminal:
    """The deck in a pane of 160x40 of a private tmux server (this machine's), with the test's environment."""

    def __init__(self, socket: str, *argv: str) -> None:
        self.socket = socket
        env = [f"-e{k}={v}" for k, v in os.environ.items() if k.startswith(("AGENTLAUNCH_", "HOME", "XDG_"))]
        self.tmux("new-session", "-d", "-s", "deck", "-x", "160", "-y", "40", "-c", "/", *env, *argv)
        self.tmux("resize-window", "-t", "=deck:", "-x", "160", "-y", "40")  # no client: the size is the test's

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "=deck:")

    def until(self, shows: str | tuple[str, ...], timeout: float = 60.0, gone: str | None = None) -> str:
        """The screen once it shows each of ``shows`` (and no longer ``gone``); fails saying what it shows."""
        wanted = (shows,) if isinstance(shows, str) else shows
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.screen()
            if all(w in text for w in wanted) and (gone is None or gone not in text):
                return text
            time.sleep(0.1)
        raise AssertionError(f"the terminal never showed {wanted} (without {gone!r}):\n{self.screen()}")

    def alive(self) -> bool:
        done = subprocess.run(["tmux", "-L", self.socket, "has-session", "-t", "=deck"], capture_output=True)
        return done.returncode == 0

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "=deck:", *keys)


def remote_pane(box: SshServer) -> str:
    """What demo's pane on the host shows (read there directly: the test's own look, not the deck's)."""
    done = subprocess.run(["tmux", "-L", box.remote_socket, "capture-pane", "-p", "-t", "=agentlaunch:demo"], capture_output=True)
    return done.stdout.decode()


def demo_line(screen: str) -> str:
    return next((line for line in screen.splitlines() if line.lstrip().startswith("demo ")), "")


def test_the_deck_shows_a_host_s_agent_attaches_over_ssh_sends_stops_restarts_and_greys_it_while_the_host_is_down(
    box: SshServer, socket: str, tmp_path: Path
) -> None:
    empty = tmp_path / "no-agents-here"
    empty.mkdir()
    deck = Terminal(socket, sys.executable, "-m", "agentlaunch", "deck", "--agents-dir", str(empty))
    screen = deck.until(("host", "box", "waiting", "⏎ attach"))
    header = next(line for line in screen.splitlines() if "agent" in line and "state" in line)
    assert header.split()[:3] == ["agent", "host", "state"]
    assert demo_line(screen).split()[:3] == ["demo", "box", "waiting"]
    preview = deck.until(("demo@box · tmux agentlaunch %", "Demo Agent"))  # its pane there, captured over ssh
    assert "fake-1" in preview

    # Enter: the deck suspended, the host's pane in this terminal over ssh -t; detaching comes back to the deck.
    deck.keys("Enter")
    attached = deck.until("Demo Agent", gone="⏎ attach")
    assert "fake-1" in attached
    deck.keys("C-b", "d")  # the host's tmux prefix: detach from it, ssh ends, the deck comes back
    deck.until(("⏎ attach", "demo"))

    # s, x, r on the remote row: `agentlaunch send|stop|restart demo --host box`.
    deck.keys("s")
    deck.until("send to demo:")
    deck.keys("-l", "hello from the deck")
    deck.keys("Enter")
    wait_for(lambda: "Fake provider here, turn 1" in remote_pane(box), what="the answer in the host's pane")
    assert "hello from the deck" in remote_pane(box)
    deck.keys("x")
    deck.until("stop demo?")
    deck.keys("y")
    wait_for(lambda: demo_line(deck.screen()).split()[2:3] == ["stopped"], timeout=60, what="demo stopped on box")
    deck.keys("r")
    deck.until("restart demo?")
    deck.keys("y")
    wait_for(lambda: demo_line(deck.screen()).split()[2:3] == ["waiting"], timeout=60, what="demo restarted on box")
    wait_for(lambda: "restarting demo" not in deck.screen(), timeout=60, what="the restart command done")
    deck.keys("f")  # `fork demo --host box`: the host's agentlaunch answers (the fake provider cannot fork)
    deck.until("failed (exit 2): error: demo cannot be forked")
    deck.keys("d")  # its worktree, looked for there: demo has none
    deck.until("demo has no worktree on box")
    deck.keys("q")
    deck.until("⏎ attach", gone="demo has no worktree on box")

    # The host goes down: its row greyed with why; back by itself when the host is.
    box.stop()
    down = deck.until("host down", timeout=60)
    assert demo_line(down).split()[:3] == ["demo", "box", "waiting"]
    deck.keys("Down", "Up")
    deck.until("host unreachable: box:")
    box.start()
    deck.until("demo", gone="host down", timeout=60)
    deck.keys("q")
    wait_for(lambda: not deck.alive(), what="the deck quit (its session ended with it)")


def test_answer_on_a_host_reads_and_answers_there_and_the_deck_answers_a_remote_row(
    box: SshServer, tmp_path: Path, agents_dir: Path
) -> None:
    """A question of an agent on the host (its record there names a control socket this test serves, as the launch
    would): `answer --host` shows it, the deck's `a` on its row answers it there, by its id."""
    from textual.pilot import Pilot

    from agentlaunch.deck.app import Deck
    from agentlaunch.definitions.settings import load_settings
    from agentlaunch.launch.questions import OpenQuestions
    from agentlaunch.providers.native.source import QuestionAsked
    from tests.support.control_socket import serve
    from tests.support.deck_pilot import drive, message, settle, sources, table_rows
    from tests.test_answer import Told

    nothing = run_cli_inprocess("answer", "demo", "--host", "box")
    assert nothing.returncode == 9, nothing.stderr  # demo (the fake line chat there) has no question to answer
    assert b"questions are answered in its own window" in nothing.stderr
    resume = run_cli_inprocess("resume-budget", "demo", "--host", "box")
    assert resume.returncode == 7 and b"demo is not paused by a budget (it is waiting)" in resume.stderr, resume.stderr
    shutil.copytree(box.remote / "home" / "agents" / "demo", box.remote / "home" / "agents" / "needy")
    questions, told = OpenQuestions("needy"), Told()
    server = serve(tmp_path / "control.sock")
    server.on_question = questions.handle
    try:
        shown = questions.asked(QuestionAsked("Bash", {"command": "rm -rf 'old build'"}, ("once", "always", "deny"), told)).asks
        status = box.remote / "state" / "status"
        record = {"version": 1, "agent": "needy", "pid": os.getpid(), "pid_start": process_start(os.getpid())}
        record |= {"state": "asking", "state_reason": shown, "control": str(server.path), "session_id": "needy-s"}
        (status / "needy.json").write_text(json.dumps(record))
        said = run_cli("answer", "needy", "--host", "box", "--json")  # a process: the host's stdout is its own
        assert said.returncode == 0, said.stderr
        assert json.loads(said.stdout)["question"]["asks"] == shown

        deck_sources = sources(agents_dir)
        deck_sources.hosts = load_settings().hosts

        async def script(app: Deck, pilot: Pilot[None]) -> None:
            await settle(pilot, lambda: any(r[:3] == ["needy", "box", "asking"] for r in table_rows(app)), app, "needy@box")
            await pilot.press("tab")  # the next agent that needs the person: the one on the host
            await settle(pilot, lambda: f"needy is asking: {shown}" in message(app), app, "the remote question")
            assert app.selected() is not None and app.selected().who == "needy@box"  # type: ignore[union-attr]
            await pilot.press("a")
            await settle(pilot, lambda: "needy@box: allowed once" in message(app), app, "the answer given there")
            assert told.answers == [("once", "")]

        drive(Deck(deck_sources, watch=True), script)
    finally:
        server.close()
        (box.remote / "state" / "status" / "needy.json").unlink(missing_ok=True)


def test_d_on_a_remote_row_shows_its_worktree_s_diff_read_on_the_host_and_m_merges_it_there(
    box: SshServer, agents_dir: Path
) -> None:
    from textual.pilot import Pilot

    from agentlaunch.deck.agent_list import AgentList
    from agentlaunch.deck.app import Deck
    from agentlaunch.deck.screens import Confirm, Page
    from agentlaunch.definitions.settings import load_settings
    from tests.support.deck_pilot import drive, message, settle, sources, table_rows
    from tests.test_deck_tmux import page_text

    repo = box.remote / "home" / "repo"
    repo.mkdir(exist_ok=True)
    for args in (
        ["init", "-q", "-b", "main"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "first"],
    ):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    builder = box.remote / "home" / "agents" / "builder"
    shutil.copytree(box.remote / "home" / "agents" / "demo", builder)
    text = (builder / "agent.yaml").read_text().replace('working_dir: "@scratch"', f"working_dir: {repo}\nworktree: true")
    (builder / "agent.yaml").write_text(text)
    up = run_cli_inprocess("tmux", "up", "builder", "--host", "box", "--wait", "60")
    assert up.returncode == 0, up.stderr
    listed = run_cli("worktrees", "--json", "--host", "box", "--agent", "builder")
    assert listed.returncode == 0, listed.stderr
    (tree,) = json.loads(listed.stdout)
    (Path(tree["path"]) / "made by builder.txt").write_text("a line of the agent's work\n")

    deck_sources = sources(agents_dir)
    deck_sources.hosts = load_settings().hosts

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        await settle(pilot, lambda: any(r[:2] == ["builder", "box"] for r in table_rows(app)), app, "builder@box")
        app.query_one(AgentList).move_cursor(row=next(i for i, r in enumerate(table_rows(app)) if r[:2] == ["builder", "box"]))
        await pilot.press("d")
        await settle(pilot, lambda: isinstance(app.screen, Page), app, "the diff page", timeout=60)
        shown = page_text(app)
        assert "$ git status --short" in shown and "made by builder.txt" in shown
        assert "+a line of the agent's work" in shown
        page = app.screen
        assert isinstance(page, Page) and page.title_text.startswith("builder@box · agentlaunch/builder against main")
        assert "M merges, D removes (there)" in page.title_text
        await pilot.press("M")  # builder runs there: refused here, nothing asked
        await settle(pilot, lambda: "builder is running in its worktree: stop it (x)" in message(app), app, "refused")
        await pilot.press("x")
        await settle(pilot, lambda: isinstance(app.screen, Confirm), app, "stop builder?")
        asked = app.screen
        assert isinstance(asked, Confirm) and asked.question == "stop builder?"
        await pilot.press("y")
        await settle(pilot, lambda: any(r[:3] == ["builder", "box", "stopped"] for r in table_rows(app)), app, "stopped", 60)
        for args in (["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "the agent's work"]):
            subprocess.run(["git", "-C", tree["path"], *args], check=True, capture_output=True)
        await pilot.press("d")
        await settle(pilot, lambda: isinstance(app.screen, Page), app, "the diff page again", timeout=60)
        await pilot.press("D")  # `agentlaunch worktrees remove builder --repo REPO --host box`: its commit is merged nowhere
        await settle(pilot, lambda: isinstance(app.screen, Confirm), app, "the removal's question")
        asked = app.screen
        assert isinstance(asked, Confirm) and asked.question == f"remove builder's worktree on box ({tree['path']})?"
        await pilot.press("y")
        refused = "failed (exit 4): error: "
        await settle(pilot, lambda: refused in message(app) and "on no other branch" in message(app), app, "refused there", 60)
        await pilot.press("d")
        await settle(pilot, lambda: isinstance(app.screen, Page), app, "the diff page a third time", timeout=60)
        await pilot.press("M")  # `agentlaunch worktrees merge builder --repo REPO --host box`
        await settle(pilot, lambda: isinstance(app.screen, Confirm), app, "the merge's question")
        asked = app.screen
        assert isinstance(asked, Confirm)
        assert asked.question == "merge builder's worktree on box (agentlaunch/builder) into main and remove it?"
        await pilot.press("y")
        await settle(pilot, lambda: "deleted branch agentlaunch/builder" in message(app), app, "merged there", timeout=60)

    drive(Deck(deck_sources, watch=True), script)
    merged = subprocess.run(["git", "-C", str(repo), "log", "--format=%s", "main"], capture_output=True, text=True).stdout
    assert merged.splitlines()[0] == "the agent's work" and (repo / "made by builder.txt").is_file()
    assert not Path(tree["path"]).exists()
