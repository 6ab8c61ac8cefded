"""The prefix doctor: static check, serialization and comparison, the live pipeline on a stand-in CLI, launch notices."""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.definitions.fingerprint import cli_version, launch_flags, prefix_notice, record_prefix
from agentlaunch.definitions.render import render_instructions
from agentlaunch.definitions.spec import load_agent
from agentlaunch.errors import DefinitionError, ProviderMissing, TurnFailed, TurnTimeout
from agentlaunch.launch.placement import place_instructions
from agentlaunch.prefix import live as doctor_live
from agentlaunch.prefix.live import live_check
from agentlaunch.prefix.static import common_prefix, compare, place_instructions_in, serialize, static_check
from testbed.agent_files import write_agent
from tests.support.cli_runs import run_cli, run_cli_inprocess

FAKE_CLAUDE = Path(__file__).parent / "support" / "doctor" / "fake_claude.py"
TODAY = date(2026, 3, 4)


def fake_claude_agent(agents_dir: Path, name: str = "reviewer", **extra: object) -> str:
    config: dict[str, object] = {
        "provider": "claude",
        "model": "claude-fake",
        "bundles": ["house-style", "security-basics"],
        "skills": ["git-hygiene", "code-review"],
        "command": str(FAKE_CLAUDE),
        **extra,
    }
    write_agent(agents_dir, name, config)
    return name


# -- static check -------------------------------------------------------------------


@pytest.mark.parametrize("agent", ["demo", "planner", "reviewer"])
def test_the_example_agents_are_stable(agents_dir: Path, agent: str) -> None:
    report = static_check(agents_dir, agent, today=TODAY)
    assert report.ok and report.volatile == ()
    assert report.stable_bytes == report.size and report.verdict.startswith("stable")


