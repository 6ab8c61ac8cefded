"""Rendering the instructions file: golden output, byte-identity, volatility, the sandbox."""

from __future__ import annotations

import os
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from agentlaunch.definitions.render import RunFacts, quantize_time, render_instructions, render_startup
from agentlaunch.definitions.spec import load_agent
from agentlaunch.errors import DefinitionError
from testbed.agent_files import write_agent
from tests.conftest import EXAMPLE_AGENTS
from tests.support.cli_runs import run_cli_inprocess

GOLDEN = Path(__file__).parent / "golden"
DAY = date(2026, 11, 30)


@pytest.mark.parametrize("agent", ["demo", "reviewer", "planner"])
@pytest.mark.parametrize("provider", ["claude", "codex", "gemini", "fake"])
def test_example_agents_match_golden_files(agent: str, provider: str) -> None:
    spec = load_agent(EXAMPLE_AGENTS, agent)
    rendered = render_instructions(spec, Path("/work/example"), DAY, provider=provider)
    assert (
        rendered.filename == {"claude": "CLAUDE.md", "fake": "CLAUDE.md", "codex": "AGENTS.md", "gemini": "GEMINI.md"}[provider]
    )
    golden = GOLDEN / f"{agent}.{rendered.filename}"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_bytes(rendered.data)
    assert rendered.data == golden.read_bytes()
    assert rendered.text.endswith("\n") and not rendered.text.endswith("\n\n")


def test_order_is_soul_instructions_bundles_then_skills(agents_dir: Path) -> None:
    text = render_instructions(load_agent(agents_dir, "reviewer"), Path("/w"), DAY).text
    marks = ["careful senior code reviewer", "# How you review", "# House style", "# Security basics", "# Available Skills"]
    positions = [text.index(m) for m in marks]
    assert positions == sorted(positions)
    assert "- **git-hygiene**: Make small commits" in text


def test_every_template_variable_is_substituted_in_every_part(agents_dir: Path, tmp_path: Path) -> None:
    line = "{{AGENT}}|{{AGENT_DISPLAY}}|{{AGENT_ID}}|{{DATE}}|{{WORKING_DIR}}"
    (agents_dir / "bundles" / "vars.md").write_text(f"bundle {line}\n")
    write_agent(
        agents_dir,
        "vars",
        {"provider": "claude", "display": "Var Agent", "id": "v-1", "bundles": ["vars"]},
        {"soul.md": f"soul {line}\n", "agent.md": f"agent {line}\n"},
    )
    text = render_instructions(load_agent(agents_dir, "vars"), tmp_path, DAY).text
    expected = f"vars|Var Agent|v-1|2026-11-30|{tmp_path}"
    for part in ("soul", "agent", "bundle"):
        assert f"{part} {expected}" in text
    assert "{{" not in text


def test_volatile_variables_are_reported_with_their_offset(agents_dir: Path) -> None:
    write_agent(agents_dir, "vol", {"provider": "claude"}, {"soul.md": "Stable start.\nToday is {{DATE}}.\n"})
    rendered = render_instructions(load_agent(agents_dir, "vol"), Path("/w"), DAY)
    assert [(v.variable, Path(v.source).name) for v in rendered.volatile] == [("DATE", "soul.md")]
    assert rendered.first_volatile_offset == len(b"Stable start.\nToday is ")
    stable = render_instructions(load_agent(agents_dir, "reviewer"), Path("/w"), DAY)
    assert stable.volatile == () and stable.first_volatile_offset is None


def test_undefined_variable_names_variable_and_file(agents_dir: Path) -> None:
    write_agent(agents_dir, "undef", {"provider": "claude"}, {"agent.md": "Hello {{ USER_NAME }}\n"})
    with pytest.raises(DefinitionError) as info:
        render_instructions(load_agent(agents_dir, "undef"), Path("/w"), DAY)
    assert "undef/agent.md: template: 'USER_NAME' is undefined" in info.value.message


