"""A per-turn CLI's first turn as a plan keeps it (launch/early_turn): the prompt's place in argv."""

from __future__ import annotations

from datetime import UTC, datetime

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


@given(first=prompts, second=prompts)
def test_a_kept_first_turn_gives_the_next_launchs_turn_with_its_own_prompt_session_and_time(first: str, second: str) -> None:
    text = startup(SID, THEN) + first
    argv = ["codex", "exec", "--", text]
    record = early_turn.turn_record(argv, b"", text, first, SID, THEN)
    assert record is not None  # the head keeps stand-ins for the session id and the time, never the prompt
    head = f"<agentlaunch-startup>\nSession: {early_turn.SESSION}\nNow: {early_turn.NOW}\n</agentlaunch-startup>\n"
    assert record["prompt_head"] == head
    assert record["prompt_at"] == 3
    kept = [a.replace(SID, prespawn.SESSION) for a in argv]
    kept[3] = ""
    planned = [a.replace(prespawn.SESSION, NEW_SID) for a in kept]
    made = early_turn.with_prompt(planned, record, second, NEW_SID, LATER)
    assert made == ["codex", "exec", "--", startup(NEW_SID, LATER) + second]


def test_a_turn_whose_text_is_not_in_argv_is_not_kept() -> None:
    text = startup(SID, THEN) + "hi"
    assert early_turn.turn_record(["gemini"], text.encode(), text, "hi", SID, THEN) is None  # its prompt on stdin
    assert early_turn.turn_record(["codex", text], text.encode(), text, "hi", SID, THEN) is None  # stdin too
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
        ({"prompt_at": "stdin", "prompt_head": "h"}, "hi"),  # no such place (Gemini's once)
        ({"prompt_at": 1, "prompt_head": 3}, "hi"),  # no head
        ({"prompt_head": "h"}, "hi"),
    ],
)
def test_a_plan_that_does_not_say_plainly_where_the_prompt_goes_starts_nothing(
    plan: dict[str, object], prompt: str | None
) -> None:
    assert early_turn.with_prompt(["cli", ""], plan, prompt, NEW_SID, LATER) is None
