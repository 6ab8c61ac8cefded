"""The native mode's relay, driven through a real terminal (pexpect) with a small fake interface.

The agent is a claude agent whose ``command`` is ``tests/support/fake_tui.py``:
it says what it receives (each read of keys as hex, ``stty size`` on
SIGWINCH, its argv), so every assertion is on what reached the CLI. Every wait
is an ``expect`` on output, never a sleep.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import signal
import sys
from pathlib import Path

import pexpect
import pytest

from testbed.agent_files import write_agent
from tests.support.cli_runs import run_cli_inprocess
from tests.support.waits import wait_for

FAKE_TUI = Path(__file__).parent / "support" / "fake_tui.py"
TIMEOUT = 30
ROWS, COLS = 30, 100
LINE_PROMPT = "› ".encode()
READY = r"TUI READY (\d+) (\d+) ARGS (\[.*\])\r\n"


@pytest.fixture
def tui_agent(agents_dir: Path, workdir: Path) -> str:
    write_agent(
        agents_dir,
        "tui",
        {
            "display": "Fake TUI",
            "provider": "claude",
            "command": str(FAKE_TUI),
            "working_dir": str(workdir),
            "startup": "Startup for the fake interface.",
        },
    )
    return "tui"


def env_with(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TERM", "xterm-256color")
    env["AGENTLAUNCH_TITLE"] = "0"
    env.update(extra)
    return env


def spawn(agents_dir: Path, *args: str, env: dict[str, str] | None = None, rows: int = ROWS, cols: int = COLS) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        ["-m", "agentlaunch", "run", "tui", "--agents-dir", str(agents_dir), *args],
        env=env or env_with(),
        dimensions=(rows, cols),
        timeout=TIMEOUT,
    )


def ready(child: pexpect.spawn) -> list[str]:
    child.expect(READY)
    return list(json.loads(child.match.group(3)))


def send_and_see(child: pexpect.spawn, data: bytes) -> None:
    """``data`` reaches the fake interface exactly (it may arrive in several reads)."""
    seen = ""
    want = data.hex()
    while len(seen) < len(want):
        child.expect(rb"KEY ([0-9a-f]+)\r\n")
        seen += child.match.group(1).decode()
        if not want.startswith(seen):
            raise AssertionError(f"the interface got {seen}, expected {want}")
    assert seen == want


def test_one_interface_run_keys_resize_flood_and_daemon_then_resume_sends_no_startup_message(
    agents_dir: Path, tui_agent: str, tmp_path: Path
) -> None:
    """One run of the fake interface read for each fact in turn (it was five runs, one per test), then its resume."""
    pidfile = tmp_path / "daemon.pid"
    child = spawn(agents_dir, env=env_with(FAKE_TUI_DAEMON_PIDFILE=str(pidfile)))
    # It starts at the terminal's size, with the startup message first.
    argv = ready(child)
    assert (int(child.match.group(1)), int(child.match.group(2))) == (ROWS, COLS)
    assert argv[-1].startswith("<agentlaunch-startup>") and "Startup for the fake interface." in argv[-1]
    assert "--session-id" in argv and "-p" not in argv and "--input-format" not in argv
    assert "--exclude-dynamic-system-prompt-sections" in argv
    assert "--append-system-prompt-file" in argv  # the same delivery as headless
    session = argv[argv.index("--session-id") + 1]
    # Keys reach the interface untouched.
    for keys in (
        b"\x1b",  # Esc
        b"\x03",  # Ctrl-C: a byte in raw mode, never a signal to agentlaunch
        b"\x1b[Z",  # Shift-Tab
        b"\x1b[A",  # Up
        b"\x1b[200~two\rlines\x1b[201~",  # a bracketed paste
        b"\x1b[<0;10;5M",  # a mouse click (SGR)
        "é✓".encode(),
        b"\x1a",  # Ctrl-Z goes to the CLI too
    ):
        child.send(keys)
        send_and_see(child, keys)
    assert child.isalive()  # Ctrl-C and Ctrl-Z did not end agentlaunch
    # A resize reaches the interface.
    child.setwinsize(41, 133)
    child.expect(r"SIZE 41 133\r\n")
    child.setwinsize(24, 80)
    child.expect(r"SIZE 24 80\r\n")
    # A flood of output is relayed whole.
    child.send(b"b")
    child.expect(b"FLOOD DONE", timeout=60)
    assert child.isalive()
    # A daemon the CLI starts does not outlive agentlaunch.
    child.send(b"d")
    child.expect(b"DAEMON STARTED")
    daemon = int(wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), timeout=TIMEOUT, what="the daemon's pid"))
    assert Path(f"/proc/{daemon}").exists()
    child.send(b"q")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert wait_for(lambda: not Path(f"/proc/{daemon}").exists() or _zombie(daemon), timeout=TIMEOUT, what="the daemon to end")

    # The resume sends no startup message and names the session (-c: the last one; -r: the one named).
    child = spawn(agents_dir, "-c")
    argv = ready(child)
    assert argv[argv.index("--resume") + 1] == session
    assert not any("Startup for the fake interface" in a for a in argv)
    child.send(b"q")
    child.expect(pexpect.EOF)
    child = spawn(agents_dir, "-r", session)
    argv = ready(child)
    assert argv[argv.index("--resume") + 1] == session and "--session-id" not in argv
    child.send(b"q")
    child.expect(pexpect.EOF)


def stty_wrapped(
    agents_dir: Path, tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[pexpect.spawn, Path, Path]:
    """agentlaunch inside a shell that records ``stty -g`` before and after it, and its pid."""
    cmd = shlex.join([sys.executable, "-m", "agentlaunch", "run", "tui", "--agents-dir", str(agents_dir), *args])
    before, after = tmp_path / "stty.before", tmp_path / "stty.after"
    script = f'stty -g > {before}; {cmd}; echo "agentlaunch exit $?"; stty -g > {after}; echo done-stty'
    child = pexpect.spawn(
        "bash", ["--noprofile", "--norc", "-c", script], env=env or env_with(), dimensions=(ROWS, COLS), timeout=TIMEOUT
    )
    return child, before, after


def agentlaunch_pid(shell: pexpect.spawn) -> int:
    """agentlaunch's pid: the shell's one child (the fake interface is agentlaunch's)."""
    kids = Path(f"/proc/{shell.pid}/task/{shell.pid}/children")
    found: str = wait_for(lambda: kids.read_text().strip(), timeout=TIMEOUT, what="agentlaunch under the shell")
    return int(found.split()[0])


def test_terminal_restored_after_sigterm_to_agentlaunch(agents_dir: Path, tui_agent: str, tmp_path: Path) -> None:
    child, before, after = stty_wrapped(agents_dir, tmp_path, "--working-dir", str(tmp_path))
    ready(child)
    pid = agentlaunch_pid(child)
    child.send(b"m")
    child.expect(b"MODES ON")
    os.kill(pid, signal.SIGTERM)
    child.expect(rb"agentlaunch exit (\d+)")
    assert int(child.match.group(1)) == 143
    tail = child.before
    child.expect("done-stty")
    assert before.read_text() == after.read_text()
    # What the interface switched on is switched off again: normal screen, no mouse, no paste mode, a cursor.
    for off in (b"\x1b[?1000l", b"\x1b[?1006l", b"\x1b[?2004l", b"\x1b[?1049l", b"\x1b[?25h"):
        assert off in tail


def test_terminal_restored_after_sighup(agents_dir: Path, tui_agent: str, tmp_path: Path) -> None:
    child, before, after = stty_wrapped(agents_dir, tmp_path)
    ready(child)
    pid = agentlaunch_pid(child)
    os.kill(pid, signal.SIGHUP)
    child.expect(rb"agentlaunch exit (\d+)")
    assert int(child.match.group(1)) == 129
    child.expect("done-stty")
    assert before.read_text() == after.read_text()


def test_terminal_restored_when_the_cli_is_killed(agents_dir: Path, tui_agent: str, tmp_path: Path) -> None:
    child, before, after = stty_wrapped(agents_dir, tmp_path)
    ready(child)
    child.send(b"m")
    child.expect(b"MODES ON")
    child.send(b"k")  # the fake interface SIGKILLs itself: nothing of its own restores the terminal
    child.expect(rb"agentlaunch exit (\d+)")
    assert int(child.match.group(1)) == 1
    assert b"killed by signal 9" in child.before
    assert b"\x1b[?1049l" in child.before and b"\x1b[?25h" in child.before  # the normal screen, a cursor
    child.expect("done-stty")
    assert before.read_text() == after.read_text()


def test_the_cli_exiting_with_an_error_shows_its_last_words(agents_dir: Path, tui_agent: str, tmp_path: Path) -> None:
    child, before, after = stty_wrapped(agents_dir, tmp_path)
    ready(child)
    child.send(b"e")
    child.expect(rb"agentlaunch exit (\d+)")
    assert int(child.match.group(1)) == 1
    text = child.before.decode("utf-8", "replace")
    assert "exited with code 3" in text
    assert "its last words:" in text and "something went wrong, giving up" in text
    assert "agentlaunch run tui -r " in text  # how to resume it
    child.expect("done-stty")
    assert before.read_text() == after.read_text()


def test_a_cli_that_fails_at_once(agents_dir: Path, tui_agent: str, tmp_path: Path) -> None:
    child, before, after = stty_wrapped(agents_dir, tmp_path, env=env_with(FAKE_TUI_FAIL_AT_ONCE="1"))
    child.expect(rb"agentlaunch exit (\d+)")
    assert int(child.match.group(1)) == 1
    assert b"refuses to start (as told)" in child.before
    child.expect("done-stty")
    assert before.read_text() == after.read_text()


def test_a_missing_cli_exits_127_with_the_install_hint(agents_dir: Path, workdir: Path) -> None:
    write_agent(agents_dir, "tui", {"provider": "claude", "command": "no-such-claude-cli", "working_dir": str(workdir)})
    child = spawn(agents_dir)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 127
    text = child.before.decode()
    assert "not found" in text and "npm" in text


def test_a_terminal_too_small_is_refused_clearly(agents_dir: Path, tui_agent: str) -> None:
    child = spawn(agents_dir, rows=4, cols=15)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 2
    text = re.sub(r"\s+", " ", child.before.decode())
    assert "15x4" in text and "--line" in text


def test_dumb_terminal_and_line_flag_get_the_line_chat(agents_dir: Path, tui_agent: str) -> None:
    child = spawn(agents_dir, env=env_with(TERM="dumb"))
    child.expect("TERM is dumb")
    child.expect("line chat")
    child.expect(LINE_PROMPT)  # the line chat's prompt, not the fake interface
    child.sendeof()
    child.expect(pexpect.EOF)
    child = spawn(agents_dir, "--line")
    child.expect(LINE_PROMPT)
    assert b"TUI READY" not in child.before
    child.sendeof()
    child.expect(pexpect.EOF)
    unset = env_with()
    del unset["TERM"]
    child = spawn(agents_dir, env=unset)
    child.expect("TERM is not set")
    child.expect(LINE_PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)


def test_the_fake_provider_gets_the_line_chat_with_a_notice(agents_dir: Path) -> None:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agentlaunch", "run", "demo", "--agents-dir", str(agents_dir)],
        env=env_with(),
        dimensions=(ROWS, COLS),
        timeout=TIMEOUT,
    )
    child.expect("no interface of its own")
    child.expect(LINE_PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_stdin_not_a_terminal_keeps_the_headless_rules(agents_dir: Path, tui_agent: str) -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "agentlaunch", "run", "tui", "--agents-dir", str(agents_dir)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=env_with(),
        timeout=TIMEOUT,
    )
    assert done.returncode == 2
    assert b"the chat needs a terminal" in done.stderr