@pytest.mark.parametrize(
    "attack", ["{{ ''.__class__.__mro__ }}", "{{ AGENT.__class__.__init__.__globals__ }}", "{{ cycler.__init__.__globals__.os }}"]
)
def test_templates_cannot_reach_python_internals(agents_dir: Path, attack: str) -> None:
    write_agent(agents_dir, "evil", {"provider": "claude"}, {"soul.md": attack + "\n"})
    with pytest.raises(DefinitionError) as info:
        render_instructions(load_agent(agents_dir, "evil"), Path("/w"), DAY)
    assert "evil/soul.md: template:" in info.value.message
    assert "unsafe" in info.value.message or "undefined" in info.value.message


def test_template_syntax_error_names_line(agents_dir: Path) -> None:
    write_agent(agents_dir, "syn", {"provider": "claude"}, {"soul.md": "ok\n{% if %}\n"})
    with pytest.raises(DefinitionError, match=r"syn/soul.md: template: line 2:"):
        render_instructions(load_agent(agents_dir, "syn"), Path("/w"), DAY)


def test_user_templates_dir_overrides_the_joining(agents_dir: Path, tmp_path: Path) -> None:
    tdir = tmp_path / "tpl"
    tdir.mkdir()
    (tdir / "instructions.md.j2").write_text("{% for s in sections %}[{{ s.name }}]{% endfor %}")
    text = render_instructions(load_agent(agents_dir, "reviewer"), Path("/w"), DAY, templates_dir=tdir).text
    assert text == "[soul][instructions][house-style][security-basics]\n"


def test_byte_identical_across_processes_and_environments(agents_dir: Path, tmp_path: Path) -> None:
    """Two processes with different locales, hash seeds and time zones write the same bytes."""
    outputs = []
    for i, extra in enumerate(
        [
            {"LC_ALL": "C", "LANG": "C", "PYTHONHASHSEED": "1", "TZ": "UTC"},
            {"LC_ALL": "C.UTF-8", "LANG": "de_DE.UTF-8", "PYTHONHASHSEED": "4242", "TZ": "Asia/Tokyo"},
        ]
    ):
        result = run_cli_inprocess("render", "reviewer", "--stdout", "--agents-dir", str(agents_dir), env=extra, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout)
        assert i == 0 or outputs[i] == outputs[0]
    assert outputs[0] == render_instructions(load_agent(agents_dir, "reviewer"), tmp_path, DAY).data


def test_startup_message_carries_the_session_facts(agents_dir: Path) -> None:
    spec = load_agent(agents_dir, "reviewer")
    now = datetime(2026, 11, 30, 13, 27, 45, tzinfo=UTC)
    text = render_startup(spec, RunFacts("claude", "claude-sonnet-4-5", "sid-123", Path("/w"), now))
    assert 'You are Reviewer (agent "reviewer", id "reviewer"), running on claude with model claude-sonnet-4-5' in text
    assert "Session: sid-123" in text and "Working directory: /w" in text
    assert "Accounts assigned to you: github:review-bot" in text
    assert "Peer agents: demo, planner" in text
    assert "Review the most recent commit" in text


def test_a_startup_message_whose_cli_names_the_session_gives_no_id_of_agentlaunchs(agents_dir: Path) -> None:
    """Codex's interface names its thread as it starts, and the launch adopts that id: an id of agentlaunch's
    in the message would be one that `status` and `sessions` never show."""
    spec = load_agent(agents_dir, "reviewer")
    now = datetime(2026, 11, 30, 13, 27, 45, tzinfo=UTC)
    text = render_startup(spec, RunFacts("codex", "gpt-5.5", None, Path("/w"), now))
    assert "Session: the id codex gives this conversation as it starts (agentlaunch status and sessions show it)" in text
    assert "None" not in text
    local = quantize_time(now.astimezone())
    assert f"Now: {local.strftime('%A %Y-%m-%d %H:%M')}" in text and local.minute % 10 == 0


def test_time_is_rounded_down_to_ten_minutes() -> None:
    assert quantize_time(datetime(2026, 1, 1, 9, 59, 59)) == datetime(2026, 1, 1, 9, 50)
