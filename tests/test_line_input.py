"""The headless and line-chat path's leading-character facts (descriptors' ``line_input``) and the argv of a turn."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentlaunch.definitions.spec import load_agent
from agentlaunch.providers import get_adapter
from agentlaunch.providers.descriptors import describe
from testbed.agent_files import write_agent
from tests.support.cli_runs import run_cli_inprocess

PROVIDERS_WITH_SLASH = ("claude", "gemini")


@pytest.mark.parametrize("name", ["claude", "codex", "gemini", "fake"])
@pytest.mark.parametrize("text", ["!touch FILE", " /cost", "\t/cost", "x\n/cost", "x\n!touch F", "#x", "@README x", "$x", "-x"])
def test_no_path_refuses_what_reached_the_model_as_written(name: str, text: str) -> None:
    assert describe(name).line_input.refusal(name, text, "(headless)") is None


@pytest.mark.parametrize("name", ["claude", "codex", "gemini", "fake"])
def test_a_leading_slash_is_refused_where_the_cli_runs_commands_and_only_there(name: str) -> None:
    line = describe(name).line_input
    why = line.refusal(name, "/cost", "(headless)")
    assert (why is not None) is (name in PROVIDERS_WITH_SLASH) is line.runs_commands
    if why is not None:
        assert why.startswith(f"{name} (headless) runs it as a slash command") and "'/'" in why


@pytest.mark.parametrize("name", ["codex", "gemini"])
def test_a_prompt_starting_with_a_dash_is_one_argument_and_no_option(name: str, tmp_path: Path) -> None:
    adapter = get_adapter(name)
    write_agent(tmp_path / "agents", "a", {"provider": name, "working_dir": str(tmp_path)})
    spec = load_agent(tmp_path / "agents", "a", tmp_path / "state")
    plan = adapter.plan_turn(spec, name, {"session_id": "S"}, "-dash first")  # type: ignore[attr-defined]
    argv = plan.argv
    if name == "codex":
        assert argv[-2:] == ["--", "-dash first"]
    else:  # Gemini reads its prompt on stdin: no -p, nothing of the prompt in argv
        assert plan.stdin == b"-dash first" and "-p" not in argv and not any("dash" in a for a in argv)


def test_headless_run_refuses_a_slash_command_before_anything_starts(agents_dir: Path, workdir: Path) -> None:
    # The command does not exist: a refusal that came after the start would be 127.
    write_agent(agents_dir, "c", {"provider": "claude", "command": str(workdir / "no-claude"), "working_dir": str(workdir)})
    result = run_cli_inprocess("run", "c", "/cost", "--agents-dir", str(agents_dir))
    assert result.returncode == 2, result.stderr
    assert b"claude (headless) runs it as a slash command" in result.stderr
    assert run_cli_inprocess("sessions", "--json").stdout.strip() == b"[]"
    started = run_cli_inprocess("run", "c", "!touch FILE", "--agents-dir", str(agents_dir))
    assert started.returncode == 127, started.stderr  # taken: it went on to start the (missing) CLI
