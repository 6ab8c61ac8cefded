"""`render --breakdown` and the doctor's parts: where the instructions prefix's tokens go."""

from __future__ import annotations

import json
import os
from datetime import date
from pathlib import Path

from agentlaunch.definitions.breakdown import breakdown
from agentlaunch.definitions.render import render_instructions
from agentlaunch.definitions.spec import load_agent
from tests.support.cli_runs import run_cli_inprocess


def test_the_parts_add_up_to_the_rendered_text(agents_dir: Path, tmp_path: Path) -> None:
    spec = load_agent(agents_dir, "reviewer")
    rendered = render_instructions(spec, tmp_path, date(2026, 12, 1))
    parts = breakdown(spec, rendered, tmp_path, date(2026, 12, 1), None, None)
    assert [p.label for p in parts] == [
        "soul",
        "agent instructions",
        "bundle house-style",
        "bundle security-basics",
        "skills index (2)",
        "template (headings, framing)",
    ]
    assert sum(p.bytes for p in parts) == rendered.size
    assert all(p.bytes >= 0 for p in parts) and parts[4].bytes > 50


def test_render_breakdown_prints_json_with_costs_per_call_and_writes_nothing(agents_dir: Path) -> None:
    done = run_cli_inprocess("render", "reviewer", "--breakdown", "--json", "--agents-dir", str(agents_dir))
    assert done.returncode == 0, done.stderr.decode()
    data = json.loads(done.stdout)
    assert data["model"] == "claude-sonnet-5-5" and sum(p["bytes"] for p in data["parts"]) == data["bytes"]
    soul = data["parts"][0]
    # claude-sonnet-5-5 (genai-prices): $2 per million input tokens, $0.10 per million read from the cache
    assert abs(soul["uncached_usd"] - soul["tokens"] * 2 / 1e6) < 1e-12
    assert abs(soul["cached_usd"] - soul["tokens"] * 0.1 / 1e6) < 1e-12
    state = Path(os.environ["AGENTLAUNCH_STATE_DIR"])
    assert not (state / "system-prompts").exists()
    table = run_cli_inprocess("render", "reviewer", "--breakdown", "--agents-dir", str(agents_dir)).stdout.decode()
    assert "bundle security-basics" in table and "/1k calls" in table


def test_an_unpriced_model_shows_unpriced_not_zero(agents_dir: Path) -> None:
    done = run_cli_inprocess("render", "demo", "--breakdown", "--json", "--agents-dir", str(agents_dir))
    assert {p["uncached_usd"] for p in json.loads(done.stdout)["parts"]} == {None}


def test_breakdown_options_that_do_not_go_together_are_usage_errors(agents_dir: Path, tmp_path: Path) -> None:
    for args in (["--json"], ["--breakdown", "--stdout"], ["--breakdown", "--output", str(tmp_path / "x.md")]):
        done = run_cli_inprocess("render", "reviewer", *args, "--agents-dir", str(agents_dir))
        assert done.returncode == 2, (args, done.stderr.decode())
    assert not (tmp_path / "x.md").exists()


def test_the_doctor_shows_the_parts(agents_dir: Path) -> None:
    done = run_cli_inprocess("doctor", "reviewer", "--json", "--agents-dir", str(agents_dir))
    parts = json.loads(done.stdout)["static"]["parts"]
    assert parts[0] == {"label": "soul", "bytes": parts[0]["bytes"], "tokens": -(-parts[0]["bytes"] // 4)}
    plain = run_cli_inprocess("doctor", "reviewer", "--agents-dir", str(agents_dir)).stdout.decode()
    assert "parts   soul " in plain
