"""The native mode on the real Claude Code: `agentlaunch run AGENT` relays its own interface, offline.

The TUI runs through agentlaunch on a PTY (pexpect) against the fake
Anthropic API, with a temp HOME seeded as a set-up user's
(:mod:`testbed.claude_tui`); pyte reads the screen as a person sees it.
What reached the CLI is read from the captured requests and the screen.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from agentlaunch.fakeapi.anthropic import ApiUsage, FakeAnthropic, first_user_text, system_text, text_reply
from testbed.agent_files import write_agent
from testbed.claude_tui import quit_with_ctrl_c, seed_home, tui_env
from testbed.pty_screen import Screen, spawn
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.waits import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

SOUL = "You are the native-mode reviewer; the marker NATIVE-SOUL-7731 is yours."
STARTUP = "STARTUP-MARKER-5521: review the newest commit first."


@pytest.fixture
def short_root() -> Iterator[Path]:
    # The launch's runtime folder is under /tmp anyway; a short root keeps the seeded paths readable.
    with tempfile.TemporaryDirectory(prefix="alnt-") as folder:
        yield Path(folder)


class Claude:
    """One agent on the real claude, the fake API, a seeded home; each `run` is one agentlaunch process."""

    def __init__(self, root: Path, claude_bin: Path, api: FakeAnthropic, agents_dir: Path) -> None:
        self.root, self.api, self.agents_dir = root, api, agents_dir
        self.home, self.work = root / "home", root / "work"
        for folder in (self.home, self.work):
            folder.mkdir(mode=0o700, exist_ok=True)
        seed_home(self.home, [self.work])
        write_agent(
            agents_dir,
            "native",
            {
                "display": "Native",
                "provider": "claude",
                "model": "claude-sonnet-4-5",
                "command": str(claude_bin),
                "working_dir": str(self.work),
                "startup": STARTUP,
            },
            {"soul.md": SOUL},
        )
        assert api.server is not None
        keep = {k: os.environ[k] for k in os.environ if k.startswith(("AGENTLAUNCH_", "XDG_"))}
        self.env = tui_env(api.server.url, self.home, {**keep, "AGENTLAUNCH_TITLE": "0", "CLAUDE_CODE_MAX_RETRIES": "0"})

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "agentlaunch", "run", "native", "--agents-dir", str(self.agents_dir), *args]

    def run(self, *args: str, columns: int = 120, lines: int = 40) -> Screen:
        return spawn(self.argv(*args), self.env, self.work, columns, lines)

    def prompts(self) -> list[str]:
        return [first_user_text(r.body) for r in self.api.message_requests()]


@pytest.fixture
def claude(short_root: Path, claude_bin: Path, agents_dir: Path) -> Iterator[Claude]:
    api = FakeAnthropic()
    with api.serve():
        yield Claude(short_root, claude_bin, api, agents_dir)


def main_calls(api: FakeAnthropic) -> list[dict[str, object]]:
    """The model calls of the conversation (Claude Code also calls the API for titles and such: those have no tools)."""
    return [r.body for r in api.message_requests() if r.body.get("tools")]


def waiting(claude: Claude) -> bool:
    """agentlaunch's status record says the agent waits for the person (its turn has ended, Stop hook and all)."""
    done = run_cli_inprocess("status", "--json", env=claude.env, cwd=claude.work)
    try:
        records = json.loads(done.stdout)
    except ValueError:
        return False
    return any(r.get("agent") == "native" and r.get("state") == "waiting" for r in records)


def quit_tui(screen: Screen, claude: Claude, *, settle: bool = True) -> None:
    if settle:  # a Ctrl-C before the turn's end (its Stop hook) interrupts the turn instead
        screen.until(lambda: waiting(claude), 60, "the turn's end (status: waiting)")
    quit_with_ctrl_c(screen)


