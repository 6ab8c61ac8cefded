"""The foundation commands as a person or a script uses them: list, validate, render, init, --help."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentlaunch import __version__, paths
from agentlaunch.cli import COMMAND_MODULES, app
from testbed.agent_files import write_agent
from tests.support.cli_runs import run_cli, run_cli_inprocess

runner = CliRunner()


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_version_and_help_on_every_command() -> None:
    code, out, _ = invoke("--version")
    assert code == 0 and out.strip() == f"agentlaunch {__version__}"
    commands = ("list", "validate", "render", "init", "run", "sessions", "usage", "usage export", "status", "doctor")
    for command in (*commands, "tmux up", "tmux down"):
        code, out, _ = invoke(*command.split(), "--help")
        assert code == 0 and "Example: agentlaunch" in out, command


def test_list_json(agents_dir: Path) -> None:
    code, out, _ = invoke("list", "--json", "--agents-dir", str(agents_dir))
    assert code == 0
    data = json.loads(out)
    by_name = {a["name"]: a for a in data["agents"]}
    assert by_name["reviewer"]["provider"] == "claude"
    assert by_name["reviewer"]["bundles"] == ["house-style", "security-basics"]
    assert by_name["planner"]["skills"] == ["git-hygiene"]


def test_list_reads_agents_dir_from_environment(agents_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLAUNCH_AGENTS_DIR", str(agents_dir))
    code, out, _ = invoke("list", "--json")
    assert code == 0 and json.loads(out)["agents_dir"] == str(agents_dir)


def test_list_marks_broken_agents(agents_dir: Path) -> None:
    write_agent(agents_dir, "broken", {"provider": "nope"})
    data = json.loads(invoke("list", "--json", "--agents-dir", str(agents_dir))[1])
    broken = next(a for a in data["agents"] if a["name"] == "broken")
    assert broken["problems"] and "provider" in broken["problems"][0]


def test_validate_ok_and_problems(agents_dir: Path) -> None:
    assert invoke("validate", "--agents-dir", str(agents_dir))[0] == 0
    write_agent(agents_dir, "bad", {"provider": "claude", "bundles": ["missing"], "colour": "red"})
    code, out, _ = invoke("validate", "bad", "--agents-dir", str(agents_dir))
    assert code == 3
    lines = out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(str(agents_dir / "bad" / "agent.yaml") + ": colour: unknown key")


def test_validate_reports_undefined_template_variable(agents_dir: Path) -> None:
    write_agent(agents_dir, "undef", {"provider": "claude"}, {"soul.md": "{{ NOPE }}"})
    code, out, _ = invoke("validate", "undef", "--agents-dir", str(agents_dir))
    assert code == 3 and "undef/soul.md: template: 'NOPE' is undefined" in out


def test_validate_warns_about_volatile_variables(agents_dir: Path) -> None:
    write_agent(agents_dir, "vol", {"provider": "claude"}, {"soul.md": "Date {{DATE}}"})
    code, _, err = invoke("validate", "vol", "--agents-dir", str(agents_dir))
    assert code == 0 and "uses {{DATE}}, which changes per day" in err and "byte 5" in err


def test_render_writes_file_reports_size_and_keeps_user_file(agents_dir: Path, workdir: Path) -> None:
    # planner is a codex agent: its delivery (developer-instructions, issue 13) keeps the text in the state dir.
    code, _, err = invoke("render", "planner", "--working-dir", str(workdir), "--agents-dir", str(agents_dir))
    assert code == 0, err
    written = (paths.state_dir() / "system-prompts" / "planner" / "AGENTS.md").read_bytes()
    assert f"AGENTS.md: {len(written):,} bytes, ~" in err
    assert "wrote" in err and not (workdir / "AGENTS.md").exists()
    code, _, err = invoke("render", "planner", "--working-dir", str(workdir), "--agents-dir", str(agents_dir))
    assert code == 0 and "unchanged" in err

    # A claude agent with delivery: file writes CLAUDE.md into its working dir, under the ownership rules.
    write_agent(agents_dir, "filed", {"provider": "claude", "delivery": "file"})
    (workdir / "CLAUDE.md").write_text("the user's own CLAUDE.md\n")
    code, out, err = invoke("render", "filed", "--working-dir", str(workdir), "--agents-dir", str(agents_dir))
    assert code == 4 and "was not written by agentlaunch" in err and "--force" in err
    assert (workdir / "CLAUDE.md").read_text() == "the user's own CLAUDE.md\n"
    code, _, err = invoke("render", "filed", "--working-dir", str(workdir), "--agents-dir", str(agents_dir), "--force")
    assert code == 0 and "moved your CLAUDE.md aside" in err
    backups = list(workdir.glob("CLAUDE.md.*.bak"))
    assert len(backups) == 1 and backups[0].read_text() == "the user's own CLAUDE.md\n"


def test_render_stdout_and_provider_override(agents_dir: Path, workdir: Path) -> None:
    code, out, err = invoke(
        "render", "reviewer", "--provider", "gemini", "--stdout", "--working-dir", str(workdir), "--agents-dir", str(agents_dir)
    )
    assert code == 0 and out.startswith("You are Reviewer") and "GEMINI.md:" in err
    assert list(workdir.iterdir()) == []
    code, _, err = invoke("render", "reviewer", "--provider", "openai", "--agents-dir", str(agents_dir))
    assert code == 3 and "unknown provider 'openai'" in err


def test_render_bad_inputs_write_nothing(agents_dir: Path, workdir: Path, tmp_path: Path) -> None:
    code, _, err = invoke("render", "nobody", "--agents-dir", str(agents_dir))
    assert code == 3 and "agent 'nobody' not found" in err
    code, _, err = invoke("render", "reviewer", "--agents-dir", str(tmp_path / "none"))
    assert code == 3 and "agents directory does not exist" in err and "agentlaunch init" in err
    code, _, err = invoke("render", "reviewer", "--working-dir", str(tmp_path / "missing"), "--agents-dir", str(agents_dir))
    assert code == 3 and "does not exist" in err
    code, _, err = invoke("render", "reviewer", "--output", "/proc/self/CLAUDE.md", "--agents-dir", str(agents_dir))
    assert code == 5 and "cannot write CLAUDE.md there" in err  # an I/O failure while delivering: a state error
    write_agent(agents_dir, "evil", {"provider": "claude"}, {"soul.md": "{{ ''.__class__.__mro__ }}"})
    code, _, err = invoke("render", "evil", "--working-dir", str(workdir), "--agents-dir", str(agents_dir))
    assert code == 3 and "evil/soul.md: template:" in err and "unsafe" in err
    assert list(workdir.iterdir()) == []


def test_init_creates_examples_and_never_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "mine"
    (target / "demo").mkdir(parents=True)
    (target / "demo" / "soul.md").write_text("my soul\n")
    code, _, err = invoke("init", str(target))
    assert code == 0 and "kept 1 existing file(s) untouched" in err
    assert (target / "demo" / "soul.md").read_text() == "my soul\n"
    assert (target / "reviewer" / "agent.yaml").is_file() and (target / "skills" / "git-hygiene" / "SKILL.md").is_file()
    code, out, _ = invoke("list", "--json", "--agents-dir", str(target))
    assert {a["name"] for a in json.loads(out)["agents"]} == {"demo", "planner", "reviewer"}


def test_python_dash_m_entry_point(agents_dir: Path) -> None:
    result = run_cli("list", "--json", "--agents-dir", str(agents_dir))
    assert result.returncode == 0 and json.loads(result.stdout)["agents"]


def _cli_modules_loaded_for(args: list[str]) -> list[str]:
    probe = (
        "import sys; from agentlaunch.cli import load_commands; "
        f"load_commands({args!r}); print(' '.join(sorted(m for m in sys.modules if m.startswith('agentlaunch.cli.'))))"
    )
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()


def test_a_command_loads_only_the_module_that_defines_it() -> None:
    # user_io: what the commands share that needs no Typer (the error boundary's report, the prompt)
    run = ["agentlaunch.cli.common", "agentlaunch.cli.run", "agentlaunch.cli.user_io"]
    assert _cli_modules_loaded_for(["run", "demo", "hi"]) == run
    # up_report: the lines `tmux up`, `restart` and the MCP server's start say of each agent (no command of its own)
    tmux_up = ["agentlaunch.cli.common", "agentlaunch.cli.tmux", "agentlaunch.cli.up_report", "agentlaunch.cli.user_io"]
    assert _cli_modules_loaded_for(["tmux", "up"]) == tmux_up
    # with every command, the modules two commands share: a command on a host (on_host), usage across hosts
    helpers = {"common", "user_io", "on_host", "up_report", "usage_hosts"}
    every = [f"agentlaunch.cli.{m}" for m in sorted({*helpers, *COMMAND_MODULES.values()})]
    assert _cli_modules_loaded_for(["--help"]) == every
    assert _cli_modules_loaded_for(["no-such-command"]) == every  # so click can list the real ones


def test_top_level_help_lists_every_command_and_a_typo_gets_the_usage_error() -> None:
    shown = run_cli_inprocess("--help")
    assert shown.returncode == 0
    for command in COMMAND_MODULES:
        assert f" {command} " in shown.stdout.decode(), command
    typo = run_cli_inprocess("rnu", "demo")
    assert typo.returncode == 2 and b"No such command" in typo.stderr


def test_exit_codes_and_output_survive_the_fast_exit(agents_dir: Path) -> None:
    """The entry point ends with os._exit after flushing: codes, stdout and stderr must all come out whole."""
    listed = run_cli("list", "--json", "--agents-dir", str(agents_dir))
    assert listed.returncode == 0 and json.loads(listed.stdout)["agents"]
    missing = run_cli("validate", "ghost", "--agents-dir", str(agents_dir))
    assert missing.returncode == 3 and b"not found" in missing.stdout + missing.stderr
    version = run_cli("--version")
    assert version.returncode == 0 and version.stdout.decode().strip() == f"agentlaunch {__version__}"


def test_version_loads_no_command_module() -> None:
    """``--version`` alone is the app's eager option: no command's module is imported for it (each costs imports)."""
    assert _cli_modules_loaded_for(["--version"]) == ["agentlaunch.cli.common", "agentlaunch.cli.user_io"]


def test_a_closed_stdout_is_not_a_traceback(agents_dir: Path) -> None:
    reader, writer = os.pipe()
    os.close(reader)  # nobody reads: writing to stdout fails with EPIPE
    done = subprocess.run(
        [sys.executable, "-m", "agentlaunch", "list", "--json", "--agents-dir", str(agents_dir)],
        stdout=writer,
        stderr=subprocess.PIPE,
        timeout=60,
    )
    os.close(writer)
    assert done.returncode != 0
    assert b"Traceback" not in done.stderr
