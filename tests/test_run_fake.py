"""Headless `agentlaunch run` on the offline fake provider: stdout, stderr and the exit code are the whole contract.

Each ``run`` goes through click in the test's process (:func:`run_cli_inprocess`: the same command, exit code and
output, without a Python start per run); the fake CLI it launches is a real process. A prompt read from stdin goes
through a real ``agentlaunch`` process and a real pipe (:func:`run_process`); tests/test_scripting.py holds the same
contract (stdout, stderr, exit codes, no terminal) for real processes.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cli_runs import run_cli, run_cli_inprocess

FOOTER = re.compile(r"tokens in [\d,]+ · out [\d,]+ · cache r [\d,]+/w [\d,]+")
STARTUP_SEEN = "Startup message received"


def run(agents_dir: Path, *args: str, input: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return run_cli_inprocess("run", *args, "--agents-dir", str(agents_dir), input=input, cwd=cwd or agents_dir.parent)


def run_process(agents_dir: Path, *args: str, input: bytes) -> subprocess.CompletedProcess[bytes]:
    """``run`` as a real process, its prompt written to its stdin's pipe."""
    return run_cli("run", *args, "--agents-dir", str(agents_dir), input=input, cwd=agents_dir.parent)


def text(data: bytes) -> str:
    return data.decode("utf-8")


def sessions() -> list[dict[str, Any]]:
    done = run_cli_inprocess("sessions", "--json")
    assert done.returncode == 0, done.stderr
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    return rows


def set_command(agents_dir: Path, command: str) -> None:
    path = agents_dir / "demo" / "agent.yaml"
    config = yaml.safe_load(path.read_text())
    config["command"] = command
    path.write_text(yaml.safe_dump(config, sort_keys=False))


# -- output channels ------------------------------------------------------


def test_stdout_is_exactly_the_answer_and_the_footer_goes_to_stderr(agents_dir: Path) -> None:
    done = run(agents_dir, "demo", "hello")
    assert done.returncode == 0, done.stderr
    out = text(done.stdout)
    assert out.startswith("Fake provider here, turn 1.")
    assert out.endswith('You said: "hello"\n')
    assert out.count("\n") == 1  # one answer line, no banner, no footer, no notices
    assert "tokens in" not in out
    assert FOOTER.search(text(done.stderr))


def test_quiet_drops_the_footer(agents_dir: Path) -> None:
    done = run(agents_dir, "demo", "--quiet", "hello")
    assert done.returncode == 0, done.stderr
    assert 'You said: "hello"' in text(done.stdout)
    assert not FOOTER.search(text(done.stderr))


def test_json_prints_one_normalized_event_per_line(agents_dir: Path) -> None:
    done = run(agents_dir, "demo", "--json", "hello")
    assert done.returncode == 0, done.stderr
    lines = text(done.stdout).splitlines()
    events = [json.loads(line) for line in lines]  # every line parses
    assert events and all(isinstance(e, dict) and "event" in e for e in events)
    kinds = [e["event"] for e in events]
    assert kinds[0] == "session"
    assert kinds[-1] == "turn_end"
    assert "text_delta" in kinds and "usage" in kinds
    assert 'You said: "hello"' in events[-1]["result"]
    assert not FOOTER.search(text(done.stderr))  # the footer would break nothing, but scripts asked for JSON


def test_prompt_from_the_p_option(agents_dir: Path) -> None:
    done = run(agents_dir, "demo", "-p", "from the option")
    assert done.returncode == 0, done.stderr
    assert 'You said: "from the option"' in text(done.stdout)


def test_prompt_from_stdin_with_dash(agents_dir: Path) -> None:
    done = run_process(agents_dir, "demo", "-", input="from stdin ✓\n".encode())
    assert done.returncode == 0, done.stderr
    assert 'You said: "from stdin ✓"' in text(done.stdout)


def test_a_one_megabyte_prompt_goes_through(agents_dir: Path) -> None:
    prompt = "0123456789" * 100_000
    done = run_process(agents_dir, "demo", "-", input=prompt.encode())
    assert done.returncode == 0, done.stderr
    assert f'You said: "{prompt[:200]}"' in text(done.stdout)  # the fake echoes the first 200 characters


# -- sessions and the startup message -------------------------------------


def test_startup_message_reaches_a_new_session_only(agents_dir: Path) -> None:
    first = run(agents_dir, "demo", "hello")
    assert first.returncode == 0, first.stderr
    assert STARTUP_SEEN in text(first.stdout)

    again = run(agents_dir, "demo", "-c", "and again")
    assert again.returncode == 0, again.stderr
    assert "turn 2." in text(again.stdout)
    assert STARTUP_SEEN not in text(again.stdout)

    (row,) = sessions()
    by_id = run(agents_dir, "demo", "-r", row["session_id"], "third")
    assert by_id.returncode == 0, by_id.stderr
    assert "turn 3." in text(by_id.stdout)
    assert STARTUP_SEEN not in text(by_id.stdout)


def test_sessions_json_lists_the_session_with_its_turns(agents_dir: Path) -> None:
    assert run(agents_dir, "demo", "one").returncode == 0
    assert run(agents_dir, "demo", "-c", "two").returncode == 0
    (row,) = sessions()
    assert row["agent"] == "demo"
    assert row["provider"] == "fake"
    assert row["model"] == "fake-1"
    assert row["turns"] == 2
    assert row["exit_status"] == 0
    assert re.fullmatch(r"[0-9a-f-]{36}", row["session_id"])