def test_claudes_own_interface_with_the_instructions_and_the_startup_message_once(claude: Claude) -> None:
    claude.api.push(text_reply("Startup seen.", ApiUsage(20, 3000, 0, 6)), text_reply("Second answer.", ApiUsage(8, 0, 3000, 3)))
    screen = claude.run()
    screen.wait_for(lambda t: "Startup seen." in t, 90, "the startup turn's answer")
    text = screen.text()
    assert "Claude Code" in text or "claude" in text.lower()  # Claude Code's own interface, not agentlaunch's chat
    assert "›" not in text.splitlines()[-1]
    calls = main_calls(claude.api)
    assert STARTUP in first_user_text(calls[0])
    assert "NATIVE-SOUL-7731" in system_text(calls[0])  # the instructions in the system prompt, as headless
    # A typed prompt reaches the CLI as the person typed it.
    screen.child.send("typed by a person")
    screen.wait_for(lambda t: "typed by a person" in t, 30, "the typed prompt in the input box")
    screen.child.send("\r")
    screen.wait_for(lambda t: "Second answer." in t, 60, "the second answer")
    last = main_calls(claude.api)[-1]
    assert "typed by a person" in str(last["messages"])
    quit_tui(screen, claude)
    # -c resumes the session natively: no startup message again.
    sent = len(main_calls(claude.api))
    claude.api.push(text_reply("Resumed answer.", ApiUsage(5, 0, 3100, 2)))
    screen = claude.run("-c")
    screen.wait_for(lambda t: "›" in t or ">" in t, 60, "the resumed interface's prompt")
    screen.child.send("after resume")
    screen.wait_for(lambda t: "after resume" in t, 30, "the typed prompt")
    screen.child.send("\r")
    screen.wait_for(lambda t: "Resumed answer." in t, 60, "the resumed answer")
    later = main_calls(claude.api)[sent:]
    assert later and all(str(c["messages"]).count("STARTUP-MARKER-5521") <= 1 for c in later)
    assert "Second answer." in str(later[-1]["messages"])  # the same conversation, resumed
    quit_tui(screen, claude)
    every = [str(c["messages"]) for c in main_calls(claude.api)]
    assert sum(1 for m in every if m.count("STARTUP-MARKER-5521") > 1) == 0  # never sent twice into one request


def test_headless_and_native_turns_are_one_session(claude: Claude) -> None:
    claude.api.push(text_reply("Headless answer.", ApiUsage(20, 3000, 0, 6)))
    claude.api.push(text_reply("Native answer.", ApiUsage(8, 0, 3000, 3)))
    done = run_cli("run", "native", "--agents-dir", str(claude.agents_dir), "a headless turn", env=claude.env, cwd=claude.work)
    assert done.returncode == 0, done.stderr.decode()
    assert b"Headless answer." in done.stdout
    (session,) = json.loads(run_cli_inprocess("sessions", "--json", env=claude.env, cwd=claude.work).stdout)
    screen = claude.run("-c")
    screen.wait_for(lambda t: "Headless answer." in t, 60, "the headless turn in the resumed interface")
    screen.child.send("a native turn")
    screen.wait_for(lambda t: "a native turn" in t, 30, "the typed prompt")
    screen.child.send("\r")
    screen.wait_for(lambda t: "Native answer." in t, 60, "the native answer")
    quit_tui(screen, claude)
    assert "Headless answer." in str(main_calls(claude.api)[-1]["messages"])  # one conversation
    (after,) = json.loads(run_cli_inprocess("sessions", "--json", env=claude.env, cwd=claude.work).stdout)
    assert after["session_id"] == session["session_id"]
    assert after["turns"] == session["turns"] + 1
    listed = run_cli_inprocess("usage", "--session", session["session_id"], "--calls", "--json", env=claude.env, cwd=claude.work)
    figures = [(c["turn"], c["input"], c["cache_write"], c["cache_read"], c["output"]) for c in json.loads(listed.stdout)]
    assert figures == [(1, 20, 3000, 0, 6), (2, 8, 0, 3000, 3)]  # each call once, with the API's figures


