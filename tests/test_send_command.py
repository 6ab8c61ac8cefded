"""`agentlaunch send` as a subprocess: its refusals and exit codes, `--wait`, `--json` and `--timeout`, against status
records written here (each naming a live pid, this test process, or a dead one) and a control socket the test
serves in-process, playing the launch's part.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentlaunch.launch.control import ControlServer
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.control_socket import server, state_dir, take_one, write_record
from tests.support.waits import wait_for

__all__ = ["server"]  # the fixture, used by name


def test_a_refusal_of_the_text_itself_is_exit_2(server: ControlServer) -> None:
    write_record(state_dir(), "scribe", control=str(server.path))
    proc = send_in_background("scribe", "!touch x", "--wait")
    take_one(server).refuse("its interface runs it as a shell command", "waiting", bad_input=True)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and out == b""
    assert b"runs it as a shell command" in err and b"--command" in err


def test_a_session_that_never_answers_is_exit_7_and_the_request_is_dropped(
    server: ControlServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_record(state_dir(), "scribe", control=str(server.path))
    proc = send_in_background("scribe", "later?")
    wait_for(server.pending, timeout=30, what="the request queued")
    out, err = proc.communicate(timeout=60)  # nobody takes it: send gives up after FIRST_REPLY_WAIT, and cancels
    assert proc.returncode == 7 and b"nothing was typed" in err
    assert server.take() == []  # the session, free again, does not type it


def test_send_to_an_agent_that_is_not_running_is_exit_7(agents_dir: Path) -> None:
    result = run_cli("send", "demo", "hi", "--wait", "--agents-dir", str(agents_dir))
    assert result.returncode == 7
    assert b"error: demo is not running" in result.stderr and b"agentlaunch status" in result.stderr


@pytest.mark.parametrize("command", [["send", "adaa", "hi"], ["stop", "adaa"], ["restart", "adaa"], ["fork", "adaa"]])
def test_a_name_no_agent_has_gets_runs_message_from_every_command(agents_dir: Path, command: list[str]) -> None:
    # Before: `send adaa` (a typo) said "adaa is not running", `stop` "nothing to stop", `restart` "no pane".
    said = run_cli_inprocess("run", "adaa", "hi", "--agents-dir", str(agents_dir))
    assert said.returncode == 3
    words = f"{agents_dir.resolve()}/adaa/agent.yaml: agent 'adaa' not found (agents here: demo, planner, reviewer)"
    assert words in said.stderr.decode()
    result = run_cli_inprocess(*command, "--agents-dir", str(agents_dir))
    assert result.returncode == (2 if command[0] == "fork" else 3), result.stderr  # fork: a usage error, as documented
    assert words in result.stderr.decode() and "not running" not in result.stderr.decode()


def test_an_agent_with_no_definition_but_a_recorded_session_is_only_not_running(agents_dir: Path, workdir: Path) -> None:
    from agentlaunch import paths
    from agentlaunch.usage.store import Store

    with Store.open(paths.store_path()) as store:  # an agent whose definition was removed since it ran
        store.start_session("s-gone", agent="gone", provider="fake", working_dir=workdir)
    result = run_cli_inprocess("send", "gone", "hi", "--agents-dir", str(agents_dir))
    assert result.returncode == 7 and b"gone is not running" in result.stderr, result.stderr


def test_send_to_an_agent_that_died_is_exit_7_and_says_so() -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    write_record(state_dir(), "ghost", pid=int(dead.stdout), pid_start="0")
    result = run_cli("send", "ghost", "hi", "--wait")
    assert result.returncode == 7
    assert b"ghost is not running (its last session ended without closing" in result.stderr


def test_send_to_a_headless_turn_is_refused() -> None:
    write_record(state_dir(), "oneshot", state="thinking", control=None)
    result = run_cli("send", "oneshot", "hi")
    assert result.returncode == 7 and b"runs one headless turn (thinking)" in result.stderr


def test_send_to_a_session_whose_socket_is_gone_is_refused(tmp_path: Path) -> None:
    write_record(state_dir(), "mute", control=str(tmp_path / "nothing.sock"))
    result = run_cli("send", "mute", "hi")
    assert result.returncode == 7 and b"does not answer at" in result.stderr


def test_two_sessions_need_session_and_a_prefix_picks_one(server: ControlServer) -> None:
    write_record(state_dir(), "twin", session_id="aaaa1111", control=str(server.path))
    write_record(state_dir(), "twin", session_id="bbbb2222", control="/nowhere.sock")
    result = run_cli("send", "twin", "hi")
    assert result.returncode == 2
    assert b"twin runs 2 sessions" in result.stderr and b"aaaa1111" in result.stderr and b"--session" in result.stderr
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentlaunch", "send", "twin", "hi", "--session", "aaaa"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    take_one(server).accept("aaaa1111")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert b"sent to twin (session aaaa1111)" in err and out == b""


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["   "], b"the prompt is empty"),
        (["a\x1b[31mred"], b"control character"),
        (["hi", "--timeout", "5"], b"--timeout needs --wait"),
        (["hi", "--wait", "--timeout", "0"], b"--timeout must be a positive number"),
        (["hi", "--wait", "--timeout", "nan"], b"--timeout must be a positive number"),
        (["cost", "--command"], b"a command starts with /"),
        (["/", "--command"], b"a command starts with /"),
        (["/cost\nmore", "--command"], b"a command is one line"),
    ],
)
def test_a_bad_command_line_is_exit_2(args: list[str], said: bytes) -> None:
    result = run_cli("send", "anyone", *args)
    assert result.returncode == 2 and said in result.stderr, result.stderr


def test_a_prompt_on_stdin_that_is_not_utf8_is_exit_2() -> None:
    result = run_cli("send", "anyone", "-", input=b"\xff\xfe")
    assert result.returncode == 2 and b"not valid UTF-8" in result.stderr


def send_in_background(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "agentlaunch", "send", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_wait_prints_the_answer_and_a_footer_and_exits_with_the_turns_code(server: ControlServer) -> None:
    write_record(state_dir(), "scribe", control=str(server.path))
    proc = send_in_background("scribe", "write", "--wait")
    request = take_one(server)
    request.accept("abc123")
    request.answer(
        exit_code=0,
        answer="line one\nline \x1b[31mtwo",
        usage={"input": 5, "cache_write": 0, "cache_read": 900, "output": 7},
        cost_usd=0.0123,
    )
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out == b"line one\nline \\x1b[31mtwo\n"  # the answer's escapes made visible, as headless
    assert b"tokens in 5 \xc2\xb7 out 7 \xc2\xb7 cache r 900/w 0 \xc2\xb7 $0.0123" in err


def test_wait_json_keeps_the_answer_exactly_and_a_failed_turn_keeps_its_code(server: ControlServer) -> None:
    write_record(state_dir(), "scribe", control=str(server.path))
    proc = send_in_background("scribe", "write", "--wait", "--json")
    request = take_one(server)
    request.accept("abc123")
    request.answer(exit_code=6, answer="partial \x1b", error="the session's budget of $0.01 is spent")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 6
    value = json.loads(out)
    assert value["answer"] == "partial \x1b" and value["exit_code"] == 6 and value["session_id"] == "abc123"
    assert value["error"] == "the session's budget of $0.01 is spent"


def test_a_refusal_is_exit_7_with_the_sessions_reason(server: ControlServer) -> None:
    write_record(state_dir(), "scribe", control=str(server.path))
    proc = send_in_background("scribe", "write", "--wait")
    take_one(server).refuse("scribe is asking: a permission or a question waits for a person; answer it first", "asking")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 7 and out == b""
    assert b"scribe is asking" in err and b"hint: agentlaunch answer AGENT shows the question" in err


def test_timeout_is_exit_124_and_the_turn_goes_on(server: ControlServer) -> None:
    write_record(state_dir(), "scribe", control=str(server.path))
    proc = send_in_background("scribe", "write", "--wait", "--timeout", "0.5")
    request = take_one(server)
    request.accept("abc123")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 124 and out == b""
    assert b"no answer from scribe within 0.5s; the turn goes on there" in err
    request.close()


def test_a_session_that_ends_before_the_answer_is_exit_1(server: ControlServer) -> None:
    write_record(state_dir(), "scribe", control=str(server.path))
    proc = send_in_background("scribe", "write", "--wait")
    request = take_one(server)
    request.accept("abc123")
    request.close()  # the launch ended without answering
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and b"scribe's session ended before the turn did" in err


def test_a_starting_session_is_asked_again_until_it_takes_the_prompt(server: ControlServer) -> None:
    write_record(state_dir(), "early", control=str(server.path))
    proc = send_in_background("early", "hello", "--wait")
    take_one(server).refuse("early is still starting", "starting", retry=True)
    request = take_one(server)  # the same prompt, offered again
    assert request.prompt == "hello"
    request.accept("abc123")
    request.answer(exit_code=0, answer="Hello.")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out == b"Hello.\n" and b"early is still starting; waiting for it (at most 60s)" in err


def test_a_session_that_stays_starting_is_exit_7_once_the_timeout_passes() -> None:
    write_record(state_dir(), "slowpoke", state="starting", control=None)
    result = run_cli("send", "slowpoke", "hello", "--wait", "--timeout", "1")
    assert result.returncode == 7 and b"slowpoke is still starting" in result.stderr