def test_switching_between_headless_line_chat_and_interface_is_no_prefix_change(agents_dir: Path, tui_agent: str) -> None:
    """The "prefix changed" notice compares like with like: headless and the line chat send one prefix, the
    CLI's own interface its own (its tools differ); switching modes alone never reports a change."""
    import subprocess

    def headless(agent: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "agentlaunch", "run", agent, "hi", "--agents-dir", str(agents_dir)],
            capture_output=True,
            env=env_with(),
            timeout=TIMEOUT,
        )
        return done.stderr.decode("utf-8", "replace")

    def chat(agent: str, *args: str) -> str:
        child = pexpect.spawn(
            sys.executable,
            ["-m", "agentlaunch", "run", agent, "--agents-dir", str(agents_dir), *args],
            env=env_with(),
            dimensions=(ROWS, COLS),
            timeout=TIMEOUT,
        )
        if agent == "tui":
            ready(child)
            child.send(b"q")
        else:
            child.expect(LINE_PROMPT)
            child.sendeof()
        child.expect(pexpect.EOF)
        return child.before.decode("utf-8", "replace")

    seen = [headless("demo"), chat("demo", "--line"), headless("demo"), chat("demo"), headless("demo")]
    seen += [chat("tui"), headless("tui"), chat("tui"), headless("tui")]
    assert not [text for text in seen if "prefix changed" in text]