def test_an_agent_with_skills_starts_with_no_dialog_and_its_skill_in_claudes_own_listing(
    claude: Claude, claude_bin: Path, agents_dir: Path
) -> None:
    # The user's own Claude Code folder: settings and a skill of theirs, which the agent's folder links.
    user = claude.home / ".claude"
    (user / "skills" / "users-own").mkdir(parents=True)
    (user / "skills" / "users-own" / "SKILL.md").write_text("---\nname: users-own\ndescription: the user's skill\n---\nbody\n")
    (user / "settings.json").write_text('{"theme": "dark"}')
    before = {p: p.read_bytes() for p in user.rglob("*") if p.is_file()}
    write_agent(
        agents_dir,
        "native",
        {
            "provider": "claude",
            "model": "claude-sonnet-4-5",
            "command": str(claude_bin),
            "working_dir": str(claude.work),
            "skills": ["git-hygiene"],
            "startup": "say ready",
        },
    )
    claude.api.push(text_reply("Ready with skills.", ApiUsage(20, 3000, 0, 6)), text_reply("Resumed with skills."))
    screen = claude.run()
    dialog: list[str] = []

    def answered(text: str) -> bool:
        if "No, exit" in text or "Adding a new directory" in text:
            dialog.append(text)
        return "Ready with skills." in text or bool(dialog)

    screen.wait_for(answered, 90, "the startup turn's answer, no key pressed")
    assert not dialog, f"Claude Code stopped on a dialog:\n{dialog[0]}"
    (first, *_) = main_calls(claude.api)
    assert "git-hygiene" in json.dumps(first) and "users-own" in json.dumps(first)  # listed to the model
    screen.until(lambda: waiting(claude), 60, "the turn's end (status: waiting)")
    # Claude Code's own listing: /skills shows the agent's skill (and the user's) as the user's own, by name.
    screen.child.send("/skills")
    screen.wait_for(lambda t: "/skills" in t, 30, "the typed command")
    screen.child.send("\r")
    listing = screen.wait_for(lambda t: "git-hygiene" in t and "users-own" in t and "2 skills" in t, 30, "the skill listing")
    assert "git-hygiene   user" in listing
    screen.child.send("\x1b")
    screen.wait_for(lambda t: "2 skills" not in t, 30, "the listing closed")
    quit_tui(screen, claude)
    # The resume starts with no dialog either, in the same conversation, and its calls are metered as ever.
    screen = claude.run("-c")
    screen.until(lambda: waiting(claude), 60, "the resumed interface ready (status: waiting)")
    screen.child.send("after resume")
    screen.wait_for(lambda t: "after resume" in t, 30, "the typed prompt")
    screen.child.send("\r")
    screen.wait_for(lambda t: "Resumed with skills." in t or "No, exit" in t, 60, "the resumed answer")
    assert "No, exit" not in screen.text()
    assert "Ready with skills." in str(main_calls(claude.api)[-1]["messages"])
    quit_tui(screen, claude)
    (session,) = json.loads(run_cli_inprocess("sessions", "--json", env=claude.env, cwd=claude.work).stdout)
    listed = run_cli_inprocess("usage", "--session", session["session_id"], "--calls", "--json", env=claude.env, cwd=claude.work)
    assert [(c["input"], c["cache_write"], c["output"]) for c in json.loads(listed.stdout)][0] == (20, 3000, 6)
    # Nothing of the user's own Claude Code folder was written (Claude Code writes its own state through the link).
    assert {p: p.read_bytes() for p in [*before] if p.exists()} == before
    state = json.loads((claude.home / ".claude.json").read_text())
    assert not any("skills" in folder for folder in state.get("projects", {}))  # no trust entry for a skills folder


def user_blocks(body: dict[str, object]) -> list[str]:
    """The text blocks of the request's last user message (Claude Code puts the prompt in a block of its own)."""
    last = [m for m in body["messages"] if isinstance(m, dict) and m.get("role") == "user"][-1]  # type: ignore[attr-defined]
    content = last["content"]
    return [content] if isinstance(content, str) else [b["text"] for b in content if b.get("type") == "text"]