def test_volatile_variables_are_reported_with_their_byte_offsets(agents_dir: Path) -> None:
    soul = "You are Dated.\nToday is {{DATE}}.\n"
    write_agent(
        agents_dir,
        "dated",
        {"provider": "claude", "bundles": ["house-style"]},
        {"soul.md": soul, "agent.md": "Work in {{WORKING_DIR}}.\n"},
    )
    report = static_check(agents_dir, "dated", today=TODAY)
    text = render_instructions(load_agent(agents_dir, "dated"), Path("/doctor/session-a/work"), TODAY).text
    date_at = text.encode().index(b"2026-03-04")
    dir_at = text.encode().index(b"/doctor/session-a/work")
    hits = {(h.variable, h.section): h.offset for h in report.volatile}
    # the differing region starts where the two values first differ (the day digit, the folder name)
    assert date_at <= hits["DATE", "soul"] < date_at + 10
    assert dir_at <= hits["WORKING_DIR", "agent instructions"] < dir_at + 22
    assert not report.ok and report.stable_bytes == min(hits.values())
    assert report.stable_tokens == -(-report.stable_bytes // 4)
    assert "{{DATE}}" in report.verdict and "soul" in report.verdict


def test_a_pinned_working_dir_is_not_volatile(agents_dir: Path, tmp_path: Path) -> None:
    write_agent(
        agents_dir, "pinned", {"provider": "claude", "working_dir": str(tmp_path)}, {"soul.md": "Home: {{WORKING_DIR}}\n"}
    )
    report = static_check(agents_dir, "pinned", today=TODAY)
    assert report.ok and report.volatile and all(h.pinned for h in report.volatile)


def test_cross_agent_shared_prefix_grows_with_shared_first(agents_dir: Path) -> None:
    write_agent(
        agents_dir, "second", {"provider": "claude", "bundles": ["house-style", "security-basics"]}, {"soul.md": "I am second.\n"}
    )
    report = static_check(agents_dir, "reviewer", today=TODAY)
    other = next(c for c in report.cross if c.agent == "second")
    bundles = (agents_dir / "bundles" / "house-style.md").read_text().strip()
    assert other.same_provider and other.shared_bundles == ("house-style", "security-basics")
    assert other.own_first_bytes < 20  # the two souls differ at once
    assert other.shared_first_bytes > len(bundles)


def test_shared_first_puts_bundles_and_skills_before_the_soul(agents_dir: Path) -> None:
    write_agent(agents_dir, "reviewer", {**_reviewer_yaml(agents_dir), "prefix_order": "shared-first"})
    text = render_instructions(load_agent(agents_dir, "reviewer"), Path("/w"), TODAY).text
    assert (
        text.index("# House style")
        < text.index("# Security basics")
        < text.index("# Available Skills")
        < text.index("You are Reviewer")
    )
    assert text.endswith("request changes.\n")


def _reviewer_yaml(agents_dir: Path) -> dict[str, object]:
    import yaml

    data = yaml.safe_load((agents_dir / "reviewer" / "agent.yaml").read_text())
    assert isinstance(data, dict)
    return data


def test_an_agent_whose_definition_does_not_render_is_exit_3(agents_dir: Path) -> None:
    write_agent(agents_dir, "broken", {"provider": "claude"}, {"soul.md": "Hello {{ NOPE }}\n"})
    done = run_cli_inprocess("doctor", "broken", "--agents-dir", str(agents_dir))
    assert done.returncode == 3
    assert b"NOPE" in done.stderr and b"soul.md" in done.stderr


def test_system_prompt_delivery_is_for_claude_only(agents_dir: Path) -> None:
    write_agent(agents_dir, "planner", {"provider": "codex", "delivery": "system-prompt"})
    with pytest.raises(DefinitionError, match="delivery: 'system-prompt' is supported for provider claude and fake only"):
        load_agent(agents_dir, "planner")


def test_default_delivery_is_system_prompt_for_claude_developer_instructions_for_codex_else_a_file(
    agents_dir: Path,
) -> None:
    assert load_agent(agents_dir, "reviewer").delivery == "system-prompt"
    assert load_agent(agents_dir, "planner").delivery == "developer-instructions"
    assert load_agent(agents_dir, "demo").delivery == "system-prompt"  # fake as claude (issue 13)


def test_system_prompt_delivery_writes_into_the_state_dir_and_passes_the_flag(
    agents_dir: Path, workdir: Path, tmp_path: Path
) -> None:
    spec = load_agent(agents_dir, "reviewer")
    placed = place_instructions(spec, workdir, tmp_path / "state", TODAY, hold=False)
    assert placed.path == tmp_path / "state" / "system-prompts" / "reviewer" / "CLAUDE.md"
    # the reviewer lists skills: Claude Code gets a folder of its own that links them (docs/agents.md, Skills)
    assert placed.argv == ["--append-system-prompt-file", str(placed.path)]
    assert placed.env["CLAUDE_CONFIG_DIR"] == str(tmp_path / "state" / "claude-homes" / "reviewer")
    assert placed.path.read_text() == placed.rendered.text and list(workdir.iterdir()) == []


# -- serialization and comparison ---------------------------------------------------------


def anthropic_body(cwd: str, instructions: str) -> dict[str, object]:
    return {
        "model": "m",
        "metadata": {"user_id": "session-" + cwd},  # not part of the prefix order
        "tools": [{"name": "Bash", "description": "run"}, {"name": "Read", "description": "read"}],
        "system": [{"type": "text", "text": "You are Claude."}, {"type": "text", "text": instructions}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": f"cwd {cwd}\nmore"}, {"type": "text", "text": "hi"}]}],
    }


def test_two_requests_part_at_the_first_differing_byte_with_its_section_and_context() -> None:
    a = serialize("anthropic", anthropic_body("/tmp/a", "Be careful."))
    b = serialize("anthropic", anthropic_body("/tmp/b", "Be careful."))
    diff = compare(a, b)
    assert a.data[: diff.shared_bytes] == b.data[: diff.shared_bytes] and a.data[diff.shared_bytes] != b.data[diff.shared_bytes]
    assert diff.section_a == "message 0 (user) / content part 0"
    assert diff.before.endswith("cwd /tmp/") and diff.after_a.startswith("a") and diff.after_b.startswith("b")
    assert [s.label for s in a.segments][:4] == ["tool 0 (Bash)", "tool 1 (Read)", "system block 0", "system block 1"]
    place = place_instructions_in(a, "Be careful.\n", diff.shared_bytes)
    assert place.found and place.section == "system block 1" and place.inside_bytes == place.size == len("Be careful.")


def test_responses_and_gemini_bodies_follow_their_prefix_order() -> None:
    responses = {
        "input": [{"type": "message", "id": "msg_1", "role": "user", "content": [{"type": "input_text", "text": "x"}]}],
        "tools": [{"type": "function", "name": "exec"}],
        "instructions": "sys",
    }
    labels = [s.label for s in serialize("responses", responses).segments]
    assert labels == ["tool 0 (exec)", "instructions", "message 0 (user)", "message 0 (user) / content part 0"]
    assert b"msg_1" not in serialize("responses", responses).data  # item ids are not model input
    gemini = {
        "contents": [{"role": "user", "parts": [{"text": "a"}, {"text": "b"}]}],
        "systemInstruction": {"parts": [{"text": "s"}]},
        "tools": [{"functionDeclarations": [{"name": "read_file"}, {"name": "ls"}]}],
    }
    labels = [s.label for s in serialize("gemini", gemini).segments]
    assert (
        labels[:3] == ["tool 0 (read_file)", "tool 1 (ls)", "system part 0"] and labels[-1] == "message 0 (user) / content part 1"
    )


def test_common_prefix() -> None:
    assert common_prefix(b"abcdef", b"abcxef") == 3
    assert common_prefix(b"abc", b"abc") == 3 and common_prefix(b"", b"x") == 0 and common_prefix(b"ab", b"abc") == 2


# -- the live pipeline on a stand-in CLI -----------------------------------------------------


def test_live_check_compares_two_sessions_its_control_passes_and_the_plain_output_fits_one_screen(
    agents_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`doctor --live` on the stand-in, its capture port busy: the report (kept by a wrapper of live_check) and
    what it printed. One live check read for every fact of it (it was six tests, one live check each)."""
    fake_claude_agent(agents_dir)
    reports: list[Any] = []

    def kept(*args: Any, **kwargs: Any) -> Any:
        reports.append(live_check(*args, **kwargs))
        return reports[-1]

    monkeypatch.setattr(doctor_live, "live_check", kept)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run_cli_inprocess(
            "doctor", "reviewer", "--live", "--port", str(port), "--timeout", "30", "--agents-dir", str(agents_dir)
        )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    assert len(lines) <= 24 and all(len(line) <= 160 for line in lines)
    assert any(line.startswith("control") and "passed" in line for line in lines)
    assert any(line.startswith("interactive skipped: started as its interface") for line in lines), lines
    (report,) = reports
    # A busy capture port: another one is taken.
    assert report.port_note is not None and f"port {port} is busy" in report.port_note
    d = report.pair.difference
    assert d.section_a == "message 0 (user) / content part 0"
    assert d.after_a.startswith("a/project-a") and d.after_b.startswith("b/project-b")
    assert report.pair.instructions.found and report.pair.instructions.section == "system block 1"
    assert report.pair.instructions.inside_bytes == report.pair.instructions.size  # system-prompt delivery: all shared
    assert report.control.passed and report.control.marked_bytes < report.control.same_dir_bytes
    assert report.proxy_attempts == [] and report.cli_version == "9.9.9 (Fake Claude)"
    size = report.pair.instructions.size
    assert report.verdict == f"claude: all {size:,} bytes of the instructions are cached across projects"
    # A CLI whose own prompt holds still is not called unstable.
    assert report.control.unstable_at is None
    assert "run to run" not in report.control.message + report.verdict
    # The stand-in is headless only: started as its interface it exits at once, and the doctor does not wait it out.
    i = report.interactive
    assert i is not None and i.no_interface and not i.measured
    assert "exited (code 2) before any request" in i.note and "no interactive interface" in i.note, i.note


def test_file_delivery_puts_the_instructions_after_the_first_difference(agents_dir: Path) -> None:
    fake_claude_agent(agents_dir, delivery="file")
    report = live_check(agents_dir, "reviewer", timeout=30)
    assert report.pair.instructions.found and report.pair.instructions.inside_bytes == 0
    assert report.control.passed  # the same-directory control still sees the marker
    assert report.verdict.startswith("claude: the instructions are cached within this project only; across projects")
    assert report.verdict.endswith("; try `delivery: system-prompt`")


def test_a_cli_whose_own_prompt_changes_from_run_to_run_is_named_and_the_control_still_measures(
    agents_dir: Path, tmp_path: Path
) -> None:
    # Runs a, b, the plain replica, the marked one, one more plain: the stand-in's own prompt alternates its
    # two skills, so b and the replica part before the marker; the third plain run agrees with the replica.
    counter = tmp_path / "runs"
    fake_claude_agent(agents_dir, env={"FAKE_CLAUDE_MODE": "skills-in-no-order", "FAKE_CLAUDE_COUNTER": str(counter)})
    report = live_check(agents_dir, "reviewer", timeout=30)
    control = report.control
    assert counter.read_text() == "5", "one more plain run, only because two plain ones parted early"
    assert control.passed, control.message
    assert control.unstable_at is not None and control.unstable_at < (control.marker_offset or 0)
    assert control.unstable_section == "system block 0"
    assert control.marked_bytes < control.same_dir_bytes and control.same_dir_bytes > (control.marker_offset or 0)
    assert f"two plain sessions parted at byte {control.unstable_at:,} (system block 0)" in control.message
    assert "the CLI's own prompt is not the same from run to run there" in report.verdict


def test_a_connection_attempt_through_the_proxy_is_reported(agents_dir: Path) -> None:
    fake_claude_agent(agents_dir, env={"FAKE_CLAUDE_MODE": "phone-home"})
    report = live_check(agents_dir, "reviewer", timeout=30)
    assert any(a.startswith("CONNECT example.invalid:443") for a in report.proxy_attempts)


def test_a_cli_that_never_calls_the_endpoint_times_out_clearly(agents_dir: Path) -> None:
    fake_claude_agent(agents_dir, env={"FAKE_CLAUDE_MODE": "sleep"})
    with pytest.raises(TurnTimeout, match=r"did not call the capture endpoint within 1\.5s"):
        live_check(agents_dir, "reviewer", timeout=1.5)
    done = run_cli_inprocess("doctor", "reviewer", "--live", "--timeout", "1", "--agents-dir", str(agents_dir))
    assert done.returncode == 124 and b"did not call the capture endpoint" in done.stderr


def test_a_cli_that_errors_says_so(agents_dir: Path) -> None:
    fake_claude_agent(agents_dir, env={"FAKE_CLAUDE_MODE": "fail"})
    with pytest.raises(TurnFailed, match=r"exited with code 1 before calling the capture endpoint.*told to fail"):
        live_check(agents_dir, "reviewer", timeout=30)
    done = run_cli_inprocess("doctor", "reviewer", "--live", "--agents-dir", str(agents_dir))
    assert done.returncode == 1 and b"told to fail" in done.stderr


def test_a_missing_cli_is_exit_127_with_a_hint(agents_dir: Path, tmp_path: Path) -> None:
    fake_claude_agent(agents_dir, command=str(tmp_path / "no-such-claude"))
    with pytest.raises(ProviderMissing):
        live_check(agents_dir, "reviewer")
    done = run_cli_inprocess("doctor", "reviewer", "--live", "--agents-dir", str(agents_dir))
    assert done.returncode == 127 and b"npm install -g @anthropic-ai/claude-code" in done.stderr


def test_a_broken_measurement_exits_non_zero(agents_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_claude_agent(agents_dir)
    # A capture that loses the marker (as a broken serializer would) must fail the control.
    monkeypatch.setattr(doctor_live, "marked_copy", lambda spec, root, marker: spec.agents_dir)
    report = live_check(agents_dir, "reviewer", timeout=30)
    assert not report.ok and "measurement is broken" in report.control.message


def test_doctor_json_has_static_and_live(agents_dir: Path) -> None:
    fake_claude_agent(agents_dir)
    done = run_cli_inprocess("doctor", "reviewer", "--live", "--json", "--agents-dir", str(agents_dir))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["static"]["ok"] and data["live"]["ok"] and data["live"]["control"]["passed"]
    assert data["live"]["pair"]["difference"]["shared_bytes"] > 0


# -- at every launch ----------------------------------------------------------------------


def test_prefix_changes_are_named_once_and_silence_when_unchanged(agents_dir: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    argv = [str(FAKE_CLAUDE), "-p", "--session-id", "S1", "--model", "m"]

    def check() -> str | None:
        spec = load_agent(agents_dir, "reviewer")
        rendered = render_instructions(spec, tmp_path, TODAY)
        return prefix_notice(record_prefix(spec, rendered, None, str(FAKE_CLAUDE), argv, "S1", state).changed)

    assert check() is None  # the first launch has nothing to compare with
    assert check() is None
    (agents_dir / "reviewer" / "soul.md").write_text("A new soul.\n")
    (agents_dir / "bundles" / "house-style.md").write_text("# House style\n\nShorter.\n")
    notice = check()
    assert notice is not None and "soul, bundle house-style" in notice and "cache-write price" in notice
    assert check() is None
    argv[-1] = "other-model"
    assert (notice := check()) is not None and "(flags)" in notice


def test_launch_flags_leave_out_the_session() -> None:
    assert launch_flags(["claude", "-p", "--session-id", "X", "--model", "m"], "X") == ["-p", "--model", "m"]
    assert launch_flags(["claude", "-p", "--resume", "X", "--model", "m"], "X") == ["-p", "--model", "m"]


def test_cli_version_is_cached_per_binary_until_it_changes(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    script = tmp_path / "cli"
    script.write_text(
        f"#!{sys.executable}\nimport pathlib\np = pathlib.Path({str(counter)!r})\n"
        "p.write_text(str(int(p.read_text()) + 1) if p.exists() else '1')\nprint('1.0.0')\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    assert cli_version(str(script), tmp_path) == "1.0.0"
    assert cli_version(str(script), tmp_path) == "1.0.0"
    assert counter.read_text() == "1"
    script.write_text(script.read_text().replace("1.0.0", "1.0.1"))
    os.utime(script, ns=(1, 10**18))
    assert cli_version(str(script), tmp_path) == "1.0.1" and counter.read_text() == "2"


def test_run_prints_one_line_when_the_prefix_changed(agents_dir: Path, workdir: Path) -> None:
    env = {"AGENTLAUNCH_AGENTS_DIR": str(agents_dir)}
    first = run_cli("run", "demo", "hello", cwd=workdir, env=env)
    second = run_cli("run", "demo", "hello", cwd=workdir, env=env)
    assert first.returncode == 0 and second.returncode == 0
    assert b"prefix changed" not in first.stderr + second.stderr
    (agents_dir / "demo" / "agent.md").write_text("New instructions.\n")
    third = run_cli("run", "demo", "hello", cwd=workdir, env=env)
    lines = [line for line in third.stderr.decode().splitlines() if "prefix changed" in line]
    assert len(lines) == 1 and "(agent instructions)" in lines[0] and "cache-write price" in lines[0]


def test_a_resume_whose_cli_resends_its_recorded_prompt_holds_an_edit_instead_of_changing_the_prefix(
    agents_dir: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    argv = [str(FAKE_CLAUDE), "--model", "m"]

    def launch(soul: str, sid: str, *, resumed: bool, recorded: bool = True) -> tuple[list[str], list[str]]:
        (agents_dir / "reviewer" / "soul.md").write_text(soul)
        spec = load_agent(agents_dir, "reviewer")
        rendered = render_instructions(spec, tmp_path, TODAY)
        report = record_prefix(
            spec, rendered, None, str(FAKE_CLAUDE), argv, sid, state, resumed=resumed, recorded_prompt=recorded
        )
        return report.changed, report.held

    assert launch("old soul", "S1", resumed=False) == ([], [])
    assert launch("new soul", "S1", resumed=True) == ([], ["soul"])  # the request is the recorded one: no change
    assert launch("new soul", "S2", resumed=False) == (["soul"], [])  # a new session sends the edit
    assert launch("new soul", "S1", resumed=True) == (["soul"], ["soul"])  # S1's record again, after S2's text
    assert launch("new soul", "S1", resumed=True, recorded=False) == (["soul"], [])  # the snapshot off: sent
    assert launch("new soul", "S1", resumed=True) == (["soul"], ["soul"])  # ...and not recorded