def test_the_clis_osc_7501_probe_is_answered_its_reports_read_and_passed_on_only_to_a_terminal_that_answered(
    agents_dir: Path, tui_agent: str
) -> None:
    msg = base64.b64encode(b"Not signed in").decode()
    env = env_with(FAKE_TUI_PROBE="1", FAKE_TUI_REPORT=f"state=blocked:app=fake:kind=auth:msg={msg}")
    child = spawn(agents_dir, env=env)
    ready(child)
    assert child.before.count(b"\x1b]7501;") == 1  # agentlaunch's own probe of this terminal; the CLI's is taken out
    child.expect(rb"KEY ([0-9a-f]+)\r\n")  # the CLI got its answer from agentlaunch
    assert bytes.fromhex(child.match.group(1).decode()) == b"\x1b]7501;?\x1b\\"
    child.send(b"r")
    child.expect_exact(b"REPORTED")
    assert b"7501" not in child.before  # this terminal did not answer: no report reaches it
    record = wait_for(lambda: (r := tui_record(env)).get("state") == "asking" and r, TIMEOUT, "asking")
    assert record["state_reason"] == "login: Not signed in" and record["state_source"] == "cli", record
    assert record["cli_report"]["kind"] == "auth"
    child.send(b"\x1b]7501;?\x1b\\")  # the terminal answers agentlaunch's probe: taken out of the keys
    child.send(b"x")
    send_and_see(child, b"x")
    child.send(b"r")
    child.expect_exact(f"\x1b]7501;state=blocked:app=agentlaunch:kind=auth:msg={msg}\x07".encode())
    child.send(b"q")
    child.expect(pexpect.EOF)


def tui_record(env: dict[str, str]) -> dict[str, object]:
    done = run_cli_inprocess("status", "--json", env=env)
    records = [r for r in json.loads(done.stdout or "[]") if r.get("agent") == "tui"]
    return dict(records[-1]) if records else {}
