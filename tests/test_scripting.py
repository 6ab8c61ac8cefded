"""The scripting contract of docs/scripting.md, one point at a time, on the offline fake provider."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from agentlaunch.definitions.spec import agent_names
from agentlaunch.errors import ExitCode
from testbed.agent_files import write_agent
from tests.conftest import REPO
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.waits import wait_for

SCRIPTING_DOC = REPO / "docs" / "scripting.md"
ANSI = re.compile(rb"\x1b[\[\]()]")
# SGR parameters that set a colour: 30-37, 38, 39, 40-47, 48, 49, 90-97, 100-107.
COLOUR_SGR = re.compile(rb"\x1b\[([0-9;]*)m")


def colour_codes(data: bytes) -> list[int]:
    codes = []
    for match in COLOUR_SGR.finditer(data):
        for part in match.group(1).split(b";"):
            if part and (30 <= int(part) <= 49 or 90 <= int(part) <= 107):
                codes.append(int(part))
    return codes


def run(agents_dir: Path, workdir: Path, *args: str, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return run_cli("run", "demo", *args, "--agents-dir", str(agents_dir), cwd=workdir, input=input)


# -- stdout carries only the answer ------------------------------------------------------------


def test_stdout_is_only_the_answer_and_the_footer_goes_to_stderr(agents_dir: Path, workdir: Path) -> None:
    result = run(agents_dir, workdir, "hello")
    assert result.returncode == 0
    answer = result.stdout.decode()
    assert answer.startswith("Fake provider here, turn 1.") and answer.endswith('You said: "hello"\n')
    assert answer.count("\n") == 1
    assert result.stderr.decode().startswith("tokens in ")


def test_quiet_drops_the_footer(agents_dir: Path, workdir: Path) -> None:
    result = run(agents_dir, workdir, "hello", "--quiet")
    assert result.returncode == 0 and result.stdout.endswith(b'You said: "hello"\n')
    assert result.stderr == b""


def test_json_prints_only_json_lines(agents_dir: Path, workdir: Path) -> None:
    result = run(agents_dir, workdir, "hello", "--json")
    assert result.returncode == 0 and result.stderr == b""
    events = [json.loads(line) for line in result.stdout.decode().splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "session" and kinds[-1] == "turn_end" and "usage" in kinds
    assert events[-1]["is_error"] is False


def test_errors_go_to_stderr_only(agents_dir: Path, workdir: Path) -> None:
    result = run_cli("run", "nosuch", "hello", "--agents-dir", str(agents_dir), cwd=workdir)
    assert result.returncode == 3 and result.stdout == b"" and b"error:" in result.stderr


# -- where the prompt comes from ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "stdin"),
    [(("say hi",), None), (("-p", "say hi"), None), (("--prompt", "say hi"), None), (("-",), b"say hi")],
    ids=["argument", "-p", "--prompt", "stdin"],
)
def test_the_prompt_comes_from_an_argument_p_or_stdin(
    agents_dir: Path, workdir: Path, args: tuple[str, ...], stdin: bytes | None
) -> None:
    result = run(agents_dir, workdir, *args, "-q", input=stdin)
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith(b'You said: "say hi"\n')


@pytest.mark.parametrize(
    ("args", "stdin"),
    [(("a", "-p", "b"), None), (("   ",), None), (("-",), b""), (("-",), b"\xff\xfe bad")],
    ids=["both", "blank", "empty-stdin", "not-utf8"],
)
def test_bad_prompts_are_exit_2(agents_dir: Path, workdir: Path, args: tuple[str, ...], stdin: bytes | None) -> None:
    result = run(agents_dir, workdir, *args, input=stdin)
    assert result.returncode == ExitCode.USAGE and result.stdout == b""


def test_timeout_ends_the_turn_with_124(agents_dir: Path, workdir: Path) -> None:
    result = run(agents_dir, workdir, "/slow take your time", "--timeout", "0.5")
    assert result.returncode == 124
    assert b"longer than 0.5s" in result.stderr


# -- exit codes: the documented table is the code's -----------------------------------------------


def documented_exit_codes() -> dict[int, str]:
    text = SCRIPTING_DOC.read_text()
    section = text.split("## Exit codes", 1)[1].split("\n#", 1)[0]
    codes: dict[int, str] = {}
    for cells in re.findall(r"^\| ([0-9 /]+) \| (.+) \|$", section, re.M):
        for code in cells[0].split("/"):
            codes[int(code)] = cells[1]
    return codes


def test_the_documented_exit_code_table_matches_the_code() -> None:
    documented = documented_exit_codes()
    signals = {128 + signal.SIGHUP, 128 + signal.SIGTERM}
    assert set(documented) == {int(code) for code in ExitCode} | signals


def test_exit_codes_by_behaviour(agents_dir: Path, workdir: Path, tmp_path: Path) -> None:
    assert run(agents_dir, workdir, "/fail now").returncode == ExitCode.TURN_FAILED
    assert run_cli("run", "demo", "--no-such-option").returncode == ExitCode.USAGE
    assert run_cli("run", "nosuch", "hi", "--agents-dir", str(agents_dir)).returncode == ExitCode.DEFINITION
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "CLAUDE.md").write_text("my own notes\n")
    # exit 4 is delivery: file's ownership rule (the default system-prompt delivery leaves a user's CLAUDE.md alone)
    write_agent(agents_dir, "filed", {"provider": "fake", "delivery": "file"})
    refused = run_cli("run", "filed", "hi", "--working-dir", str(mine), "--agents-dir", str(agents_dir))
    assert refused.returncode == ExitCode.REFUSED_OVERWRITE
    assert (mine / "CLAUDE.md").read_text() == "my own notes\n"
    not_a_dir = tmp_path / "state-file"
    not_a_dir.write_text("")
    state = run_cli("run", "demo", "hi", "--agents-dir", str(agents_dir), env={"AGENTLAUNCH_STATE_DIR": str(not_a_dir)})
    assert state.returncode == ExitCode.STATE
    (agents_dir / "demo" / "agent.yaml").write_text((agents_dir / "demo" / "agent.yaml").read_text() + "command: /no/cli\n")
    assert run(agents_dir, workdir, "hi").returncode == ExitCode.PROVIDER_MISSING


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_signals_during_a_turn(agents_dir: Path, workdir: Path, signum: int, code: int) -> None:
    from tests.test_status import live_record

    proc = subprocess.Popen(
        [sys.executable, "-m", "agentlaunch", "run", "demo", "/slow hello", "--agents-dir", str(agents_dir)],
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: live_record(proc.pid, "thinking"), what="the turn to start")
        proc.send_signal(signum)
        assert proc.wait(timeout=30) == code
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- no escapes for pipes, NO_COLOR ---------------------------------------------------------------


def test_no_ansi_escapes_when_output_is_not_a_terminal(agents_dir: Path, workdir: Path) -> None:
    outputs = [
        run(agents_dir, workdir, "hello"),
        run(agents_dir, workdir, "/fail x"),
        # The rest in this process (its output no terminal either): a Python start each saved.
        run_cli_inprocess("run", "nosuch", "hi", "--agents-dir", str(agents_dir)),
        run_cli_inprocess("run", "--no-such-option"),
        run_cli_inprocess("list", "--agents-dir", str(agents_dir)),
        run_cli_inprocess("sessions"),
        run_cli_inprocess("status"),
        run_cli_inprocess("--help"),
    ]
    for result in outputs:
        assert not ANSI.search(result.stdout), result.args
        assert not ANSI.search(result.stderr), result.args


def spawn_in_terminal(args: list[str], env: dict[str, str]) -> bytes:
    child = pexpect.spawn(sys.executable, ["-m", "agentlaunch", *args], env=env, timeout=60)
    child.expect(pexpect.EOF)
    child.close()
    return child.before or b""


def test_no_colour_on_a_terminal_with_no_color(agents_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["TERM"] = "xterm-256color"
    args = ["run", "nosuch", "hi", "--agents-dir", str(agents_dir)]
    coloured = spawn_in_terminal(args, env)
    assert colour_codes(coloured), "expected colour on a terminal (else this test proves nothing)"
    plain = spawn_in_terminal(args, {**env, "NO_COLOR": "1"})
    assert b"error:" in plain and colour_codes(plain) == []


# -- shell completion -------------------------------------------------------------------------------


def complete(words: str, env: dict[str, str] | None = None) -> list[str]:
    """Bash's completion of ``words`` through the whole app, in this process (the installed script's own process:
    ``test_the_installed_entry_point_completes_too``)."""
    from typer.testing import CliRunner

    from agentlaunch.cli import app

    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    full_env = {"_AGENTLAUNCH_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword), **(env or {})}
    result = CliRunner().invoke(app, [], env=full_env, prog_name="agentlaunch")
    assert result.exit_code == 0, result.output
    return result.stdout.split()


def test_shell_completion_of_agent_names(agents_dir: Path) -> None:
    env = {"AGENTLAUNCH_AGENTS_DIR": str(agents_dir)}
    assert complete("agentlaunch run d", env) == ["demo"]
    assert complete("agentlaunch run ", env) == agent_names(agents_dir) and "reviewer" in agent_names(agents_dir)
    assert complete("agentlaunch tmux up demo r", env) == ["reviewer"]
    assert complete("agentlaunch sessions p", env) == ["planner"]
    assert complete("agentlaunch status --line d", env) == ["demo"]
    assert complete(f"agentlaunch run --agents-dir {agents_dir} re") == ["reviewer"]


def test_the_installed_entry_point_completes_too(agents_dir: Path) -> None:
    script = Path(sys.executable).parent / "agentlaunch"
    if not script.exists():
        pytest.skip("no agentlaunch script beside this Python (not installed)")
    env = {
        **os.environ,
        "AGENTLAUNCH_AGENTS_DIR": str(agents_dir),
        "_AGENTLAUNCH_COMPLETE": "complete_bash",
        "COMP_WORDS": "agentlaunch run d",
        "COMP_CWORD": "2",
    }
    result = subprocess.run([str(script)], env=env, capture_output=True, timeout=60)
    assert result.stdout.split() == [b"demo"]
