"""End to end: `agentlaunch run` on a stand-in Claude Code that prints a hostile stream around one valid call."""

from __future__ import annotations

import json
from pathlib import Path

from testbed.agent_files import write_agent
from tests.support import hostile_lines
from tests.support.cli_runs import run_cli, run_cli_inprocess

STAND_IN = Path(__file__).parent / "support" / "hostile_claude.py"


def test_a_hostile_stream_prints_the_answer_once_counts_only_the_valid_call_and_exits_0(agents_dir: Path) -> None:
    write_agent(agents_dir, "hostile", {"provider": "claude", "model": hostile_lines.MODEL, "command": str(STAND_IN)})
    done = run_cli("run", "hostile", "hello", "--agents-dir", str(agents_dir), cwd=agents_dir.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == hostile_lines.ANSWER + "\n"  # once, though its assistant line came twice
    assert b"\x1b" not in done.stdout + done.stderr and b"\x07" not in done.stderr
    assert b"Traceback" not in done.stderr
    assert done.stderr.count(b"ignored the usage of claude call") == 13
    assert b"\\x1b]0;PWNED" in done.stderr  # the hostile tool name, made visible

    listed = run_cli_inprocess("sessions", "--json")
    (session,) = json.loads(listed.stdout)
    assert session["agent"] == "hostile" and session["turns"] == 1
    stored = run_cli_inprocess("usage", "--session", session["session_id"], "--calls", "--json")
    (call,) = json.loads(stored.stdout)
    assert (call["input"], call["cache_write"], call["cache_read"]) == (12, 5000, 9000)
    assert call["output"] == hostile_lines.BILLED_OUTPUT  # the result's figure, not the assistant line's 5
    assert call["model"] == hostile_lines.MODEL
