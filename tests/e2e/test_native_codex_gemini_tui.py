"""The native mode on the real Codex CLI and Gemini CLI: `agentlaunch run AGENT` relays their own interfaces.

Each runs through agentlaunch on a PTY (pexpect; pyte reads the screen)
against its fake API on 127.0.0.1, with a temp HOME seeded as a set-up user's:
Codex with the fake provider in ``config.toml`` and the working folder
trusted, Gemini with an API-key ``settings.json`` and the workspace trusted.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pexpect
import pytest

from agentlaunch.fakeapi import gemini as gfake
from agentlaunch.fakeapi import responses as cfake
from agentlaunch.fakeapi.server import Recorded
from agentlaunch.launch.reaper import processes
from testbed.agent_files import write_agent
from testbed.clis import ensure_cli
from testbed.native_tui import TitledResponsesFake
from testbed.pty_screen import Screen, spawn
from tests.support.cli_runs import run_cli_inprocess
from tests.support.waits import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

SOUL = "You are the native planner; the marker NATIVE-SOUL-4410 is yours."
STARTUP = "STARTUP-MARKER-8812: list the open work first."


@dataclass
class Tui:
    """One agent on a real per-turn CLI and its fake API; each `run` is one agentlaunch process on a PTY."""

    name: str
    agents_dir: Path
    work: Path
    env: dict[str, str]
    calls: Callable[[], list[Recorded]]
    user_texts: Callable[[Any], list[str]]
    instructions: Callable[[Any], str]
    push_text: Callable[[str], None]
    # Every call from now on, once the pushed replies are spent, gets this reply; with a stall > 0 its stream stops
    # after its first piece for that many seconds. A CLI's calls of its own (Codex names the thread) take it too, so
    # no spare reply is left over to answer the next phase's prompt.
    answer_all: Callable[[str, float], None]
    ready: str  # what its interface shows once it waits for the person

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "agentlaunch", "run", "planner", "--agents-dir", str(self.agents_dir), *args]

    def run(self, *args: str) -> Screen:
        return spawn(self.argv(*args), self.env, self.work)


@pytest.fixture(params=["codex", "gemini"])
def tui(request: pytest.FixtureRequest, agents_dir: Path) -> Iterator[Tui]:
    name = request.param
    binary = ensure_cli(name)
    with tempfile.TemporaryDirectory(prefix="alnt-") as folder:
        root = Path(folder)
        home, work = root / "home", root / "work"
        home.mkdir()
        work.mkdir()
        write_agent(
            agents_dir,
            "planner",
            {
                "display": "Planner",
                "provider": name,
                "model": "gpt-5.5" if name == "codex" else "gemini-2.5-pro",
                "command": str(binary),
                "working_dir": str(work),
                "startup": STARTUP,
            },
            {"soul.md": SOUL},
        )
        keep = {k: os.environ[k] for k in os.environ if k.startswith("AGENTLAUNCH_")}
        extra = {**keep, "TERM": "xterm-256color", "AGENTLAUNCH_TITLE": "0"}
        if name == "codex":
            # A set-up user's config: the folder trusted, the first-run notices seen (as Codex 0.171.0 records them).
            trusted = "\n".join(
                [
                    f'[projects."{work}"]',
                    'trust_level = "trusted"',
                    "[tui]",
                    "screen_reader_detection_done = true",
                    "[tui.model_availability_nux]",
                    '"gpt-6.1-sol" = 1',
                    "[notice.model_migrations]",
                    '"gpt-5.5" = "gpt-6-sol"',
                ]
            )
            with TitledResponsesFake() as api:  # Codex's own thread-title call never takes a scripted reply
                env = cfake.prepare_codex_home(
                    home, api.server.url + "/v1", request_max_retries=0, stream_max_retries=0, extra_config=trusted
                )
                env.update(extra)
                usage = cfake.ResponsesUsage(input_tokens=9000, cached_tokens=8000, output_tokens=7, reasoning_tokens=3)
                yield Tui(
                    name,
                    agents_dir,
                    work,
                    env,
                    lambda: api.model_requests,
                    cfake.user_texts,
                    lambda body: json.dumps(body.get("input", [])[:2]) + str(body.get("instructions", "")),
                    lambda text: api.script.push(cfake.TextReply(text, usage)),
                    lambda text, stall: setattr(api.script, "default", cfake.TextReply(text, usage, stall=stall)),
                    "gpt-5.5",
                )
        else:
            with gfake.GeminiFake() as gapi:
                env = gfake.prepare_gemini_home(home, gapi.base_url, max_attempts=1)
                env.update(extra)
                gusage = gfake.GeminiUsage(prompt=9000, output=7, cached=6000, thoughts=2)
                yield Tui(
                    name,
                    agents_dir,
                    work,
                    env,
                    lambda: gapi.model_requests,
                    gfake.user_texts,
                    lambda body: "\n".join(gfake.instruction_texts(body)),
                    lambda text: gapi.script.push(gfake.TextReply(text, gusage)),
                    lambda text, stall: setattr(gapi.script, "default", gfake.TextReply(text, gusage, stall=stall)),
                    "Type your message",
                )


def quit_tui(tui: Tui, screen: Screen) -> None:
    """Leave the interface the way its user would: Ctrl-C twice in quick succession."""
    for _ in range(3):
        screen.child.send("\x03")
        screen.pump(0.3)
        screen.child.send("\x03")
        try:
            screen.until(lambda: not screen.child.isalive(), 5, "the interface to exit")
            return
        except AssertionError:
            continue
    screen.until(lambda: not screen.child.isalive(), 30, "the interface to exit")


def app_servers(root: Path) -> list[int]:
    """Codex app-server processes whose command line names ``root`` (this test's home)."""
    found = []
    for pid in processes():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if b"app-server" in cmd and str(root).encode() in cmd:
            found.append(pid)
    return found


def state_of(tui: Tui) -> str | None:
    """The interface's state once its first turn (the startup message's) is counted."""
    records = json.loads(run_cli_inprocess("status", "--json", env=tui.env, cwd=tui.work).stdout)
    return next((str(r["state"]) for r in records if r.get("agent") == "planner" and r.get("turns")), None)


def sent(tui: Tui, screen: Screen, *args: str) -> tuple[int, bytes, bytes]:
    """`agentlaunch send planner ARGS`, the screen read meanwhile; its exit code, stdout and stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentlaunch", "send", "planner", *args],
        env=tui.env,
        cwd=tui.work,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    screen.until(lambda: proc.poll() is not None, 120, f"send {args!r} to return")
    out, err = proc.communicate()
    return proc.returncode, out, err


def test_own_interface_startup_typed_and_sent_prompts_esc_resize_then_resume_and_sigterm(tui: Tui) -> None:
    """One interface run and its resume, each fact read in turn (two CLI starts, not six; each start of Gemini's
    interface costs about 3.6 CPU-s, its idle wait about none: measured under load 5).

    The first run: the agent's instructions and its startup message in the first call; a typed prompt; `send
    --wait` pastes a two-line prompt and prints the answer; `send '!touch FILE'` never reaches a shell and the model
    reads it as written (Codex would run it in its shell; padded with a space Codex strips; Gemini takes a pasted !
    as text), and a leading / is a command: Codex's model reads it padded, Gemini refuses it without ``--command``;
    Esc during a streaming answer reaches the CLI; a resize reaches it; Ctrl-C twice ends it and leaves a session.
    The resume (``-c``), in a shell that saved the terminal's settings: the startup message never sent again, then
    SIGTERM to agentlaunch gives exit 143 and the terminal's settings back."""
    tui.push_text("Startup seen.")
    tui.answer_all("Second answer.", 0.0)
    screen = tui.run()
    screen.wait_for(lambda t: "Startup seen." in t, 120, "the startup turn's answer")
    first = tui.calls()[0].body
    assert any("STARTUP-MARKER-8812" in t for t in tui.user_texts(first))
    assert "NATIVE-SOUL-4410" in tui.instructions(first)
    screen.child.send("typed by a person")
    screen.wait_for(lambda t: "typed by a person" in t, 30, "the typed prompt")
    screen.submit(lambda: len(tui.calls()) > 1)
    screen.wait_for(lambda t: "Second answer." in t, 60, "the second answer")
    assert any("typed by a person" in tui.user_texts(c.body)[-1] for c in tui.calls()[1:])

    # `send --wait`: the prompt pasted into the interface, one prompt with both lines, the answer printed.
    screen.until(lambda: state_of(tui) == "waiting", 60, "the interface waiting after its typed turn")
    before = len(tui.calls())
    tui.answer_all("The sent answer: PEAR.", 0.0)
    argv = [sys.executable, "-m", "agentlaunch", "send", "planner", "Name a fruit.\nOne word only.", "--wait", "--json"]
    proc = subprocess.Popen(argv, env=tui.env, cwd=tui.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    screen.until(lambda: proc.poll() is not None, 120, "send --wait to return")  # the screen is read meanwhile
    out, err = proc.communicate()
    assert proc.returncode == 0, f"{out.decode()}\n{err.decode()}\n{screen.text()}"  # strings: pytest cuts a repr
    value = json.loads(out)
    assert value["exit_code"] == 0 and value["answer"] == "The sent answer: PEAR."
    assert value["usage"]["output"] > 0
    fruit = [c for c in tui.calls()[before:] if any("Name a fruit." in t for t in tui.user_texts(c.body))]
    assert fruit and tui.user_texts(fruit[-1].body)[-1].endswith("Name a fruit.\nOne word only.")
    screen.wait_for(lambda t: "PEAR" in t, 30, "the answer on the interface's screen")

    # `send '!touch FILE'` hands out no shell; a leading / is a command.
    target = tui.work.parent / "made-by-bang"
    tui.answer_all("Not a shell.", 0.0)
    text = f"!touch {target}"
    code, out, err = sent(tui, screen, text, "--wait", "--timeout", "90")
    assert code == 0, err
    assert out == b"Not a shell.\n"
    assert not target.exists()
    assert any(tui.user_texts(c.body)[-1] == text for c in tui.calls())  # exactly as written, nothing around it
    if tui.name == "gemini":
        code, _, err = sent(tui, screen, "/about", "--wait")
        assert code == 2 and b"slash command" in err and b"was not typed" in err
        code, _, err = sent(tui, screen, "/about", "--command", "--wait", "--timeout", "60")
        assert code == 0, err
    else:
        tui.answer_all("Read as text.", 0.0)
        code, out, err = sent(tui, screen, "/review the last commit", "--wait", "--timeout", "90")
        assert code == 0, err
        assert any(tui.user_texts(c.body)[-1] == "/review the last commit" for c in tui.calls())

    # Esc during a streaming answer: the CLI cancels it.
    tui.answer_all("STREAMING-ANSWER-PIECES that never finish", 60.0)
    screen.child.send("answer slowly")
    screen.wait_for(lambda t: "answer slowly" in t, 30, "the typed prompt")
    calls = len(tui.calls())
    screen.submit(lambda: len(tui.calls()) > calls)
    # After the prompt's first place on screen: Codex's interface on agentlaunch's app-server names the thread
    # after it in its footer ("GPT-5.5 default · WORKDIR · answer slowly"), under the answer.
    screen.wait_for(lambda t: "STREAM" in t.split("answer slowly", 1)[-1], 60, "the answer's first piece")
    screen.child.send("\x1b")  # Esc: the CLI cancels the answer it is streaming
    screen.wait_for(lambda t: any(w in t.lower() for w in ("interrupted", "cancelled", "canceled")), 30, "the CLI's cancel mark")
    assert screen.child.isalive()
    tui.answer_all("Resumed answer.", 0.0)

    # A resize reaches the CLI: it redraws for the new width.
    # (The screen that reads it stays 120 columns wide: a rule of 90 can only come from a redraw at 90.)
    screen.child.setwinsize(40, 90)
    screen.child.send("\x0c")  # Ctrl-L: some interfaces redraw only on input
    if tui.name == "gemini":  # Gemini redraws its full-width rule at the new width
        screen.wait_for(lambda t: any(85 <= line.count("─") <= 90 for line in t.splitlines()), 30, "a 90-column rule")
    screen.pump(1.0)
    assert screen.child.isalive()
    quit_tui(tui, screen)
    if tui.name == "codex":
        assert app_servers(tui.work.parent) == []  # nothing it started outlives agentlaunch
    sessions = json.loads(run_cli_inprocess("sessions", "--json", env=tui.env, cwd=tui.work).stdout)
    assert sessions, f"{tui.name}'s interface run left no session: its native source did not learn the session id"

    # The resume, in a shell that saves the terminal's settings before and after agentlaunch.
    sent_before = len(tui.calls())
    stty0, stty1 = tui.work.parent / "stty.before", tui.work.parent / "stty.after"
    script = f'stty -g > {stty0}; {shlex.join(tui.argv("-c"))}; echo "agentlaunch exit $?"; stty -g > {stty1}; echo done-stty'
    child = pexpect.spawn(
        "bash", ["--noprofile", "--norc", "-c", script], env=tui.env, cwd=str(tui.work), dimensions=(40, 120), timeout=120
    )
    screen = Screen(child)
    # Any case: Codex's replayed history pushes its header (gpt-5.5) off the screen; its footer says GPT-5.5.
    screen.wait_for(lambda t: tui.ready.lower() in t.lower(), 60, "the resumed interface")
    screen.type_when_taken("after resume")  # its prompt can show before its input box takes keys
    screen.submit(lambda: len(tui.calls()) > sent_before)
    screen.until(lambda: len(tui.calls()) > sent_before, 60, "the resumed session's call")
    # After the prompt's first place on screen (the footer may name the thread after it, below the answer).
    screen.wait_for(lambda t: "answer." in t.split("after resume", 1)[-1], 60, "the resumed answer")
    later = tui.calls()[sent_before:]
    # The conversation's call, not the one Codex may make to name the thread (its interface on agentlaunch's
    # app-server names a resumed thread after its first typed prompt; that call can come last).
    convo = [c for c in later if (said := tui.user_texts(c.body)) and said[-1].strip() == "after resume"]
    assert convo, [tui.user_texts(c.body)[-1:] for c in later]
    texts = tui.user_texts(convo[-1].body)
    assert sum("STARTUP-MARKER-8812" in t for t in texts) == 1  # the first turn's, from history: never sent again
    assert any("Second answer." in json.dumps(r.body) for r in later)

    # SIGTERM to agentlaunch: exit 143, the terminal's settings as they were, nothing it started left.
    kids = Path(f"/proc/{child.pid}/task/{child.pid}/children")
    agentlaunch = int(wait_for(lambda: kids.read_text().split(), 30, "agentlaunch under the shell")[0])
    os.kill(agentlaunch, signal.SIGTERM)
    screen.until(lambda: not child.isalive(), 60, "the shell to finish after agentlaunch")
    screen.pump()
    assert "agentlaunch exit 143" in screen.text() and "done-stty" in screen.text()
    assert stty0.read_text() == stty1.read_text()
    if tui.name == "codex":
        assert app_servers(tui.work.parent) == []
