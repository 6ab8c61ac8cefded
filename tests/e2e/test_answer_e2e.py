"""``agentlaunch answer`` on the real CLIs in a private tmux server: a permission asked, read without attaching, and
answered (allow: the tool ran once; deny: it did not; a question replied in words: the model read the reply), the
fake API's request log as the proof.

One launch per provider covers allow, then deny, in the same session; the bad answers (a stale question id, an
answer when nothing is asked) ride along.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.fakeapi import gemini as gfake
from agentlaunch.fakeapi import responses as cfake
from agentlaunch.fakeapi.anthropic import FakeAnthropic, claude_env, text_reply, tool_reply
from agentlaunch.providers.native.claude_question import DENIED
from testbed.agent_files import write_agent
from testbed.claude_tui import seed_home
from testbed.clis import ensure_cli
from testbed.native_tui import TitledResponsesFake
from testbed.pty_screen import Screen
from tests.e2e.test_native_codex_remote import setup, status_of
from tests.e2e.test_native_run_codex_gemini import quit_tui, type_prompt, until
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.desktop_clicks import desktop_env
from tests.support.desktop_clicks import shown as notifications
from tests.support.gemini_process import one_gemini_process
from tests.support.required import need
from tests.support.waits import turn_over, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

need("tmux")


COLOR = {
    "question": "Which color?",
    "header": "Color",
    "multiSelect": False,
    "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}],
}


@pytest.fixture
def short_root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="alan-") as folder:
        yield Path(folder)


def tmux(socket: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True, check=True).stdout


def pane_of(socket: str, agent: str) -> str:
    for line in tmux(socket, "list-panes", "-s", "-t", "=agentlaunch", "-F", "#{@agentlaunch_agent}\t#{pane_id}").splitlines():
        name, pane = line.split("\t")
        if name == agent:
            return pane
    raise AssertionError(f"no pane for {agent}")


def screen(socket: str, pane: str) -> str:
    return tmux(socket, "capture-pane", "-p", "-J", "-S", "-", "-t", pane)


def cli(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return run_cli(*args, env=env, cwd=cwd, timeout=180)


def state_of(env: dict[str, str], cwd: Path, agent: str) -> str | None:
    records = json.loads(run_cli_inprocess("status", "--json", env=env, cwd=cwd).stdout)
    return next((str(r.get("state")) for r in records if r.get("agent") == agent), None)


def record(env: dict[str, str], cwd: Path, agent: str) -> dict[str, Any]:
    records = json.loads(run_cli_inprocess("status", "--json", env=env, cwd=cwd).stdout)
    return next((r for r in records if r.get("agent") == agent), {})


def question(env: dict[str, str], cwd: Path, agent: str) -> dict[str, Any]:
    shown = cli(env, cwd, "answer", agent, "--json")
    assert shown.returncode == 0, shown.stderr
    value: dict[str, Any] = json.loads(shown.stdout)["question"]
    return value


def open_question(env: dict[str, str], cwd: Path, agent: str) -> dict[str, Any] | None:
    """The question ``answer --json`` shows, or None while none is open (exit 9)."""
    shown = run_cli_inprocess("answer", agent, "--json", env=env, cwd=cwd)
    if shown.returncode == 9:
        return None
    assert shown.returncode == 0, shown.stderr
    value: dict[str, Any] = json.loads(shown.stdout)["question"]
    return value


def tool_results(api: FakeAnthropic) -> list[str]:
    """The tool results the model was sent, in order (each request carries the conversation so far: the last's)."""
    last = api.message_requests()[-1].body
    found = []
    for message in last.get("messages", []):
        for part in message.get("content", []) if isinstance(message.get("content"), list) else []:
            if isinstance(part, dict) and part.get("type") == "tool_result":
                found.append(json.dumps(part.get("content")))
    return found


def notice_of(path: Path, words: str) -> dict[str, Any] | None:
    """The notify command's JSON announcing the question whose reason holds ``words``, once it came."""
    lines = path.read_text().splitlines() if path.exists() else []
    return next((p for p in map(json.loads, lines) if words in str(p.get("reason"))), None)


def press_until(socket: str, pane: str, done: Callable[[], bool], what: str) -> None:
    """Enter in ``pane`` as a person does: once, and again while nothing happens. Claude Code 2.1.332 drops a key
    that arrives within about 0.1 s of its permission dialog's first frame (measured: a key 0.0-0.1 s after the dialog
    is drawn is dropped and the dialog stays up; one 0.2 s or later answers it; its dialogs arm an "input grace")."""
    for _ in range(5):
        tmux(socket, "send-keys", "-t", pane, "Enter")
        with contextlib.suppress(AssertionError):
            wait_for(done, timeout=3, what=what)
            return
    wait_for(done, timeout=60, what=what)


def on_deck(socket: str, text: str) -> None:
    try:
        wait_for(lambda: text in tmux(socket, "capture-pane", "-p", "-t", "=deck:").replace("\n", ""), 60, repr(text))
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the deck shows:\n{tmux(socket, 'capture-pane', '-p', '-t', '=deck:')}") from None


def claude_team_env(anthropic: FakeAnthropic, home: Path, agents_dir: Path, workdir: Path) -> dict[str, str]:
    """The environment of a Claude agent's commands against ``anthropic``: a set-up user's home, ``agents_dir``."""
    assert anthropic.server is not None
    env = claude_env(anthropic.server.url, home, {"CLAUDE_CODE_MAX_RETRIES": "0"})
    seed_home(home, [workdir], key=env["ANTHROPIC_API_KEY"])
    env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
    return env


def test_claude_permission_answered_allow_then_deny_without_attaching(
    socket: str, anthropic: FakeAnthropic, isolated_home: Path, agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    env = claude_team_env(anthropic, isolated_home, agents_dir, workdir)
    notified = workdir.parent / "notified.jsonl"
    notify = [sys.executable, "-c", f"import sys; open({str(notified)!r}, 'a').write(sys.stdin.read())"]
    write_agent(
        agents_dir,
        "asker",
        {
            "provider": "claude",
            "model": "claude-sonnet-4-5",
            "command": str(claude_bin),
            "working_dir": str(workdir),
            "notify": notify,
            "notify_after": 3600,
        },
    )
    anthropic.push(
        text_reply("Ready."),
        tool_reply(
            "Bash", {"command": "touch allowed.txt", "description": "make \x1b[31mred\x1b[0m [b]file[/b]"}, text="Making."
        ),
        text_reply("Made it."),
        tool_reply("Bash", {"command": "touch denied.txt", "description": "make another"}, text="Again."),
        text_reply("Not made."),
        tool_reply("AskUserQuestion", {"questions": [COLOR]}, text="Asking."),
        text_reply("Green it is."),
        tool_reply("Bash", {"command": "touch notified.txt", "description": "a third"}, text="Third."),
        text_reply("Made from the notification."),
        tool_reply("Bash", {"command": "touch decked.txt", "description": "a fourth"}, text="Fourth."),
        text_reply("Denied from the deck."),
        tool_reply("Bash", {"command": "touch paned.txt", "description": "a fifth"}, text="Fifth."),
        text_reply("Allowed in the pane."),
    )
    assert cli(env, workdir, "tmux", "up", "asker", "--socket", socket, "--no-attach", "--wait", "60").returncode == 0
    pane = pane_of(socket, "asker")
    wait_for(lambda: state_of(env, workdir, "asker") == "waiting", timeout=60, what="the startup turn over")
    nothing = cli(env, workdir, "answer", "asker", "--json")
    assert nothing.returncode == 9, nothing.stderr  # no question open

    assert cli(env, workdir, "send", "asker", "Make the file").returncode == 0
    wait_for(lambda: state_of(env, workdir, "asker") == "asking", timeout=60, what="the permission dialog")
    first = question(env, workdir, "asker")
    assert first["tool"] == "Bash" and "touch allowed.txt" in first["asks"], first
    assert "once" in first["options"] and "deny" in first["options"], first
    shown = cli(env, workdir, "answer", "asker")  # the person's view: the escape in the input made visible
    assert shown.returncode == 0 and "\x1b" not in shown.stdout.decode() and "\\u001b[31m" in shown.stdout.decode()
    allowed = cli(env, workdir, "answer", "asker", "--allow", "--question", first["id"], "--json")
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout) == {"agent": "asker", "answered": first["id"], "decision": "once"}
    wait_for(lambda: (workdir / "allowed.txt").exists(), timeout=60, what="the allowed tool ran")
    wait_for(lambda: state_of(env, workdir, "asker") == "waiting", timeout=60, what="the turn over")
    again = cli(env, workdir, "answer", "asker", "--deny", "--question", first["id"])
    assert again.returncode == 10, again.stderr  # answered already: too late, named as such
    calls_after_allow = len(anthropic.message_requests())

    assert cli(env, workdir, "send", "asker", "Make another").returncode == 0
    wait_for(lambda: state_of(env, workdir, "asker") == "asking", timeout=60, what="the second dialog")
    second = question(env, workdir, "asker")
    assert second["id"] != first["id"] and "touch denied.txt" in second["asks"]
    stale = cli(env, workdir, "answer", "asker", "--allow", "--question", first["id"])
    assert stale.returncode == 10, stale.stderr  # the question named closed; another is open: nothing answered
    wait_for(lambda: "Do you want to proceed?" in screen(socket, pane), 30, "the second dialog still asked")
    denied = cli(env, workdir, "answer", "asker", "--deny", "--question", second["id"])
    assert denied.returncode == 0, denied.stderr
    wait_for(lambda: state_of(env, workdir, "asker") == "waiting", timeout=60, what="the denied turn over")
    assert not (workdir / "denied.txt").exists()
    assert len(anthropic.message_requests()) == calls_after_allow + 2  # the call asking, then the one told of the denial
    assert DENIED in tool_results(anthropic)[-1]
    assert "Denied by PermissionRequest hook" in screen(socket, pane)

    # A question (AskUserQuestion) answered in words: the reply is the tool's result the model reads.
    assert cli(env, workdir, "send", "asker", "Ask me").returncode == 0
    # asking from its PreToolUse hook already; the question is answerable once its PermissionRequest hook is held
    color = wait_for(lambda: open_question(env, workdir, "asker"), timeout=60, what="the question handed over")
    assert color["tool"] == "AskUserQuestion" and color["options"] == ["reply", "deny"], color
    assert color["asks"] == "AskUserQuestion: Which color? (Red / Blue)", color
    not_offered = cli(env, workdir, "answer", "asker", "--allow", "--question", color["id"])
    assert not_offered.returncode == 2 and b"reply, deny" in not_offered.stderr, not_offered.stderr
    calls = len(anthropic.message_requests())
    replied = cli(env, workdir, "answer", "asker", "--reply", "Green, in my own words", "--question", color["id"])
    assert replied.returncode == 0, replied.stderr
    wait_for(lambda: state_of(env, workdir, "asker") == "waiting", timeout=60, what="the answered turn over")
    assert len(anthropic.message_requests()) == calls + 1
    assert '\\"Which color?\\"=\\"Green, in my own words\\"' in tool_results(anthropic)[-1], tool_results(anthropic)[-1]

    # Through the notify command: its JSON names the question and the commands that answer it; the allow's is run.
    assert cli(env, workdir, "send", "asker", "A third").returncode == 0
    wait_for(lambda: state_of(env, workdir, "asker") == "asking", timeout=60, what="the third dialog")
    payload = wait_for(lambda: notice_of(notified, "touch notified"), timeout=30, what="the notify command.s JSON")
    assert payload["question"]["asks"] == "Bash: touch notified.txt" and payload["state"] == "asking"
    ran = subprocess.run(payload["answer"]["once"], env={**os.environ, **env}, cwd=workdir, capture_output=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    wait_for(lambda: (workdir / "notified.txt").exists(), timeout=60, what="the tool the notification allowed")
    wait_for(lambda: state_of(env, workdir, "asker") == "waiting", timeout=60, what="the third turn over")
    # Claude Code's own blocked report came before its hook named the question: one notification, the hook's.
    said = [p for p in map(json.loads, notified.read_text().splitlines()) if "touch notified" in str(p.get("reason"))]
    assert [p["reason"] for p in said] == ["Bash: touch notified.txt"], said

    # From the deck, in a real terminal (a session of the agents' tmux server): D, then y, denies the fourth.
    assert cli(env, workdir, "send", "asker", "A fourth").returncode == 0
    wait_for(lambda: state_of(env, workdir, "asker") == "asking", timeout=60, what="the fourth dialog")
    calls = len(anthropic.message_requests())
    full = {**os.environ, **env}
    keep = [f"-e{k}={v}" for k, v in full.items() if k.startswith(("AGENTLAUNCH_", "HOME", "XDG_"))]
    deck = [sys.executable, "-m", "agentlaunch", "deck", "--agents-dir", str(agents_dir)]
    tmux(socket, "new-session", "-d", "-s", "deck", "-x", "160", "-y", "40", "-c", str(workdir), *keep, *deck)
    on_deck(socket, "asker is asking: Bash: touch decked.txt")  # the question on the message line (asking: first row)
    tmux(socket, "send-keys", "-t", "=deck:", "D")
    on_deck(socket, "deny asker's Bash: touch decked.txt? (y/n)")
    tmux(socket, "send-keys", "-t", "=deck:", "y")
    on_deck(socket, "asker: denied: Bash: touch decked.txt")
    wait_for(lambda: state_of(env, workdir, "asker") == "waiting", timeout=60, what="the fourth turn over")
    assert not (workdir / "decked.txt").exists() and len(anthropic.message_requests()) == calls + 1
    assert DENIED in tool_results(anthropic)[-1]
    tmux(socket, "send-keys", "-t", "=deck:", "q")

    # Answered in the pane while the hook is held: the pane wins, and the question it answered is closed.
    assert cli(env, workdir, "send", "asker", "A fifth").returncode == 0
    wait_for(lambda: state_of(env, workdir, "asker") == "asking", timeout=60, what="the fifth dialog")
    fifth = question(env, workdir, "asker")

    def now() -> str:  # what the pane shows now, no history
        return tmux(socket, "capture-pane", "-p", "-t", pane)

    wait_for(lambda: "touch paned.txt" in now() and "Do you want to proceed?" in now(), 30, "the dialog on the screen")
    press_until(socket, pane, lambda: (workdir / "paned.txt").exists(), "the tool the pane allowed")  # "1. Yes" selected
    late = cli(env, workdir, "answer", "asker", "--deny", "--question", fifth["id"])
    assert late.returncode == 10, late.stderr  # answered meanwhile: nothing answered
    wait_for(lambda: state_of(env, workdir, "asker") == "waiting", timeout=60, what="the fifth turn over")

    assert cli(env, workdir, "tmux", "down", "--socket", socket, "--timeout", "60").returncode == 0


def answer_cli(tui: Screen, env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``agentlaunch answer ARGS`` while the interface's screen is read (a CLI whose output is not read blocks)."""
    child = subprocess.Popen(
        [sys.executable, "-m", "agentlaunch", "answer", *args], env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    tui.until(lambda: child.poll() is not None, 120, "agentlaunch answer to end")
    out, err = child.communicate()
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


def test_codex_approval_answered_on_the_app_server_connection_allow_then_deny(short_root: Path, agents_dir: Path) -> None:
    first_call = {"cmd": "touch allowed-by-answer", "sandbox_permissions": "require_escalated", "justification": "a test"}
    second_call = {"cmd": "touch denied-by-answer", "sandbox_permissions": "require_escalated", "justification": "a test"}
    script = cfake.ResponsesScript(
        [
            cfake.TextReply("STARTUP-ANSWER", cfake.ResponsesUsage(9000, 8000, 7, 3)),
            cfake.ShellCallReply(arguments=first_call, usage=cfake.ResponsesUsage(9100, 9000, 5, 0)),
            cfake.TextReply("ALLOWED-ANSWER", cfake.ResponsesUsage(9200, 9100, 4, 0)),
            cfake.ShellCallReply(arguments=second_call, usage=cfake.ResponsesUsage(9300, 9200, 5, 0)),
            cfake.TextReply("DENIED-ANSWER", cfake.ResponsesUsage(9400, 9300, 4, 0)),
        ]
    )
    with TitledResponsesFake(script) as api:
        agent = setup(short_root, agents_dir, api)
        agent.env = desktop_env(short_root / "desktop", agent.env)  # each approval announced once, named
        tui = agent.run()
        try:
            until(tui, lambda: agent.state() == "waiting", "status 'waiting' after the startup turn")
            nothing = answer_cli(tui, agent.env, agent.work, "coder", "--json")
            assert nothing.returncode == 9, nothing.stderr

            type_prompt(tui, "run the tool please", "Would you like to run")
            until(tui, lambda: status_of(agent).get("state") == "asking", "status 'asking' while the approval waits")
            shown = answer_cli(tui, agent.env, agent.work, "coder", "--json")
            assert shown.returncode == 0, shown.stderr
            first = json.loads(shown.stdout)["question"]
            assert first["tool"] == "shell" and "touch allowed-by-answer" in first["asks"], first
            allowed = answer_cli(tui, agent.env, agent.work, "coder", "--allow", "--question", first["id"])
            assert allowed.returncode == 0, allowed.stderr
            until(tui, lambda: "ALLOWED-ANSWER" in tui.text(), "the allowed turn's answer")
            until(tui, lambda: agent.state() == "waiting", "status 'waiting' after the allowed turn")
            assert (agent.work / "allowed-by-answer").exists()
            assert "Would you like to run" not in tui.text()  # the interface's prompt closed with the answer

            type_prompt(tui, "run another", "Would you like to run")
            until(tui, lambda: status_of(agent).get("state") == "asking", "status 'asking' for the second approval")
            shown = answer_cli(tui, agent.env, agent.work, "coder", "--json")
            second = json.loads(shown.stdout)["question"]
            stale = answer_cli(tui, agent.env, agent.work, "coder", "--allow", "--question", first["id"])
            assert stale.returncode == 10, stale.stderr
            denied = answer_cli(tui, agent.env, agent.work, "coder", "--deny", "--question", second["id"])
            assert denied.returncode == 0, denied.stderr
            until(tui, lambda: agent.state() == "waiting", "status 'waiting' after the denied turn", timeout=90)
            assert not (agent.work / "denied-by-answer").exists()
        finally:
            quit_tui(tui)
    outputs = [
        json.dumps(item) for item in api.turn_requests[-1].body.get("input", []) if item.get("type") == "function_call_output"
    ]
    assert len(outputs) == 2, outputs  # the allowed call's output, then the declined one's
    assert "denied-by-answer" not in outputs[0] and ("declined" in outputs[1].lower() or "rejected" in outputs[1].lower()), (
        outputs
    )
    bodies = [argv[-1].splitlines()[0] for argv in notifications(short_root / "desktop")]
    assert bodies == ["shell: touch allowed-by-answer", "shell: touch denied-by-answer"], bodies


class GeminiPane:
    """A Gemini agent ``gem`` up in the test's tmux server, its startup turn over, against ``api``."""

    def __init__(self, socket: str, api: gfake.GeminiFake, env: dict[str, str], work: Path) -> None:
        self.socket, self.api, self.env, self.work = socket, api, env, work
        self.pane = pane_of(socket, "gem")

    def screen(self) -> str:
        return screen(self.socket, self.pane)

    def ask(self, text: str) -> dict[str, Any]:
        """Type ``text`` as a prompt; the question it makes Gemini ask, once the session is asking."""
        tmux(self.socket, "send-keys", "-t", self.pane, "-l", text)
        wait_for(lambda: text in self.screen(), timeout=30, what=f"{text!r} typed")
        sent = len(self.api.model_requests)
        for _ in range(3):  # Gemini 0.61 under load keeps an Enter read with the typed keys in its box
            tmux(self.socket, "send-keys", "-t", self.pane, "Enter")
            with contextlib.suppress(AssertionError):
                wait_for(lambda: len(self.api.model_requests) > sent, timeout=5, what="the prompt's call")
                break
        wait_for(lambda: state_of(self.env, self.work, "gem") == "asking", timeout=60, what="asking")
        return question(self.env, self.work, "gem")


@contextlib.contextmanager
def gemini_in_tmux(
    socket: str, agents_dir: Path, request: pytest.FixtureRequest, replies: list[Any], desktop: Path | None = None
) -> Iterator[GeminiPane]:
    """Gemini's interface in a tmux pane (``tmux up gem``) against a fake Gemini API answering ``replies`` after
    its startup turn (``desktop``: a clickable notify-send's folder, tests/support/desktop_clicks.py); taken down at
    the end."""
    binary = ensure_cli("gemini")
    with tempfile.TemporaryDirectory(prefix="alag-") as folder, gfake.GeminiFake() as api:
        root = Path(folder)
        home, work = root / "home", root / "work"
        home.mkdir()
        work.mkdir()
        env = gfake.prepare_gemini_home(home, api.base_url, max_attempts=1, no_relaunch=one_gemini_process(request))
        env.update(TERM="xterm-256color", AGENTLAUNCH_TITLE="0", AGENTLAUNCH_AGENTS_DIR=str(agents_dir))
        env.update({k: v for k, v in os.environ.items() if k.startswith("AGENTLAUNCH_") and k not in env})
        env = desktop_env(desktop, env) if desktop is not None else env
        agent = {"provider": "gemini", "model": "gemini-2.5-pro", "command": str(binary), "working_dir": str(work)}
        write_agent(agents_dir, "gem", {**agent, "startup": "say hello"})
        for reply in [gfake.TextReply("Hello, ready.", GEMINI_USAGE), *replies]:
            api.script.push(reply)
        up = run_cli("tmux", "up", "gem", "--socket", socket, "--no-attach", "--wait", "90", env=env, cwd=work, timeout=150)
        assert up.returncode == 0, up.stderr.decode()
        wait_for(lambda: turn_over(record(env, work, "gem")), timeout=90, what="the startup turn over")
        yield GeminiPane(socket, api, env, work)
        assert run_cli("tmux", "down", "--socket", socket, env=env, cwd=work, timeout=120).returncode == 0


GEMINI_USAGE = gfake.GeminiUsage(prompt=900, output=7)


def test_gemini_prompt_answered_with_keys_only_while_its_screen_shows_it_allow_then_deny(
    socket: str, isolated_home: Path, agents_dir: Path, request: pytest.FixtureRequest
) -> None:
    replies = [
        gfake.FunctionCallReply("run_shell_command", {"command": "touch allowed.txt", "description": "w"}, GEMINI_USAGE),
        gfake.TextReply("Wrote it.", GEMINI_USAGE),
        gfake.FunctionCallReply("run_shell_command", {"command": "touch denied.txt", "description": "w"}, GEMINI_USAGE),
        gfake.TextReply("Never sent.", GEMINI_USAGE),
    ]
    with gemini_in_tmux(socket, agents_dir, request, replies) as gem:
        env, work, api, pane, ask = gem.env, gem.work, gem.api, gem.pane, gem.ask
        first = ask("write the file")
        assert first["tool"] == "shell" and "touch allowed.txt" in first["asks"], first
        assert first["options"] == ["once", "always", "deny"]
        assert cli(env, work, "answer", "gem", "--allow", "--question", first["id"]).returncode == 0
        wait_for(lambda: (work / "allowed.txt").exists(), timeout=60, what="the allowed tool ran")
        wait_for(lambda: state_of(env, work, "gem") == "waiting", timeout=60, what="the turn over")
        wait_for(lambda: "Wrote it." in screen(socket, pane), timeout=30, what="the answer drawn")  # the file may lead
        calls = len(api.model_requests)

        second = ask("write another")
        tmux(socket, "send-keys", "-t", pane, "Down")  # the person moves in the prompt: still the same question shown
        denied = cli(env, work, "answer", "gem", "--deny", "--question", second["id"])
        assert denied.returncode == 0, denied.stderr
        wait_for(lambda: "Request cancelled" in screen(socket, pane), timeout=60, what="the request cancelled")
        assert not (work / "denied.txt").exists()
        assert len(api.model_requests) == calls + 1  # the call that asked; none after the denial
        typed = screen(socket, pane)
        late = cli(env, work, "answer", "gem", "--allow", "--question", second["id"])
        assert late.returncode == 10, late.stderr  # closed: no key typed into the input box
        assert screen(socket, pane).count("1") == typed.count("1")
