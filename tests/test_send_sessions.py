"""`agentlaunch send` into running sessions: the line chat (fake provider) and a native interface (the fake TUI).

Each session runs at a real terminal (pexpect); `send` runs beside it, as a script or another tmux pane
would: through click in the test's process (:func:`run_cli_inprocess`, no Python start per send), as a real
process where its process is the point (a prompt on its stdin's pipe; Ctrl-C ending a waiting send).
The fake TUI (tests/support/fake_tui.py) runs the Claude Code hooks agentlaunch configures, so the native
session's states are the ones its sources report; what it receives is printed as hex, so every assertion on
typing is on the bytes that reached the CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pexpect
import pytest

from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.waits import wait_for
from tests.test_native_relay import FAKE_TUI, READY, env_with, send_and_see, spawn

TIMEOUT = 60


def record_of(agent: str) -> dict[str, Any] | None:
    records = json.loads(run_cli_inprocess("status", "--json").stdout)
    return next((r for r in records if r.get("agent") == agent), None)


def ready_for_sends(agent: str, state: str = "waiting", turns: int = 0) -> dict[str, Any]:
    """The agent's record once it is in ``state`` with its socket named (and ``turns`` turns done)."""

    def check() -> dict[str, Any] | None:
        record = record_of(agent)
        ok = record and record.get("control") and record.get("state") == state and record.get("turns", 0) >= turns
        return record if ok else None

    return wait_for(check, timeout=TIMEOUT, what=f"{agent} {state} with its socket")  # type: ignore[no-any-return]


def send(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "agentlaunch", "send", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


# -- the line chat -------------------------------------------------------------------------------


@pytest.fixture
def chat(agents_dir: Path) -> pexpect.spawn:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agentlaunch", "run", "demo", "--agents-dir", str(agents_dir)],
        env=env_with(),
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(40, 200),
    )
    child.expect("› ")
    yield child
    if child.isalive():
        child.sendcontrol("d")
        child.expect(pexpect.EOF)


def test_send_wait_runs_a_turn_of_the_line_chat_and_prints_its_answer(agents_dir: Path, chat: pexpect.spawn) -> None:
    ready_for_sends("demo")
    result = run_cli_inprocess("send", "demo", "what is two plus two?", "--wait")
    assert result.returncode == 0, result.stderr
    answer = result.stdout.decode()
    assert answer.startswith("Fake provider here, turn 1.") and 'You said: "what is two plus two?"' in answer
    assert answer.endswith("\n") and answer.count("Fake provider here") == 1
    assert b"tokens in" in result.stderr
    chat.expect("what is two plus two\\? .*from agentlaunch send")  # the person sees what was sent, and its answer
    chat.expect('You said: "what is two plus two\\?"')
    chat.expect("› ")
    chat.sendline("and this one is typed")  # the chat goes on as before
    chat.expect('You said: "and this one is typed"')
    chat.expect("› ")
    json_result = run_cli("send", "demo", "-", "--wait", "--json", input=b"from stdin\nsecond line")
    value = json.loads(json_result.stdout)
    assert value["exit_code"] == 0 and 'You said: "from stdin\nsecond line"' in value["answer"]
    assert value["usage"]["output"] > 0
    chat.expect("› ")
    chat.sendcontrol("d")
    chat.expect(pexpect.EOF)
    (row,) = json.loads(run_cli_inprocess("sessions", "--json").stdout)
    assert row["turns"] == 3


def test_a_chat_in_a_turn_refuses_a_prompt_and_ctrl_c_ends_a_waiting_send_with_130(chat: pexpect.spawn) -> None:
    ready_for_sends("demo")
    slow = send("demo", "/slow please take a long while to say all of these words one by one", "--wait")
    wait_for(lambda: (record_of("demo") or {}).get("state") == "thinking", timeout=TIMEOUT, what="the slow turn")
    busy = run_cli_inprocess("send", "demo", "me too")
    assert busy.returncode == 7 and b"demo is in a turn" in busy.stderr, busy.stderr
    chat.sendintr()  # the person interrupts the sent turn in their chat
    out, err = slow.communicate(timeout=TIMEOUT)
    assert slow.returncode == 130, err
    assert b"interrupted" in err


def test_the_line_chat_refuses_a_slash_command_with_exit_2_and_runs_no_turn(chat: pexpect.spawn) -> None:
    ready_for_sends("demo")
    refused = run_cli_inprocess("send", "demo", "/tool", "--command", "--wait")
    assert refused.returncode == 2 and b"fake runs no slash command in the line chat" in refused.stderr, refused.stderr
    assert (record_of("demo") or {}).get("turns") == 0  # nothing ran
    taken = run_cli_inprocess("send", "demo", "after it", "--wait")  # the door is open
    assert taken.returncode == 0 and b'You said: "after it"' in taken.stdout, taken.stderr
    chat.sendcontrol("d")
    chat.expect(pexpect.EOF)


# -- a native interface ------------------------------------------------------------------------------


@pytest.fixture
def hooked_tui(agents_dir: Path, workdir: Path) -> str:
    from testbed.agent_files import write_agent

    write_agent(agents_dir, "tui", {"provider": "claude", "command": str(FAKE_TUI), "working_dir": str(workdir)})
    return "tui"


