"""`status` and `status --watch` fit the terminal's width: no row wraps; the columns a person needs first stay."""

from __future__ import annotations

import json
import os
import signal
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len
from rich.console import Console

from agentlaunch.live.status import StatusRecord, status_dir
from agentlaunch.live.status_table import COLUMNS, status_view
from agentlaunch.live.tmux import DeadPane
from testbed.pty_screen import running

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def record(agent: str, state: str, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "agent": agent,
        "provider": "claude",
        "model": "claude-sonnet-4-5",
        "pid": os.getpid(),
        "session_id": "53af7239-1111-2222-3333-444455556666",
        "state": state,
        "state_since": (NOW - timedelta(seconds=192)).isoformat(),
        "context": 41_234,
        "window": 200_000,
        "window_source": "known",
        "percent": 20.6,
        "to_compaction": 125_000,
        "cost": "$0.4123",
        "calls": 17,
        "cache": {"expires_at": (NOW + timedelta(seconds=200)).isoformat(), "ttl_s": 300, "context": 40_000},
    }
    data.update(extra)
    return data


RECORDS = [record("reviewer", "asking"), record("planner-with-a-long-name", "thinking"), record("helper", "waiting")]
EXPECTED_STATE = {
    "reviewer": ("ASKING: needs you", "ASKING"),
    "planner-with-a-long-name": ("thinking",),
    "helper": ("waiting",),
    "crashed": ("dead (exit 1)", "dead"),
}


def rendered(width: int) -> list[str]:
    console = Console(width=width, color_system=None, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    view = status_view([StatusRecord(Path("x"), r, False) for r in RECORDS], [DeadPane("crashed", "work", "%3", 1)], now=NOW)
    console.print(view)
    return console.export_text().splitlines()


def header(lines: list[str]) -> list[str]:
    return lines[0].split()


@pytest.mark.parametrize("width", [130, 100, 80, 60, 40])
def test_no_row_wraps_and_each_agent_keeps_its_state_on_its_own_line(width: int) -> None:
    lines = rendered(width)
    assert all(cell_len(line) <= width for line in lines)
    rows = lines[2 : 2 + len(EXPECTED_STATE)]  # the header, its rule, then one line per agent
    assert len(rows) == len(EXPECTED_STATE)
    for line, (agent, states) in zip(rows, EXPECTED_STATE.items(), strict=True):
        shown = line.split()[0]
        assert agent.startswith(shown.rstrip("…")), line  # the name, whole or cut with an ellipsis
        assert any(f" {s}" in line for s in states), line  # its state on the same line
    assert header(lines)[:2] == ["agent", "state"]


def test_the_columns_given_up_as_the_width_shrinks_are_the_least_needed() -> None:
    seen = {w: header(rendered(w)) for w in (160, 130, 100, 80, 60, 40)}
    assert seen[160][:8] == ["agent", "state", "for", "context", "cost", "to", "compaction", "cache"]
    assert seen[100] == ["agent", "state", "for", "context", "cost", "to", "compaction"]
    assert seen[80] == ["agent", "state", "for", "context", "cost"]  # what a person needs first, whole
    assert seen[60] == ["agent", "state", "for", "ctx", "cost"]  # short forms: ASKING, 21%
    assert seen[40] == ["agent", "state", "for", "ctx"]  # and a long name cut
    lines = rendered(40)
    assert any(line.startswith("planner-wit… ") for line in lines) and any(" ASKING " in line for line in lines)
    assert any("21%" in line for line in lines) and any("3m12s" in line for line in lines)
    order = [c[1] for c in COLUMNS if c[0] not in ("plan_limits", "host")]  # none in these records: columns left out
    for width, names in seen.items():  # always a prefix of the columns in their order of need
        joined = " ".join(names).replace("to compaction", "to_compaction").replace("ctx", "context").split()
        assert joined == [n.replace("to compaction", "to_compaction") for n in order][: len(joined)], width


def test_a_terminal_narrower_than_a_name_and_its_state_still_gets_one_line_a_row() -> None:
    lines = rendered(16)
    assert all(cell_len(line) <= 16 for line in lines)
    rows = [line for line in lines if line.startswith(("revi…", "plan…", "help…", "cras…"))]  # names cut, states whole
    assert [row.split()[1] for row in rows] == ["ASKING", "thinking", "waiting", "dead"]


# -- `status --watch` in a real terminal, read with pyte ------------------------------------------


def test_status_watch_fits_its_terminal_and_follows_a_resize() -> None:
    import pexpect

    folder = status_dir()
    folder.mkdir(parents=True)
    now = datetime.now(UTC)
    for i, data in enumerate(RECORDS):
        data = {**data, "state_since": (now - timedelta(seconds=192)).isoformat()}
        (folder / f"{os.getpid()}-{i}.json").write_text(json.dumps(data))
    rows, cols = 30, 40
    argv = [sys.executable, "-m", "agentlaunch", "status", "--watch", "--interval", "0.2"]
    with running(argv, os.environ, Path.cwd(), columns=cols, lines=rows) as watch:
        text = watch.wait_for(lambda t: "helper" in t, 30, "the table at 40 columns")
        lines = text.splitlines()
        assert any(line.startswith("reviewer ") and " ASKING " in line for line in lines), text
        assert any(line.startswith("planner-wit… ") and "thinking" in line for line in lines), text
        assert "ctx" in lines[0] and "cost" not in lines[0] and "context" not in lines[0]
        # The terminal grows to 100 columns: the next refresh has the whole forms and more columns.
        watch.screen.resize(rows, 100)
        watch.child.setwinsize(rows, 100)
        text = watch.wait_for(lambda t: "to compaction" in t, 30, "the table at 100")
        assert any(line.startswith("reviewer ") and "ASKING: needs you" in line for line in text.splitlines()), text
        assert any(line.startswith("planner-with-a-long-name ") and "thinking" in line for line in text.splitlines()), text
        watch.child.kill(signal.SIGINT)
        watch.child.expect(pexpect.EOF, timeout=30)
        watch.child.close()
    assert watch.child.exitstatus == 0


def test_an_asking_agents_question_is_said_under_the_table_inert_and_cut() -> None:
    asking = record("reviewer", "asking", state_reason="Bash: printf '\x1b[2J' [red]x[/red]\n" + "y" * 400)
    quiet = record("helper", "asking", state_reason=None)
    console = Console(width=100, color_system=None, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(status_view([StatusRecord(Path("x"), asking, False), StatusRecord(Path("y"), quiet, False)], now=NOW))
    text = console.export_text()
    said = text[text.index("reviewer asks: ") :].replace("\n", "")
    assert said.startswith("reviewer asks: Bash: printf '\\x1b[2J' [red]x[/red] yyy")  # the escape written out, the tags kept
    assert said.endswith("y…") and len(said) == len("reviewer asks: ") + 160 + 3  # 160 characters; ESC shown as 4
    assert "helper asks" not in text  # no question known: nothing said
