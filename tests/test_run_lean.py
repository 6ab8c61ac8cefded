"""`agentlaunch run` without Typer (agentlaunch.cli.run_lean): the same answers, errors and exit codes as the Typer
command, which it leaves every command line it does not read plainly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentlaunch import paths
from agentlaunch.cli.run_lean import typed
from agentlaunch.launch import early_plans, prespawn
from agentlaunch.launch.prespawn import parse_params
from tests.support.cli_runs import run_cli

TABLE = {
    "version": "x",
    "options": {
        "--help": ["help", 0], "-h": ["help", 0], "-p": ["prompt_opt", 1], "--prompt": ["prompt_opt", 1],
        "-q": ["quiet", 0], "--quiet": ["quiet", 0], "--json": ["as_json", 0], "--timeout": ["timeout", 1],
        "--agents-dir": ["agents_dir", 1], "-c": ["continue_last", 0], "-r": ["resume", 1],
    },
    "arguments": ["agent", "prompt"],
}  # fmt: skip


def test_parse_params_reads_what_the_table_describes_and_leaves_the_rest_to_click() -> None:
    assert parse_params(["run", "demo", "hi", "-q", "--timeout=5", "-r", "abc"], TABLE) == (
        {"agent": "demo", "prompt": "hi"}, {"timeout": "5", "resume": "abc"}, {"quiet"},
    )  # fmt: skip
    for args in (["run"], ["run", "demo", "--help"], ["run", "demo", "-qc"], ["run", "demo", "--nope"],
                 ["run", "demo", "--timeout"], ["run", "demo", "--quiet=1"], ["run", "a", "b", "c"],
                 ["run", "demo", "--", "hi"], ["status", "demo"]):  # fmt: skip
        assert parse_params(args, TABLE) is None, args
    assert parse_params(["run", "demo"], None) is None  # no table kept yet


def test_typed_gives_click_s_types_and_its_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLAUNCH_AGENTS_DIR", "/from/env")
    monkeypatch.setenv("AGENTLAUNCH_TEMPLATES_DIR", "")  # set empty: click ignores it
    assert typed({"timeout": "2.5", "working_dir": "w"}) == {
        "timeout": 2.5, "working_dir": Path("w"), "agents_dir": Path("/from/env"),
    }  # fmt: skip
    assert typed({"agents_dir": "/given"}) == {"agents_dir": Path("/given")}  # the option over the variable
    assert typed({"timeout": "soon"}) is None  # click says what is wrong with it
    assert typed({"working_dir": ""}) is None


def test_run_has_no_option_the_lean_path_would_misread() -> None:
    """A flag's secondary form (--x/--no-x) would read as the flag itself in the kept table: `run` has none."""
    from typer.main import get_command

    from agentlaunch.cli import load_commands

    command = get_command(load_commands(["run"])).commands["run"]  # type: ignore[attr-defined]
    assert all(not getattr(p, "secondary_opts", []) for p in command.params)
    assert {p.name for p in command.params} <= set(prespawn.KNOWN_PARAMS)


def _run(*args: str, agents_dir: Path, cwd: Path, importtime: bool = False) -> subprocess.CompletedProcess[bytes]:
    env = {"PYTHONPROFILEIMPORTTIME": "1"} if importtime else None
    return run_cli("run", *args, "--agents-dir", str(agents_dir), cwd=cwd, env=env)


def _typer_loaded(done: subprocess.CompletedProcess[bytes]) -> bool:
    return any(line.split("|")[-1].strip() == "typer" for line in done.stderr.decode().splitlines())


def _without_importtime(stderr: bytes) -> list[str]:
    return [line for line in stderr.decode().splitlines() if not line.startswith("import time:")]


def test_a_headless_run_answers_the_same_without_typer(agents_dir: Path, tmp_path: Path) -> None:
    first = _run("demo", "hello", "--quiet", agents_dir=agents_dir, cwd=tmp_path, importtime=True)
    assert first.returncode == 0, first.stderr.decode()[-2000:]
    assert _typer_loaded(first)  # no option table kept yet: Typer read the command line, and kept it
    assert (paths.state_dir() / early_plans.RUN_OPTIONS).is_file()
    second = _run("demo", "hello", "--quiet", agents_dir=agents_dir, cwd=tmp_path, importtime=True)
    assert second.returncode == 0, second.stderr.decode()[-2000:]
    assert not _typer_loaded(second)
    assert second.stdout == first.stdout and second.stdout.strip()
    assert _without_importtime(second.stderr) == _without_importtime(first.stderr)