def start_tui(agents_dir: Path, **env: str) -> pexpect.spawn:
    child = spawn(agents_dir, env=env_with(FAKE_TUI_HOOKS="1", **env))
    child.expect(READY)
    return child


def test_a_sent_prompt_is_pasted_then_entered_and_wait_returns_at_the_turns_end(agents_dir: Path, hooked_tui: str) -> None:
    child = start_tui(agents_dir, FAKE_TUI_MODES="1")  # bracketed paste on, as every real interface has it
    ready_for_sends("tui", turns=1)  # after the startup message's turn
    proc = send("tui", "two\nlines", "--wait", "--json")
    send_and_see(child, b"\x1b[200~two\nlines\x1b[201~")
    send_and_see(child, b"\r")  # Enter, on its own, after the paste
    child.expect("TURN DONE")
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err
    value = json.loads(out)
    assert value["exit_code"] == 0 and value["session_id"] == record_of("tui")["session_id"]  # type: ignore[index]
    # The interface's UserPromptSubmit named the prompt: the session's title (the startup message's is not one).
    (row,) = json.loads(run_cli_inprocess("sessions", "--json").stdout)
    assert row["session_id"] == value["session_id"] and row["title"] == "two lines"
    child.send(b"a")  # a permission prompt: asking
    child.expect("ASKED")
    ready_for_sends("tui", "asking")
    refused = run_cli_inprocess("send", "tui", "anyone there?")
    assert refused.returncode == 7 and b"tui is asking" in refused.stderr
    child.send(b"q")
    child.expect(pexpect.EOF)


@pytest.mark.parametrize(
    "late",
    [{"FAKE_TUI_READ_LATE": "1"}, {"FAKE_TUI_READ_LATE": "1.5", "FAKE_TUI_SPIN": "1"}],
    ids=["reads-late", "draws-while-it-reads-late"],
)
def test_the_enter_of_a_sent_prompt_waits_until_an_interface_that_reads_late_has_read_the_paste(
    agents_dir: Path, hooked_tui: str, late: dict[str, str]
) -> None:
    """A CLI busy elsewhere reads its keys late: sent a fixed time after the paste, the Enter would reach it in the same
    read, and Gemini 0.61 takes such an Enter as part of the paste (the text stays in its input box). Output after the
    paste is not its echo: one that draws a spinner meanwhile would get the Enter in the paste's read too (the Gemini
    send that began no turn under load)."""
    child = start_tui(agents_dir, FAKE_TUI_MODES="1", **late)
    ready_for_sends("tui", turns=1)
    proc = send("tui", "one line", "--wait")
    send_and_see(child, b"\x1b[200~one line\x1b[201~")  # one read: the paste alone, although it was read late
    send_and_see(child, b"\r")
    child.expect("TURN DONE")
    _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err
    child.send(b"q")
    child.expect(pexpect.EOF)


def test_without_bracketed_paste_one_line_is_typed_and_many_lines_are_refused(agents_dir: Path, hooked_tui: str) -> None:
    child = start_tui(agents_dir)
    ready_for_sends("tui", turns=1)
    many = run_cli_inprocess("send", "tui", "two\nlines")
    assert many.returncode == 7 and b"does not take pasted text now; send a prompt of one line" in many.stderr
    one = run_cli_inprocess("send", "tui", "just one line")
    assert one.returncode == 0, one.stderr
    send_and_see(child, b"just one line")
    send_and_see(child, b"\r")
    child.send(b"q")
    child.expect(pexpect.EOF)


def test_an_interface_that_exits_mid_turn_ends_a_waiting_send_with_exit_1(agents_dir: Path, hooked_tui: str) -> None:
    child = start_tui(agents_dir, FAKE_TUI_MODES="1")
    ready_for_sends("tui", turns=1)
    proc = send("tui", "hang for ever", "--wait")
    send_and_see(child, b"\x1b[200~hang for ever\x1b[201~")
    send_and_see(child, b"\r")
    ready_for_sends("tui", "thinking")
    child.send(b"e")  # the interface fails mid-turn (exit 3)
    child.expect(pexpect.EOF)
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 1 and out == b""
    assert b"exited (code 3) before the turn ended" in err
    assert record_of("tui") is None and run_cli_inprocess("send", "tui", "hi").returncode == 7


def test_a_prompt_sent_before_the_startup_messages_turn_waits_for_it(agents_dir: Path, hooked_tui: str) -> None:
    child = start_tui(agents_dir, FAKE_TUI_MODES="1", FAKE_TUI_STARTUP_DELAY="2")
    wait_for(lambda: (record_of("tui") or {}).get("control"), timeout=TIMEOUT, what="the socket named")
    proc = send("tui", "early bird", "--wait")  # the record says "waiting" already: the startup turn has not begun
    child.expect("STARTUP TURN DONE")
    send_and_see(child, b"\x1b[200~early bird\x1b[201~")
    send_and_see(child, b"\r")
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err
    assert b"tui is still starting; waiting for it (at most 60s)" in err
    child.send(b"q")
    child.expect(pexpect.EOF)