def test_resume_of_an_unknown_id_fails_clearly_and_records_nothing(agents_dir: Path) -> None:
    done = run(agents_dir, "demo", "-r", "no-such-session", "hello")
    assert done.returncode != 0
    err = text(done.stderr)
    assert "error:" in err
    assert "no-such-session" in err  # the provider's own reason is passed on
    assert done.stdout == b""
    assert sessions() == []


# -- exit codes -----------------------------------------------------------


def test_a_failed_turn_exits_1_with_the_reason_on_stderr(agents_dir: Path) -> None:
    done = run(agents_dir, "demo", "/fail")
    assert done.returncode == 1
    assert "fake failure requested with /fail" in text(done.stderr)
    assert "fake failure" not in text(done.stdout)


def test_an_empty_prompt_exits_2(agents_dir: Path) -> None:
    done = run(agents_dir, "demo", "   ")
    assert done.returncode == 2
    assert "empty" in text(done.stderr)


def test_a_non_utf8_prompt_on_stdin_exits_2(agents_dir: Path) -> None:
    done = run_process(agents_dir, "demo", "-", input=b"caf\xe9\n")
    assert done.returncode == 2
    assert "not valid UTF-8" in text(done.stderr)
    assert sessions() == []


def test_an_unknown_agent_exits_3(agents_dir: Path) -> None:
    done = run(agents_dir, "nosuch", "hello")
    assert done.returncode == 3
    assert "nosuch" in text(done.stderr)


def set_delivery(agents_dir: Path, delivery: str) -> None:
    path = agents_dir / "demo" / "agent.yaml"
    config = yaml.safe_load(path.read_text())
    config["delivery"] = delivery
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def test_the_users_own_claude_md_is_left_alone_and_exits_4(agents_dir: Path, workdir: Path) -> None:
    # delivery: file (the opt-in) keeps today's ownership rules: the user's CLAUDE.md is refused, untouched.
    set_delivery(agents_dir, "file")
    mine = workdir / "CLAUDE.md"
    original = b"# my own notes\r\nkeep me \xe2\x9c\x93\n"
    mine.write_bytes(original)
    done = run(agents_dir, "demo", "--working-dir", str(workdir), "hello")
    assert done.returncode == 4
    assert "CLAUDE.md" in text(done.stderr)
    assert mine.read_bytes() == original
    assert sorted(p.name for p in workdir.iterdir()) == ["CLAUDE.md"]


def test_by_default_the_users_claude_md_is_read_beside_the_system_prompt_and_never_touched(
    agents_dir: Path, workdir: Path
) -> None:
    mine = workdir / "CLAUDE.md"
    original = b"# my own notes\r\nkeep me \xe2\x9c\x93\n"
    mine.write_bytes(original)
    done = run(agents_dir, "demo", "--working-dir", str(workdir), "hello")
    assert done.returncode == 0, text(done.stderr)
    answer = text(done.stdout)
    assert "I read the system prompt file (" in answer and '"You are Demo Agent' in answer
    assert f"I read CLAUDE.md ({len(original)} bytes;" in answer
    assert mine.read_bytes() == original
    assert sorted(p.name for p in workdir.iterdir()) == ["CLAUDE.md"]
    assert "double loading" not in text(done.stderr)  # the repository's own file is not the agent's text


def test_a_missing_provider_binary_exits_127_with_a_hint(agents_dir: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "claude"
    set_command(agents_dir, str(missing))
    done = run(agents_dir, "demo", "hello")
    assert done.returncode == 127
    err = text(done.stderr)
    assert str(missing) in err
    assert "hint:" in err


def test_timeout_ends_a_slow_turn_with_124(agents_dir: Path) -> None:
    done = run(agents_dir, "demo", "--timeout", "1", "/slow")
    assert done.returncode == 124
    assert "longer than 1s" in text(done.stderr)


# -- context and compaction -----------------------------------------------


def test_compaction_warning_is_shown_once_past_the_threshold(agents_dir: Path) -> None:
    # demo: context_window 60,000, default buffer 33,000 -> threshold 27,000.
    below = run(agents_dir, "demo", "/big 20000")
    assert below.returncode == 0, below.stderr
    assert "compaction threshold" not in text(below.stderr)

    # /tool makes two model calls, both past the threshold: one warning.
    above = run(agents_dir, "demo", "-c", "/big 30000 /tool")
    assert above.returncode == 0, above.stderr
    err = text(above.stderr)
    assert err.count("passed the compaction threshold 27,000") == 1
    assert "of 60,000" in err
    # what is true past the threshold: how far past it, and that the CLI may compact now (not the window's remainder)
    context = int(err.split("context ", 1)[1].split(" of ", 1)[0].replace(",", ""))
    assert f"27,000 by {context - 27_000:,}: the CLI may compact the conversation at any call" in err
    assert "left before" not in err
    assert "compaction" not in text(above.stdout)


@pytest.mark.parametrize("flag", ["--json", "--quiet"])
def test_compaction_warning_stays_off_stdout(agents_dir: Path, flag: str) -> None:
    done = run(agents_dir, "demo", flag, "/big 40000")
    assert done.returncode == 0, done.stderr
    assert "compaction threshold" in text(done.stderr)
    assert "compaction threshold" not in text(done.stdout)