@pytest.mark.parametrize(
    ("args", "code", "message", "lean"),
    [
        (["demo", "-c", "-r", "abc", "hi"], 2, "error: use --continue or --resume ID, not both", True),
        (["demo", "hi", "-p", "again"], 2, "error: give the prompt either as an argument or with -p, not both", True),
        (["demo", "   "], 2, "error: the prompt is empty", True),
        (["no-such-agent", "hi"], 3, "no-such-agent", True),
        (["demo", "hi", "--budget-usd", "-1"], 2, "error:", True),
        (["demo", "hi", "--timeout", "soon"], 2, "'soon' is not a valid float", False),  # click's own words
        (["demo", "hi", "--no-such-option"], 2, "No such option: --no-such-option", False),
        (["demo", "hi", "--quiet=yes"], 2, "Option '--quiet' does not take a value", False),
    ],
)
def test_bad_command_lines_get_the_same_error_and_exit_code_on_both_paths(
    agents_dir: Path, tmp_path: Path, args: list[str], code: int, message: str, lean: bool
) -> None:
    typer_side = _run(*args, agents_dir=agents_dir, cwd=tmp_path, importtime=True)  # no table yet: Typer's
    assert _typer_loaded(typer_side)
    assert _run("demo", "hello", "--quiet", agents_dir=agents_dir, cwd=tmp_path).returncode == 0  # keeps the table
    lean_side = _run(*args, agents_dir=agents_dir, cwd=tmp_path, importtime=True)
    assert _typer_loaded(lean_side) is not lean  # read plainly: no Typer; else Typer reads it and says what is wrong
    for done in (typer_side, lean_side):
        assert done.returncode == code, done.stderr.decode()[-2000:]
        assert message in done.stderr.decode() and "Traceback" not in done.stderr.decode()
    assert _without_importtime(lean_side.stderr) == _without_importtime(typer_side.stderr)
    assert lean_side.stdout == typer_side.stdout


def test_the_environment_s_agents_dir_is_read_on_the_lean_path(agents_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "AGENTLAUNCH_AGENTS_DIR": str(agents_dir)}
    for _ in range(2):  # the first keeps the table, the second runs without Typer
        done = subprocess.run([sys.executable, "-m", "agentlaunch", "run", "demo", "hello", "-q"], cwd=tmp_path, env=env,
                              capture_output=True, timeout=120)  # fmt: skip
        assert done.returncode == 0 and done.stdout.strip(), done.stderr.decode()[-2000:]


def test_the_launch_runs_with_the_garbage_collector_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """entry turns it off for the imports of `run` only: the launch itself (a session may last days) collects."""
    import gc

    from agentlaunch import entry
    from agentlaunch.cli import run_lean

    seen: list[bool] = []
    monkeypatch.setattr(run_lean, "answer", lambda args: seen.append(gc.isenabled()))  # None: Typer's turn
    gc.disable()
    try:
        entry.lean_run(["run", "demo"])
    finally:
        on = gc.isenabled()
        gc.enable()
        gc.unfreeze()
    assert seen == [True] and on


def test_a_table_kept_before_run_s_definition_changed_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkout whose `run` changed without a new version: the kept table is Typer's to write again."""
    import json

    cli = tmp_path / "cli"
    cli.mkdir()
    for name in prespawn.DEFINED_IN:
        (cli / name).write_text("# run's options\n")
    monkeypatch.setattr(prespawn, "CLI_DIR", str(cli))
    state = tmp_path / "state"
    state.mkdir()
    (state / early_plans.RUN_OPTIONS).write_text(json.dumps(prespawn.option_table([], ["--help"])))
    assert prespawn.read_run_options(state) is not None
    (cli / "run.py").write_text("# run's options, one more\n")
    assert prespawn.read_run_options(state) is None