def send_bg(claude: Claude, *args: str) -> subprocess.Popen[bytes]:
    """`agentlaunch send native ARGS` in the background (the screen must be read meanwhile, or the TUI blocks)."""
    return subprocess.Popen(
        [sys.executable, "-m", "agentlaunch", "send", "native", *args],
        env=claude.env,
        cwd=claude.work,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def finished(screen: Screen, proc: subprocess.Popen[bytes], what: str) -> tuple[int, bytes, bytes]:
    screen.until(lambda: proc.poll() is not None, 120, what)
    out, err = proc.communicate()
    return proc.returncode, out, err


def under_a_shell(claude: Claude) -> tuple[Screen, Path, Path]:
    """agentlaunch run under bash, which saves the terminal's settings before and after it: (screen, before, after)."""
    before, after = claude.root / "stty.before", claude.root / "stty.after"
    cmd = shlex.join(claude.argv())
    script = f'stty -g > {before}; {cmd}; echo "agentlaunch exit $?"; stty -g > {after}; echo done-stty'
    child = pexpect.spawn(
        "bash", ["--noprofile", "--norc", "-c", script], env=claude.env, cwd=str(claude.work), dimensions=(40, 120), timeout=120
    )
    return Screen(child), before, after


def sigterm_to_agentlaunch(screen: Screen) -> str:
    """SIGTERM to the agentlaunch the shell of :func:`under_a_shell` runs; the screen once the shell has finished."""
    shell = screen.child
    agentlaunch = wait_for(lambda: Path(f"/proc/{shell.pid}/task/{shell.pid}/children").read_text().split(), 30, "agentlaunch")
    os.kill(int(agentlaunch[0]), signal.SIGTERM)
    screen.until(lambda: not shell.isalive(), 60, "the shell to finish after agentlaunch")
    screen.pump()
    return screen.text()


def test_one_interface_send_refusals_an_esc_a_resize_and_the_terminal_restored_after_sigterm(claude: Claude) -> None:
    """On one interface, in turn: `send` never hands out Claude Code's shell and a slash command needs --command;
    Esc during a streaming answer and a resize reach Claude; a SIGTERM to agentlaunch restores the terminal."""
    claude.api.push(text_reply("Startup seen."))
    screen, stty_before, stty_after = under_a_shell(claude)
    screen.wait_for(lambda t: "Startup seen." in t, 90, "the startup turn's answer")
    screen.until(lambda: waiting(claude), 60, "the interface waiting")
    # `send '!touch FILE'` would run in Claude Code's bash mode (no model, no permission prompt): refused, exit 2.
    target = claude.root / "made-by-bang"
    before = len(main_calls(claude.api))
    for text in (f"!touch {target}", "/cost", "  /cost"):
        code, _, err = finished(screen, send_bg(claude, text, "--wait"), f"send {text!r}")
        assert code == 2, err
        assert b"was not typed" in err and b"--command" in err
    screen.pump(2.0)
    assert not target.exists()
    assert len(main_calls(claude.api)) == before and "Total cost" not in screen.text()  # nothing reached the CLI
    # A slash command asked for by name is typed as it is; --wait returns once its output settles (no turn).
    code, out, err = finished(screen, send_bg(claude, "/cost", "--command", "--wait", "--timeout", "60"), "send --command")
    assert code == 0, err
    assert out == b""  # a command that opens no turn has no answer
    screen.wait_for(lambda t: "Total duration" in t, 30, "/cost's panel on the interface's screen")
    screen.child.send("\x1b")  # the panel closes as a person would close it
    screen.pump(1.0)
    # The door is open after it: a prompt is taken and answered, exactly as written.
    claude.api.push(text_reply("After the command."))
    text = "After /cost: !not a shell\n/nor a command"
    code, out, err = finished(screen, send_bg(claude, text, "--wait", "--timeout", "90"), "the next send")
    assert code == 0, err
    assert out == b"After the command.\n"
    assert user_blocks(main_calls(claude.api)[-1])[-1] == text  # the model reads it exactly as written
    # Esc during a streaming answer: 2 s before each of the stream's events, so Esc lands while it streams even on a
    # loaded machine (at 0.15 s the whole answer was on screen before the Esc of a fresh-clone CI run under load 23
    # on 2 cores reached it).
    claude.api.push(text_reply("slow " * 200, ApiUsage(10, 0, 0, 200), delay=2.0))
    screen.child.send("stream something long")
    screen.wait_for(lambda t: "stream something long" in t, 30, "the typed prompt")
    screen.child.send("\r")
    screen.wait_for(lambda t: "slow slow" in t, 60, "the streaming answer")
    screen.child.send("\x1b")  # Esc: Claude Code interrupts the answer
    screen.wait_for(lambda t: "Interrupted" in t, 30, "Claude Code's interrupted mark")
    # A resize: Claude Code redraws its input box across the new width.
    # The screen that reads it stays 120 columns wide: a rule of 90 can only come from a redraw at 90.
    screen.child.setwinsize(40, 90)
    screen.wait_for(lambda t: any(85 <= line.count("─") <= 90 for line in t.splitlines()), 30, "a 90-column box")
    # A SIGTERM to agentlaunch: it exits 143 and the terminal's settings are as they were before it.
    text = sigterm_to_agentlaunch(screen)
    assert "agentlaunch exit 143" in text and "done-stty" in text
    assert stty_before.read_text() == stty_after.read_text()
