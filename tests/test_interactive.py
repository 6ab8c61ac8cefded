"""The chat (`agentlaunch run demo` without a prompt) driven through a real terminal with pexpect.

Every wait is an ``expect`` on output, never a sleep. The fake provider runs
as agentlaunch's child; fault tests find its pid through /proc.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
import yaml

from agentlaunch.launch.transport import Child
from tests.support.waits import wait_for

TIMEOUT = 30
PROMPT = "› "
ROWS, COLS = 40, 120
COUNTERS = r"context [\d,]+/60,000 \([\d.]+%\)"


def spawn(agents_dir: Path, *extra: str) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        ["-m", "agentlaunch", "run", "demo", "--agents-dir", str(agents_dir), *extra],
        env=dict(os.environ),
        cwd=str(agents_dir.parent),
        dimensions=(ROWS, COLS),
        encoding="utf-8",
        timeout=TIMEOUT,
    )


def spawn_in_bash(agents_dir: Path, tmp_path: Path) -> pexpect.spawn:
    """agentlaunch inside a shell that records `stty -g` before and after it."""
    cmd = shlex.join([sys.executable, "-m", "agentlaunch", "run", "demo", "--agents-dir", str(agents_dir)])
    before, after = tmp_path / "stty.before", tmp_path / "stty.after"
    script = f'stty -g > {before}; {cmd}; echo "agentlaunch exit $?"; stty -g > {after}; echo done-stty'
    return pexpect.spawn(
        "bash",
        ["--noprofile", "--norc", "-c", script],
        env=dict(os.environ),
        cwd=str(tmp_path),
        dimensions=(ROWS, COLS),
        encoding="utf-8",
        timeout=TIMEOUT,
    )


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def only_child(pid: int) -> int:
    """The single child process of ``pid``, waiting (briefly) for it to appear."""
    kids: list[int] = wait_for(lambda: len(k := children(pid)) == 1 and k, timeout=TIMEOUT, what=f"one child of pid {pid}")
    return kids[0]


def gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (a zombie counts as gone: it runs nothing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state == "Z"


def wait_gone(pid: int, within: float = TIMEOUT) -> bool:
    return bool(wait_for(lambda: gone(pid), timeout=within, what=f"pid {pid} to end"))


def finish(child: pexpect.spawn) -> int | None:
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus


@pytest.fixture
def chats() -> Iterator[list[pexpect.spawn]]:
    """Spawned terminals; any still alive at the end are ended (they are ours)."""
    spawned: list[pexpect.spawn] = []
    yield spawned
    for child in spawned:
        if child.isalive():
            child.terminate(force=True)


def chat(chats: list[pexpect.spawn], agents_dir: Path, *extra: str) -> pexpect.spawn:
    child = spawn(agents_dir, *extra)
    chats.append(child)
    child.expect("new session")
    child.expect(PROMPT)
    return child


def say(child: pexpect.spawn, text: str) -> None:
    child.sendline(text)


# -- the chat -------------------------------------------------------------


def test_a_message_gets_a_streamed_answer_and_the_counters_line(chats: list[pexpect.spawn], agents_dir: Path) -> None:
    child = chat(chats, agents_dir)
    say(child, "hello there")
    child.expect("Fake provider here, turn 1.")
    child.expect("Startup message received")
    child.expect('You said: "hello there"')
    child.expect(COUNTERS)
    child.expect("to compaction")
    child.expect(PROMPT)
    say(child, "second")
    child.expect("turn 2.")
    child.expect(COUNTERS)
    child.expect(PROMPT)
    child.sendeof()
    assert finish(child) == 0


def test_always_allow_answers_the_permission_prompt_once_for_the_session(chats: list[pexpect.spawn], agents_dir: Path) -> None:
    child = chat(chats, agents_dir)
    say(child, "/tool")
    child.expect("Allow Write notes.txt")
    child.expect(r"\[n\] deny: ")
    child.sendline("a")
    child.expect("The tool was allowed.")
    child.expect(COUNTERS)
    child.expect(PROMPT)
    say(child, "/tool")
    # No question this time: the answer arrives straight away.
    index = child.expect(["Allow Write", "The tool was allowed."])
    assert index == 1, "asked again after 'always'"
    child.expect(PROMPT)
    child.sendeof()
    assert finish(child) == 0


def test_n_denies_the_tool(chats: list[pexpect.spawn], agents_dir: Path) -> None:
    child = chat(chats, agents_dir)
    say(child, "/tool")
    child.expect(r"\[n\] deny: ")
    child.sendline("n")
    child.expect("The tool was denied.")
    child.expect(PROMPT)
    # Denied once is not denied for ever: the next use asks again.
    say(child, "/tool")
    child.expect(r"\[n\] deny: ")
    child.sendline("y")
    child.expect("The tool was allowed.")
    child.expect(PROMPT)
    child.sendeof()
    assert finish(child) == 0


def test_ctrl_c_interrupts_a_slow_turn_and_the_session_goes_on(chats: list[pexpect.spawn], agents_dir: Path) -> None:
    child = chat(chats, agents_dir)
    say(child, "/slow " + "word " * 60)
    child.expect("Fake provider here")
    child.sendintr()
    child.expect("interrupting the turn")
    child.expect(COUNTERS)
    child.expect("turn interrupted; the session goes on")
    child.expect(PROMPT)
    say(child, "still there?")
    child.expect("turn 2.")
    child.expect('You said: "still there\\?"')
    child.expect(PROMPT)
    child.sendeof()
    assert finish(child) == 0


def test_ctrl_d_ends_with_exit_0_and_the_terminal_is_restored(
    chats: list[pexpect.spawn], agents_dir: Path, tmp_path: Path
) -> None:
    child = spawn_in_bash(agents_dir, tmp_path)
    chats.append(child)
    child.expect(PROMPT)
    say(child, "/tool")
    child.expect(r"\[n\] deny: ")
    child.sendline("y")
    child.expect(PROMPT)
    child.sendeof()
    child.expect("agentlaunch exit 0")
    child.expect("done-stty")
    assert finish(child) == 0
    assert (tmp_path / "stty.after").read_text() == (tmp_path / "stty.before").read_text()


# -- window size ----------------------------------------------------------

SIZE_REPORTER = """\
import os, signal, sys, time
def report(signum, frame):
    cols, rows = os.get_terminal_size(1)
    sys.stdout.write(f"size {cols}x{rows}\\n")
    sys.stdout.flush()
