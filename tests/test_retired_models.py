"""Models the pinned CLIs call retired: `validate` notes them, and neither the bundled examples nor the docs use them.

The list itself is pinned against the real Claude Code in ``tests/e2e/test_retired_models_banner.py`` (its banner).
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import yaml

from agentlaunch.providers.claude_retired import RETIRED, retirement, retirement_note
from testbed.agent_files import write_agent
from tests.conftest import EXAMPLE_AGENTS
from tests.support.cli_runs import run_cli_inprocess

ROOT = Path(__file__).resolve().parent.parent


def test_a_definition_naming_a_retired_model_gets_a_note_not_an_error(agents_dir: Path, workdir: Path) -> None:
    write_agent(agents_dir, "old", {"provider": "claude", "model": "claude-sonnet-4-5", "working_dir": str(workdir)})
    write_agent(agents_dir, "dated", {"provider": "claude", "model": "claude-sonnet-4-5-20250929[1m]"})
    result = run_cli_inprocess("validate", "old", "dated", "reviewer", "--agents-dir", str(agents_dir))
    err = result.stderr.decode()
    assert result.returncode == 0, err  # the CLI still starts it: a note, never a definition error
    assert result.stdout == b""  # stdout carries the problems only
    for name in ("old", "dated"):
        assert (
            f"note: {agents_dir / name / 'agent.yaml'}: model: Claude Code 2.1.332 says Claude Sonnet 4.5 was "
            "retired on 2026-11-30"
        ) in err
    assert err.count("use a current model such as claude-sonnet-5-5") == 2
    assert "reviewer/agent.yaml: model" not in err  # the bundled example uses a current model
    assert "3 agent(s) valid" in err


def test_only_the_cli_of_the_provider_decides() -> None:
    assert retirement("claude", "claude-sonnet-5-5") is None and retirement("claude", None) is None
    assert retirement("fake", "claude-sonnet-4-5") is None  # the fake CLI shows no banner
    assert retirement("codex", "gpt-5.5") is None and retirement("gemini", "gemini-2.5-pro") is None
    opus = retirement_note("claude", "claude-opus-4-5", date(2026, 12, 6))
    assert opus is not None and "Claude Opus 4.5 will be retired on 2027-01-22" in opus  # the CLI says "will be" too


def test_no_bundled_example_and_no_doc_names_a_retired_model() -> None:
    for yaml_path in sorted(EXAMPLE_AGENTS.glob("*/agent.yaml")):
        conf = yaml.safe_load(yaml_path.read_text())
        assert retirement(conf["provider"], conf.get("model")) is None, yaml_path
    ids = sorted((i for entries in RETIRED.values() for e in entries for i in e.ids), key=len, reverse=True)
    named = re.compile(r"(?<![\w.-])(" + "|".join(map(re.escape, ids)) + r")(?![\w.-])")
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        found = named.findall(doc.read_text())
        assert not found, f"{doc.name} names retired models: {sorted(set(found))}"
