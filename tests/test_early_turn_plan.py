"""A per-turn CLI's first turn as a plan keeps it (launch/early/early_turn): the prompt's place in argv or on stdin, and
the user's files a delivery copied (launch/early/prespawn.sources_unchanged)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentlaunch.launch.early import early_turn, prespawn

SID, NEW_SID = "11111111-2222-4333-8444-555555555555", "66666666-7777-4888-9999-000000000000"
THEN = datetime(2026, 12, 2, 21, 14, tzinfo=UTC)
LATER = datetime(2026, 12, 2, 21, 37, tzinfo=UTC)
prompts = st.text(min_size=1).filter(lambda t: t != "-")


def startup(sid: str, now: datetime) -> str:
    return f"<agentlaunch-startup>\nSession: {sid}\nNow: {early_turn.now_text(now)}\n</agentlaunch-startup>\n"


@given(first=prompts, second=prompts, on_stdin=st.booleans())
def test_a_kept_first_turn_gives_the_next_launchs_turn_with_its_own_prompt_session_and_time(
    first: str, second: str, on_stdin: bool
) -> None:
    text = startup(SID, THEN) + first
    argv = ["gemini", "--session-id", SID] if on_stdin else ["codex", "exec", "--", text]
    stdin = text.encode("utf-8") if on_stdin else b""
    record = early_turn.turn_record(argv, stdin, text, first, SID, THEN)
    assert record is not None  # the head keeps stand-ins for the session id and the time, never the prompt
    head = f"<agentlaunch-startup>\nSession: {early_turn.SESSION}\nNow: {early_turn.NOW}\n</agentlaunch-startup>\n"
    assert record["prompt_head"] == head
    assert record["prompt_at"] == (early_turn.STDIN if on_stdin else 3)
    kept = [a.replace(SID, prespawn.SESSION) for a in argv]
    if not on_stdin:
        kept[3] = ""
    planned = [a.replace(prespawn.SESSION, NEW_SID) for a in kept]
    made = early_turn.with_prompt(planned, record, second, NEW_SID, LATER)
    expected = startup(NEW_SID, LATER) + second
    if on_stdin:
        assert made == (["gemini", "--session-id", NEW_SID], expected.encode("utf-8"))
    else:
        assert made == (["codex", "exec", "--", expected], b"")


def test_a_turn_whose_text_is_neither_in_argv_nor_all_of_stdin_is_not_kept() -> None:
    text = startup(SID, THEN) + "hi"
    assert early_turn.turn_record(["gemini"], text[:-1].encode(), text, "hi", SID, THEN) is None
    assert early_turn.turn_record(["gemini"], b"", text, "hi", SID, THEN) is None
    assert early_turn.turn_record(["codex", text], b"", text, "-", SID, THEN) is None  # the prompt came on stdin
    assert early_turn.turn_record(["codex", text], b"", text, "", SID, THEN) is None


@pytest.mark.parametrize(
    ("plan", "prompt"),
    [
        ({"prompt_at": 1, "prompt_head": "h"}, None),  # no prompt on the command line
        ({"prompt_at": 1, "prompt_head": "h"}, "-"),  # the prompt comes on agentlaunch's stdin
        ({"prompt_at": 1, "prompt_head": "h"}, ""),
        ({"prompt_at": 5, "prompt_head": "h"}, "hi"),  # out of range
        ({"prompt_at": -1, "prompt_head": "h"}, "hi"),
        ({"prompt_at": 0, "prompt_head": "h"}, "hi"),  # that element is not the empty slot
        ({"prompt_at": True, "prompt_head": "h"}, "hi"),
        ({"prompt_at": "argv", "prompt_head": "h"}, "hi"),  # no such place
        ({"prompt_at": early_turn.STDIN, "prompt_head": 3}, "hi"),  # no head
        ({"prompt_head": "h"}, "hi"),
    ],
)
def test_a_plan_that_does_not_say_plainly_where_the_prompt_goes_starts_nothing(
    plan: dict[str, object], prompt: str | None
) -> None:
    assert early_turn.with_prompt(["cli", ""], plan, prompt, NEW_SID, LATER) is None


def test_the_users_copied_files_must_hold_the_bytes_they_held_when_the_plan_was_kept(tmp_path: Path) -> None:
    memory, settings, absent = tmp_path / "GEMINI.md", tmp_path / "settings.json", tmp_path / "none.json"
    memory.write_text("mine\n")
    settings.write_text("{}")
    plan = {"sources": {str(p): prespawn.file_digest(p) for p in (memory, settings, absent)}}
    assert plan["sources"][str(absent)] is None
    assert prespawn.sources_unchanged(plan) and prespawn.sources_unchanged({})
    memory.write_text("mine, changed\n")
    assert not prespawn.sources_unchanged(plan)
    memory.write_text("mine\n")
    absent.write_text("{}")  # a file that was not there then
    assert not prespawn.sources_unchanged(plan)
    absent.unlink()
    settings.unlink()  # one that was
    assert not prespawn.sources_unchanged(plan)
    assert not prespawn.sources_unchanged({"sources": [str(memory)]})  # not what a plan keeps
