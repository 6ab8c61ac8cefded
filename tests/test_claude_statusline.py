"""The status-line command of a native Claude launch, run as Claude Code runs it (JSON recorded on 2.1.332)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch.providers.native.claude_settings import STATUSLINE
from agentlaunch.providers.native.claude_statusline import ours
from agentlaunch.providers.native.hook_socket import HookSocket, script_argv
from tests.support.waits import wait_for

DATA = Path(__file__).parent / "data" / "claude_tui"


def recorded_status_lines(name: str) -> list[dict[str, object]]:
    reports = [json.loads(line) for line in (DATA / name / "reports.jsonl").read_text().splitlines()]
    return [r["payload"] for r in reports if r["event"] == "statusline"]


LAST = recorded_status_lines("tool_turn")[-1]  # after the second call: 6 + 120 + 13,000 in context, cache warm 5m
RECORD = {"window": 200_000, "window_source": "provider", "context": 13_015, "to_compaction": 153_985, "cost": "$0.0159"}


@pytest.fixture
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="alsl-") as name:  # short: it holds a socket
        yield Path(name)


def run_line(
    folder: Path, stdin: bytes, user: str | None = None, record: object = RECORD, timeout: float = 1.0, sock: bool = True
) -> tuple[str, float]:
    status = folder / "status.json"
    status.write_text(json.dumps(record) if not isinstance(record, str) else record)
    config = folder / "statusline.json"
    config.write_text(
        json.dumps(
            {
                "socket": str(folder / "s.sock") if sock else None,
                "status": str(status),
                "user_command": user,
                "user_timeout": timeout,
            }
        )
    )
    begun = time.monotonic()
    # As Claude Code runs it: the command agentlaunch's settings give (the script imported, not compiled each run).
    done = subprocess.run(
        script_argv(sys.executable, STATUSLINE, str(config)), input=stdin, capture_output=True, timeout=30, check=False
    )
    assert done.returncode == 0 and done.stderr == b""
    return done.stdout.decode(), time.monotonic() - begun


def test_recorded_json_gives_context_window_compaction_cost_and_cache() -> None:
    now = float(LAST["prompt_cache"]["expires_at"]) - 272  # type: ignore[index]
    assert ours(LAST, RECORD, now) == "ctx 13,126/200k (6.6%) · 153,874 to compaction · $0.0159 · cache warm 4m32s of 5m"


def test_past_the_threshold_the_line_is_marked_and_without_a_record_claudes_figures_are_used() -> None:
    near = {**RECORD, "to_compaction": 10}  # threshold 13,025: the live context 13,126 is past it
    assert ours(LAST, near, 0.0).startswith("⚠ ctx 13,126/200k (6.6%) · past compaction threshold · $0.0159")
    past = {**RECORD, "context": 13_126, "to_compaction": -200}  # the record already past it, too
    assert ours(LAST, past, 0.0).startswith("⚠ ctx 13,126/200k (6.6%) · past compaction threshold · $0.0159")
    # The window from Claude's JSON, and its own cost figure, said to be its.
    assert ours(LAST, {}, 2e9) == "ctx 13,126/200k (6.6%) · $0.0159 by Claude's count · cache warm"
    assert ours({}, {}, 0.0) == "ctx 0"
    assert ours({"context_window": "x", "prompt_cache": [1]}, {"window": "y", "cost": 5}, 0.0) == "ctx 0"


def test_it_reports_the_json_to_the_socket_and_prints_the_users_line_first(folder: Path) -> None:
    hooks = HookSocket(folder / "s.sock")
    try:
        out, _ = run_line(folder, json.dumps(LAST).encode(), user="echo mine; echo second")
        (report,) = hooks.receive()
    finally:
        hooks.close()
    assert report.event == "statusline" and report.payload["session_id"] == LAST["session_id"]
    assert out.startswith("mine │ ctx 13,126/200k (6.6%) · 153,874 to compaction · $0.0159")
    assert out.count("\n") == 1


def test_the_users_command_gets_the_same_stdin(folder: Path) -> None:
    out, _ = run_line(
        folder, json.dumps(LAST).encode(), user="python3 -c 'import json,sys; print(json.load(sys.stdin)[\"version\"])'"
    )
    assert out.startswith("2.1.332 │ ctx")


def test_a_failing_user_status_line_is_noted_and_ours_still_shows(folder: Path) -> None:
    out, _ = run_line(folder, json.dumps(LAST).encode(), user="exit 3", sock=False)
    assert out.startswith("(your status line failed: exit 3) │ ctx 13,126/200k")
    out, _ = run_line(folder, json.dumps(LAST).encode(), user="/no/such/program")
    assert "(your status line failed: exit 127) │ ctx 13,126" in out


def test_a_hanging_user_status_line_is_cut_off_with_its_children(folder: Path) -> None:
    marker = folder / "child-alive"
    # The shell's child holds stdout open: only killing the process group ends the wait.
    user = f"sleep 30 & echo $! > {marker}; wait"
    out, took = run_line(folder, json.dumps(LAST).encode(), user=user, timeout=0.5)
    assert out.startswith("(your status line timed out after 0.5s) │ ctx 13,126/200k")
    assert took < 20  # bounded by the timeout, not by the 30 s sleep (a bound, not a timing measure)
    pid = int(marker.read_text())

    def ended() -> bool:
        try:
            return "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
        except FileNotFoundError:
            return True

    # Within 5 s: the child itself would end after its 30 s sleep.
    wait_for(ended, 5, "the user's status-line child to end with its timeout", every=0.1)


def bounded_run_line(folder: Path, user: str, timeout: float = 5.0) -> str:
    """run_line with the status line's memory capped at 256 MiB: a command that prints without end cannot be
    buffered whole (an unbounded read dies of MemoryError, which the test sees as a traceback on stderr)."""
    status = folder / "status.json"
    status.write_text(json.dumps(RECORD))
    config = folder / "statusline.json"
    config.write_text(json.dumps({"socket": None, "status": str(status), "user_command": user, "user_timeout": timeout}))
    cap = "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (256 << 20, 256 << 20)); "
    run = f"sys.argv = [{str(STATUSLINE)!r}, {str(config)!r}]; import runpy; runpy.run_path(sys.argv[0], run_name='__main__')"
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", cap + run],
        input=json.dumps(LAST).encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == b"", done.stderr[-2000:]
    return done.stdout.decode()


def test_a_user_status_line_that_prints_without_end_is_read_no_further_than_its_first_line(folder: Path) -> None:
    out = bounded_run_line(folder, "yes mine")  # endless lines: the first is all that is shown
    assert out.startswith("mine │ ctx 13,126/200k")
    assert out.count("\n") == 1


def test_a_user_status_line_without_a_line_end_is_cut_at_64_kib(folder: Path) -> None:
    out = bounded_run_line(folder, "yes | tr -d '\\n'")  # one endless line
    theirs, _, rest = out.partition(" │ ")
    assert set(theirs) == {"y"} and len(theirs) <= 64 << 10
    assert rest.startswith("ctx 13,126/200k")


def test_bad_stdin_bad_record_and_no_socket_still_print_a_line(folder: Path) -> None:
    for stdin in (b"", b"not json", b"[1,2]", b"\xff\xfe", b"{" * 5000):
        out, _ = run_line(folder, stdin, record="not json")
        assert out == "ctx 0\n"
    out, _ = run_line(folder, json.dumps(LAST).encode(), record={"cost": "\x1b]0;pwned\x07$1"})
    assert "\x1b" not in out and "\x07" not in out


def test_a_report_too_big_for_a_datagram_is_cut_to_its_short_fields(folder: Path) -> None:
    hooks = HookSocket(folder / "s.sock")
    try:
        run_line(folder, json.dumps({**LAST, "huge": "x" * 200_000}).encode())
        (report,) = hooks.receive()
    finally:
        hooks.close()
    assert report.truncated and report.payload["session_id"] == LAST["session_id"] and "huge" not in report.payload


def test_the_command_imports_only_the_standard_library() -> None:
    # Run with -I -S on every update: nothing beyond the standard library.
    text = STATUSLINE.read_text()
    assert "import agentlaunch" not in text and "from agentlaunch" not in text
