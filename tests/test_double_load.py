"""No double loading (issue 13): render leaves nothing in a working directory; a launch says, in one line, what loads twice."""

from __future__ import annotations

import math
from pathlib import Path

import yaml

from agentlaunch.definitions.deliver import deliver
from agentlaunch.launch.double_load import double_loading
from testbed.agent_files import write_agent
from tests.support.cli_runs import run_cli_inprocess

TEXT = b"You are Tester.\n" * 40  # 640 bytes: ~160 tokens


def notice_lines(stderr: bytes) -> list[str]:
    return [line for line in stderr.decode().splitlines() if "double loading" in line]


def test_a_file_with_this_agents_text_is_named_with_its_cost(workdir: Path, tmp_path: Path) -> None:
    (workdir / "CLAUDE.md").write_bytes(TEXT)
    line = double_loading(workdir, TEXT, tmp_path / "state", None)
    assert line is not None and "CLAUDE.md holds this agent's instructions" in line
    assert f"~{math.ceil(len(TEXT) / 4):,} tokens more per call" in line and "\n" not in line


def test_a_file_agentlaunch_wrote_earlier_is_named(workdir: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    deliver(workdir / "AGENTS.md", "another agent's text\n" * 10, "planner", state)
    line = double_loading(workdir, TEXT, state, None)
    assert line is not None and "AGENTS.md was written by agentlaunch (agent 'planner')" in line
    assert "~53 tokens more per call" in line  # 210 bytes


def test_an_edited_file_is_the_users_and_not_named(workdir: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    deliver(workdir / "AGENTS.md", "another agent's text\n", "planner", state)
    (workdir / "AGENTS.md").write_text("the user edited it\n")
    assert double_loading(workdir, TEXT, state, None) is None


def test_the_same_claude_md_and_agents_md_are_named(workdir: Path, tmp_path: Path) -> None:
    (workdir / "CLAUDE.md").write_text("team rules\n" * 8)
    (workdir / "AGENTS.md").write_text("team rules\n" * 8)
    line = double_loading(workdir, TEXT, tmp_path / "state", None)
    assert line is not None and "AGENTS.md repeats CLAUDE.md" in line and "~22 tokens more per call" in line


def test_nothing_is_said_otherwise(workdir: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert double_loading(workdir, TEXT, state, None) is None  # nothing there
    (workdir / "CLAUDE.md").write_text("the repository's own\n")
    (workdir / "AGENTS.md").write_text("different\n")
    (workdir / "GEMINI.md").write_text("also different\n")
    assert double_loading(workdir, TEXT, state, None) is None
    # delivery: file into that same file is the one copy the CLI reads, not a second
    (workdir / "CLAUDE.md").write_bytes(TEXT)
    assert double_loading(workdir, TEXT, state, workdir / "CLAUDE.md") is None


def _demo(agents_dir: Path, **changes: object) -> None:
    path = agents_dir / "demo" / "agent.yaml"
    path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), **changes}))