signal.signal(signal.SIGWINCH, report)
sys.stdout.write("ready\\n")
sys.stdout.flush()
sys.stdin.read()  # until agentlaunch closes stdin
"""


def test_child_resize_sends_sigwinch_with_the_new_size(tmp_path: Path) -> None:
    script = tmp_path / "report_size.py"
    script.write_text(SIZE_REPORTER)
    child = Child([sys.executable, str(script)], dict(os.environ), tmp_path, size=(80, 24))
    try:
        assert child.next_line(timeout=TIMEOUT) == "ready"
        child.resize(100, 40)
        assert child.next_line(timeout=TIMEOUT) == "size 100x40"
        child.resize(33, 11)
        assert child.next_line(timeout=TIMEOUT) == "size 33x11"
    finally:
        assert child.stop() == 0
        child.close()


FAKE_WITH_SIZE = """\
#!{python}
import json, os, signal, sys
def report(signum, frame):
    cols, rows = os.get_terminal_size(1)
    line = {{"type": "system", "subtype": "permission_denied", "message": f"terminal size {{cols}}x{{rows}}"}}
    sys.stdout.write(json.dumps(line) + "\\n")
    sys.stdout.flush()
signal.signal(signal.SIGWINCH, report)
sys.path.insert(0, {repo!r})
from agentlaunch.providers.fake_cli import main
sys.exit(main())
"""


def test_resizing_the_terminal_reaches_the_provider_cli(chats: list[pexpect.spawn], agents_dir: Path, tmp_path: Path) -> None:
    # The fake provider, wrapped so that it reports its terminal size on SIGWINCH as a
    # warning event; agentlaunch shows it while handling the next turn.
    wrapper = tmp_path / "fake_with_size.py"
    wrapper.write_text(FAKE_WITH_SIZE.format(python=sys.executable, repo=str(Path(__file__).resolve().parent.parent)))
    os.chmod(wrapper, 0o755)
    config_path = agents_dir / "demo" / "agent.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["command"] = str(wrapper)
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    child = chat(chats, agents_dir)
    say(child, "hello")  # once answered, the wrapper's SIGWINCH handler is surely installed
    child.expect("turn 1.")
    child.expect(PROMPT)
    child.setwinsize(50, 130)
    say(child, "again")
    child.expect("terminal size 130x50")
    child.expect("turn 2.")
    child.expect(PROMPT)
    child.sendeof()
    assert finish(child) == 0


# -- faults ---------------------------------------------------------------


def test_provider_killed_mid_turn_is_reported_and_nothing_is_left_running(chats: list[pexpect.spawn], agents_dir: Path) -> None:
    child = chat(chats, agents_dir)
    say(child, "hello")
    child.expect(PROMPT)
    provider = only_child(child.pid)
    say(child, "/slow " + "word " * 60)
    child.expect("Fake provider here, turn 2")
    os.kill(provider, signal.SIGKILL)
    child.expect("the provider CLI exited")
    child.expect("Resume it with: agentlaunch run demo -r ")
    assert finish(child) == 1
    assert wait_gone(provider)
    assert children(child.pid) == []


def test_provider_killed_mid_turn_still_shows_the_counters_so_far(chats: list[pexpect.spawn], agents_dir: Path) -> None:
    child = chat(chats, agents_dir)
    say(child, "hello")
    child.expect(PROMPT)
    provider = only_child(child.pid)
    say(child, "/slow " + "word " * 60)
    child.expect("Fake provider here, turn 2")
    os.kill(provider, signal.SIGKILL)
    # The first turn's tokens and the second call's message_start usage are counted.
    child.expect(COUNTERS)
    child.expect("the provider CLI exited")
    assert finish(child) == 1


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_end_the_provider_and_restore_the_terminal(
    chats: list[pexpect.spawn], agents_dir: Path, tmp_path: Path, signum: int, code: int
) -> None:
    shell = spawn_in_bash(agents_dir, tmp_path)
    chats.append(shell)
    shell.expect(PROMPT)
    agentlaunch = only_child(shell.pid)
    provider = only_child(agentlaunch)
    say(shell, "/slow " + "word " * 60)
    shell.expect("Fake provider here")
    os.kill(agentlaunch, signum)
    shell.expect(f"agentlaunch exit {code}")
    shell.expect("done-stty")
    assert finish(shell) == 0
    assert wait_gone(provider)
    assert (tmp_path / "stty.after").read_text() == (tmp_path / "stty.before").read_text()


def test_a_provider_that_exits_at_once_is_reported(chats: list[pexpect.spawn], agents_dir: Path) -> None:
    config_path = agents_dir / "demo" / "agent.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["command"] = "/bin/true"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    # Reported at the prompt, without waiting for a first message (the chat watches its CLI).
    child = spawn(agents_dir)
    chats.append(child)
    child.expect("new session")
    child.expect("the provider CLI exited \\(code 0\\)")
    assert finish(child) == 1
