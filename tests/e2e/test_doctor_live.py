"""The live prefix doctor against the real Claude Code, Codex CLI and Gemini CLI (capture endpoint on 127.0.0.1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.fakeapi.anthropic import FakeAnthropic, claude_env, system_text
from agentlaunch.prefix import live
from agentlaunch.prefix.live import live_check
from agentlaunch.prefix.live_report import LiveReport
from testbed.agent_files import write_agent
from testbed.clis import cli_version, ensure_cli
from tests.conftest import REPO
from tests.support.cli_runs import run_cli_inprocess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

AGENTS: dict[str, dict[str, Any]] = {
    "claude": {
        "model": "claude-sonnet-4-5",
        "bundles": ["house-style", "security-basics"],
        "skills": ["git-hygiene", "code-review"],
    },
    "codex": {"model": "gpt-5.5", "bundles": ["house-style"], "skills": ["git-hygiene"]},
    "gemini": {"model": "gemini-2.5-pro", "bundles": ["house-style"], "skills": ["git-hygiene"]},
}


@pytest.mark.parametrize("provider", ["claude", "codex", "gemini"])
def test_live_doctor_measures_a_shared_prefix_and_its_negative_control_passes(
    agents_dir: Path, provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`agentlaunch doctor probe --live --json` (in-process: its report read as well as what it printed)."""
    binary = ensure_cli(provider)  # type: ignore[arg-type]
    write_agent(
        agents_dir, "probe", {"provider": provider, "command": str(binary), **AGENTS[provider]}, {"soul.md": "You are Probe.\n"}
    )
    reports: list[LiveReport] = []

    def kept(*args: Any, **kwargs: Any) -> LiveReport:
        reports.append(live_check(*args, **kwargs))
        return reports[-1]

    monkeypatch.setattr(live, "live_check", kept)
    done = run_cli_inprocess("doctor", "probe", "--live", "--json", "--agents-dir", str(agents_dir), timeout=240)
    assert done.returncode == 0, done.stderr.decode()
    data = json.loads(done.stdout)
    assert data["live"]["control"]["passed"] and data["live"]["proxy_attempts"] == []
    assert cli_version(provider) in data["live"]["cli_version"]  # type: ignore[arg-type]  # codex: "codex-cli 0.171.0"
    (report,) = reports
    diff = report.pair.difference
    assert 0 < diff.shared_bytes < diff.size_a, "two working directories must part somewhere, after a shared head"
    assert report.pair.instructions.found, "the rendered instructions must reach the request"
    assert report.control.passed, report.control.message
    assert report.control.marked_bytes < report.control.same_dir_bytes
    assert report.proxy_attempts == [], "no connection other than to the capture endpoint"
    # where the request's bytes go: the parts add up to the request, the CLI's own tools and prompt are named
    parts = {p.label.split(" (")[0]: p for p in report.request_parts}
    assert sum(p.bytes for p in report.request_parts) == diff.size_a
    assert parts["the CLI's tool definitions"].bytes > 1000 and parts["the CLI's own system prompt"].bytes > 1000
    assert parts["the agent's instructions"].bytes >= report.pair.instructions.size - 200  # JSON escapes differ a little
    # The CLI's own interface (the native mode), started as `run` starts it, against headless run b.
    interactive = report.interactive
    assert interactive is not None and interactive.measured, interactive and interactive.note
    assert interactive.difference is not None and interactive.difference.shared_bytes > 0
    if provider == "claude":  # --permission-prompt-tool stdio headless too: AskUserQuestion in both (13 tools)
        assert interactive.tools_headless == interactive.tools_interactive == 13
    if provider == "gemini":  # gemini-home: in the system instruction, after Gemini's per-project memory path
        assert report.delivery == "gemini-home"
        place = report.pair.instructions
        assert place.inside_bytes == 0 and place.end <= report.control.same_dir_bytes
        assert "cached within this project only; across projects Gemini's own prompt differs before them" in report.verdict
    if provider == "claude":  # the default delivery keeps the whole instructions text in the shared prefix
        assert report.delivery == "system-prompt"
        assert report.pair.instructions.inside_bytes == report.pair.instructions.size


def test_run_with_the_default_delivery_puts_the_instructions_in_the_system_prompt(
    agents_dir: Path, workdir: Path, isolated_home: Path
) -> None:
    binary = ensure_cli("claude")
    write_agent(
        agents_dir,
        "reviewer",
        {"display": "Reviewer", "provider": "claude", "command": str(binary), "working_dir": str(workdir), **AGENTS["claude"]},
    )
    api = FakeAnthropic()
    with api.serve() as server:
        env = claude_env(server.url, isolated_home, {"CLAUDE_CODE_MAX_RETRIES": "0"})
        env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
        done = run_cli_inprocess("run", "reviewer", "hello", env=env, cwd=workdir)
    assert done.returncode == 0, done.stderr.decode()
    instructions = (REPO / "tests" / "golden" / "reviewer.CLAUDE.md").read_text()
    body = api.message_requests()[0].body
    assert instructions.strip() in system_text(body)
    assert not (workdir / "CLAUDE.md").exists()
