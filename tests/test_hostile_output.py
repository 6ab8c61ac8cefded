"""What agentlaunch prints from provider or state-file text: visible, harmless, never markup, never raw escapes."""

from __future__ import annotations

import io
import json

import pytest

from agentlaunch import paths
from agentlaunch.cli.user_io import report
from agentlaunch.errors import TurnFailed
from agentlaunch.events import Compaction, Text, TextDelta, ToolResult, ToolUse, Unknown, Warning
from agentlaunch.live.status import one_line
from agentlaunch.live.view import HeadlessView
from agentlaunch.token_usage import Usage
from agentlaunch.usage.meter import Meter
from agentlaunch.usage.records import CallRecord
from agentlaunch.usage.store import Store
from agentlaunch.visible import for_markup, visible
from tests.support.cli_runs import run_cli_inprocess

PWNED = "\x1b]0;PWNED\x07\x1b[2J"


def test_visible_writes_controls_and_bidi_overrides_as_escapes() -> None:
    assert visible(PWNED) == "\\x1b]0;PWNED\\x07\\x1b[2J"
    assert visible("a\x9bb\u202ec\x7f") == "a\\x9bb\\u202ec\\x7f"
    assert visible("two\nlines\tand\r") == "two\\nlines\\tand\\r"
    assert visible("two\nlines\tand\r", keep_newlines=True) == "two\nlines\tand\\r"
    assert visible("plain ASCII, 日本語, émoji 😀") == "plain ASCII, 日本語, émoji 😀"


def test_for_markup_never_takes_text_for_rich_tags() -> None:
    from rich.console import Console

    buffer = io.StringIO()
    Console(file=buffer).print(f"[dim]{for_markup('[/x] [bold]' + PWNED)}[/]")
    assert buffer.getvalue() == "[/x] [bold]\\x1b]0;PWNED\\x07\\x1b[2J\n"


def test_the_view_shows_provider_text_escaped_and_never_fails_on_markup() -> None:
    out, err = io.StringIO(), io.StringIO()
    view = HeadlessView(Meter(), stdout=out, stderr=err)
    for event in (
        TextDelta("answer " + PWNED + "\nline two"),
        ToolUse("t", "[/x]" + PWNED, "[/y] " + PWNED),
        ToolResult("t", True, "[/z]" + PWNED),
        Warning("[/w]" + PWNED),
        Compaction("[/c]" + PWNED, 1, 2),
        Text("not shown after deltas"),
    ):
        view.event(event)
    view.notice("[/n] in a path")
    view.unknown_once(Unknown("[/u]" + PWNED))
    assert "\x1b" not in out.getvalue() + err.getvalue() and "\x07" not in err.getvalue()
    assert out.getvalue() == "answer \\x1b]0;PWNED\\x07\\x1b[2J\nline two\n"  # the tool line starts a new line
    assert "⚙ [/x]\\x1b]0;PWNED" in err.getvalue() and "[/w]" in err.getvalue() and "[/n] in a path" in err.getvalue()


def test_json_lines_keep_the_data_as_json_escapes() -> None:
    out = io.StringIO()
    HeadlessView(Meter(), json_lines=True, stdout=out).event(ToolUse("t", PWNED, ""))
    assert "\x1b" not in out.getvalue()  # json.dumps escapes control characters even with ensure_ascii=False
    assert json.loads(out.getvalue())["name"] == PWNED


def test_status_line_from_a_hostile_record_is_one_harmless_line() -> None:
    line = one_line({"agent": "demo" + PWNED, "state": "wait\ning", "cost": "$1" + PWNED})
    assert "\x1b" not in line and "\n" not in line and line.startswith("demo\\x1b]0;PWNED")


def test_an_error_quoting_the_provider_is_printed_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    report(TurnFailed("the turn failed: [/x] " + PWNED, hint="[/h]"))
    err = capsys.readouterr().err
    assert "\x1b" not in err and "[/x] \\x1b]0;PWNED" in err and "[/h]" in err


@pytest.fixture
def hostile_store() -> str:
    session = "sess-" + PWNED
    with Store.open(paths.store_path()) as store:
        store.start_session(session, agent="demo", provider="claude", working_dir="/tmp/[/x]" + PWNED, model=PWNED)
        store.record_call(
            CallRecord(agent="demo", provider="claude", usage=Usage(input=1, output=2), session_id=session, model_reported=PWNED)
        )
    return session


@pytest.mark.parametrize(
    "args", [["usage", "--by", "model"], ["usage", "--by", "session"], ["usage", "--by", "model", "--csv"], ["sessions"]]
)
def test_reports_and_tables_print_a_hostile_model_escaped(hostile_store: str, args: list[str]) -> None:
    done = run_cli_inprocess(*args)
    assert done.returncode == 0, done.stderr
    assert b"\x1b" not in done.stdout and b"\x07" not in done.stdout
    assert b"\\x1b]0;" in done.stdout  # visible (a narrow column may wrap the rest)


def test_the_calls_table_and_csv_print_a_hostile_model_escaped(hostile_store: str) -> None:
    for extra in ([], ["--csv"]):
        done = run_cli_inprocess("usage", "--session", hostile_store, "--calls", *extra)
        assert done.returncode == 0, done.stderr
        assert b"\x1b" not in done.stdout and b"PWNED" in done.stdout


def test_usage_json_keeps_the_reported_model_as_data(hostile_store: str) -> None:
    done = run_cli_inprocess("usage", "--by", "model", "--json")
    assert done.returncode == 0 and b"\x1b" not in done.stdout
    assert [row["model"] for row in json.loads(done.stdout)] == [PWNED]


def test_doctor_live_report_prints_what_the_cli_said_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    from agentlaunch.cli.doctor import _print_live
    from agentlaunch.prefix.live_report import ControlReport, LiveReport, PairReport
    from agentlaunch.prefix.static import Difference, InstructionsPlace

    diff = Difference(10, 3, 20, 20, "system", "system", "bef" + PWNED, "a" + PWNED, "b", identical=False)
    report = LiveReport(
        provider="claude",
        cli="/bin/claude" + PWNED,
        cli_version="2.1.332" + PWNED,
        argv=["-p", PWNED],
        delivery="file",
        pair=PairReport(diff, InstructionsPlace(found=False), ("/a", "/b"), (0.1, 0.1)),
        control=ControlReport("m", 0, 10, 5, True, "passed"),
        proxy_attempts=[],
        other_calls=[],
    )
    _print_live(report)
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "2.1.332\\x1b]0;PWNED" in out