def test_a_launch_says_it_once_and_only_when_it_applies(agents_dir: Path, workdir: Path, tmp_path: Path) -> None:
    common = ("--working-dir", str(workdir), "--agents-dir", str(agents_dir))
    done = run_cli_inprocess("run", "demo", "hello", *common, cwd=tmp_path)
    assert done.returncode == 0 and notice_lines(done.stderr) == []
    text = run_cli_inprocess("render", "demo", "--stdout", *common, cwd=tmp_path).stdout
    (workdir / "CLAUDE.md").write_bytes(text)
    done = run_cli_inprocess("run", "demo", "hello", *common, cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    lines = notice_lines(done.stderr)
    assert len(lines) == 1 and "CLAUDE.md holds this agent's instructions" in lines[0]
    assert f"~{math.ceil(len(text) / 4):,} tokens more per call" in lines[0]
    assert (workdir / "CLAUDE.md").read_bytes() == text  # said, never touched
    # delivery: file into that CLAUDE.md: it is the delivery itself, nothing loads twice
    (workdir / "CLAUDE.md").unlink()
    _demo(agents_dir, delivery="file")
    done = run_cli_inprocess("run", "demo", "hello", *common, cwd=tmp_path)
    assert done.returncode == 0 and notice_lines(done.stderr) == []


def test_render_leaves_no_instructions_file_in_the_working_directory(agents_dir: Path, workdir: Path, tmp_path: Path) -> None:
    state = tmp_path / "home" / "state"  # the autouse fixture's AGENTLAUNCH_STATE_DIR, passed on explicitly
    env = {"AGENTLAUNCH_STATE_DIR": str(state)}
    done = run_cli_inprocess("render", "reviewer", "--agents-dir", str(agents_dir), cwd=workdir, env=env)
    assert done.returncode == 0, done.stderr.decode()
    assert list(workdir.iterdir()) == []
    target = state / "system-prompts" / "reviewer" / "CLAUDE.md"
    assert target.read_bytes().startswith(b"You are Reviewer")
    assert f"wrote {target}" in done.stderr.decode()
    # a later run of a system-prompt agent here finds nothing to load twice
    write_agent(agents_dir, "rev", {"provider": "fake", "soul": "soul.md"}, {"soul.md": "You are Rev.\n"})
    done = run_cli_inprocess("render", "rev", "--agents-dir", str(agents_dir), cwd=workdir, env=env)
    done = run_cli_inprocess("run", "rev", "hello", "--agents-dir", str(agents_dir), cwd=workdir, env=env)
    assert done.returncode == 0 and notice_lines(done.stderr) == [] and list(workdir.iterdir()) == []
    assert b"I read the system prompt file (" in done.stdout and b"There is no CLAUDE.md" not in done.stdout


def test_render_output_is_an_explicit_target_with_the_ownership_rules(agents_dir: Path, workdir: Path, tmp_path: Path) -> None:
    out = workdir / "CLAUDE.md"
    done = run_cli_inprocess("render", "reviewer", "--output", str(out), "--agents-dir", str(agents_dir), cwd=tmp_path)
    assert done.returncode == 0 and out.read_bytes().startswith(b"You are Reviewer") and f"wrote {out}" in done.stderr.decode()
    out.write_text("now the user's\n")
    done = run_cli_inprocess("render", "reviewer", "--output", str(out), "--agents-dir", str(agents_dir), cwd=tmp_path)
    assert done.returncode == 4 and out.read_text() == "now the user's\n"
    done = run_cli_inprocess(
        "render", "reviewer", "--output", str(out), "--stdout", "--agents-dir", str(agents_dir), cwd=tmp_path
    )
    assert done.returncode == 3 and b"choose one" in done.stderr


def test_render_of_a_file_delivery_agent_writes_into_its_working_dir(agents_dir: Path, workdir: Path, tmp_path: Path) -> None:
    write_agent(agents_dir, "filed", {"provider": "codex", "delivery": "file"})
    done = run_cli_inprocess("render", "filed", "--working-dir", str(workdir), "--agents-dir", str(agents_dir), cwd=tmp_path)
    assert done.returncode == 0 and (workdir / "AGENTS.md").is_file()  # delivery: file, as run writes it


def test_the_fake_cli_reads_its_system_prompt_file_and_fails_clearly_without_it(tmp_path: Path) -> None:
    import subprocess
    import sys

    prompt = tmp_path / "sp.md"
    prompt.write_bytes(b"You are Sys.\r\nmore\n")
    line = b'{"type": "user", "message": {"role": "user", "content": "hi"}}\n'
    argv = [sys.executable, "-m", "agentlaunch.providers.fake_cli", "-p", "--session-id", "s1"]
    done = subprocess.run([*argv, "--append-system-prompt-file", str(prompt)], input=line, capture_output=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert b'I read the system prompt file (19 bytes; its first line is: \\"You are Sys.\\")' in done.stdout
    assert b"There is no CLAUDE.md" not in done.stdout
    done = subprocess.run(
        [*argv[:-1], "s2", "--append-system-prompt-file", str(tmp_path / "gone")], input=line, capture_output=True, cwd=tmp_path
    )
    assert done.returncode == 1 and b"cannot read" in done.stderr and b"Traceback" not in done.stderr
