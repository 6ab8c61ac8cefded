"""Gemini's ask_user question (agentlaunch/providers/native/gemini_ask.py) and a reply typed with keys only while
the pane shows it, its Enter only once the pane shows the typed words, answered once the box is seen gone, else
taken out with Backspace and not answered, exit 9 (agentlaunch/launch/native/screen_keys.py).
The box and the hooks' shapes are the ones measured on Gemini CLI 0.61.0: tests/e2e/test_answer_gemini_ask_e2e.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agentlaunch.launch.native import screen_keys
from agentlaunch.launch.questions import OpenQuestions
from agentlaunch.providers.native.gemini_ask import ask_user_question, asked_input, is_ask_user
from agentlaunch.providers.native.gemini_records import gemini_asked
from agentlaunch.providers.native.source import Pending, QuestionAsked
from tests.support.cli_runs import run_cli_inprocess
from tests.support.control_socket import serve, state_dir, write_record

TEXT = {"question": "Which color?", "header": "Color", "type": "text", "placeholder": "a color"}
CHOICE = {"question": "Which size?", "header": "Size", "type": "choice", "options": [{"label": "S", "description": ""}]}
BOX = """│ Answer Questions                 │
│ Which color?                     │
│ > a color                        │
│ Enter to submit · Esc to cancel  │"""


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


class Loop:
    def __init__(self) -> None:
        self.clock = Clock()
        self.due: list[tuple[float, Callable[[], None]]] = []

    def call_later(self, delay: float, then: Callable[[], None]) -> None:
        self.due.append((self.clock.now + delay, then))

    def run_one(self) -> None:
        when, then = self.due.pop(0)
        self.clock.now = when
        then()


class Relay:
    def __init__(self, takes_paste: bool = True) -> None:
        self.pressed: list[bytes] = []
        self.loop = Loop()
        self.takes_paste = takes_paste

    def press(self, keys: bytes) -> None:
        self.pressed.append(keys)


def test_the_question_is_read_from_its_before_tool_hook_and_a_text_question_takes_a_reply() -> None:
    before = {"tool_name": "ask_user", "tool_input": {"questions": [TEXT]}}
    notified = {"notification_type": "ToolPermission", "details": {"type": "ask_user", "title": "Ask User"}}
    assert is_ask_user(notified) and not is_ask_user({"details": {"type": "exec"}}) and not is_ask_user({"details": 3})
    item = ask_user_question(asked_input(before))
    assert (item.tool, item.asks, item.options, item.answer) == ("ask_user", "ask_user: Which color?", ("reply", "deny"), None)
    assert item.shows == ("Answer Questions", "Esc to cancel", "Which color?") and item.keys == {"deny": "\x1b"}
    assert asked_input({"tool_name": "run_shell_command", "tool_input": {"command": "ls"}}) is None
    assert asked_input({"tool_name": "ask_user", "tool_input": "junk"}) is None


def test_a_choice_two_questions_or_an_unheard_input_take_only_a_denial() -> None:
    choice = ask_user_question({"questions": [CHOICE]})
    assert choice.options == ("deny",) and choice.asks == "ask_user: Which size? (S)"
    assert ask_user_question({"questions": [TEXT, TEXT]}).options == ("deny",)
    unheard = ask_user_question(None)
    assert (unheard.options, unheard.asks, unheard.shows) == (("deny",), "ask_user", ("Answer Questions", "Esc to cancel"))
    forged = ask_user_question({"questions": [{"question": "\x1b[2J[b]Q?[/b]", "type": "text"}, 5, None]})
    assert forged.asks == "ask_user: \x1b[2J[b]Q?[/b]" and forged.options == ("reply", "deny")  # kept as data, shown inert


def test_a_reply_is_typed_on_one_line_while_the_box_shows_and_entered_once_the_pane_shows_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    item = ask_user_question({"questions": [TEXT]})
    relay = Relay()
    typed = BOX.replace("> a color", "> Green, my own words")
    panes = iter([BOX, BOX.replace("> a color", "> Green, my"), typed, typed, " ✦ Thinking (esc to cancel, 1s)"])
    monkeypatch.setattr(screen_keys, "pane_text", lambda pane=None: next(panes))
    taken = screen_keys.answer(relay, item, "reply", "Green,\n  my own words", screen=BOX)
    assert isinstance(taken, Pending) and not taken.settled
    assert relay.pressed == [b"\x1b[200~Green, my own words\x1b[201~"]  # a new line would submit early
    relay.loop.run_one()
    relay.loop.run_one()
    assert relay.pressed[-1] != b"\r"  # not all of it on the pane yet
    relay.loop.run_one()
    assert relay.pressed[-1] == b"\r" and not taken.settled  # entered: answered once the box is seen gone
    relay.loop.run_one()
    assert not taken.settled  # the box still up with the words: looked at again
    relay.loop.run_one()
    assert taken.settled and taken.value is True and relay.loop.due == []
    assert relay.pressed == [b"\x1b[200~Green, my own words\x1b[201~", b"\r"]


def test_a_reply_the_box_keeps_after_its_enter_is_taken_out_with_backspace_and_not_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    item = ask_user_question({"questions": [TEXT]})
    relay = Relay()
    typed = BOX.replace("> a color", "> Green")
    monkeypatch.setattr(screen_keys, "pane_text", lambda pane=None: typed)  # Enter pressed, the box never goes
    taken = screen_keys.answer(relay, item, "reply", "Green", screen=BOX)
    assert isinstance(taken, Pending)
    while relay.loop.due:
        relay.loop.run_one()
    assert relay.pressed == [b"\x1b[200~Green\x1b[201~", b"\r", screen_keys.BACKSPACE * 5]  # one per character typed
    assert taken.value is False and relay.loop.clock.now >= screen_keys.REPLY_LOOK + screen_keys.SUBMIT_WAIT


def test_a_reply_never_shown_in_the_box_is_taken_out_only_while_the_box_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    item = ask_user_question({"questions": [TEXT]})
    relay = Relay(takes_paste=False)
    monkeypatch.setattr(screen_keys, "pane_text", lambda pane=None: BOX)  # the words never drawn (a slow screen)
    taken = screen_keys.answer(relay, item, "reply", "Grün", screen=BOX)
    while relay.loop.due:
        relay.loop.run_one()
    assert relay.pressed == ["Grün".encode(), screen_keys.BACKSPACE * 4] and isinstance(taken, Pending)
    assert taken.value is False


def test_a_reply_is_never_typed_elsewhere_and_its_enter_never_pressed_once_the_box_is_gone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    item = ask_user_question({"questions": [TEXT]})
    relay = Relay(takes_paste=False)
    assert not screen_keys.answer(relay, item, "reply", "Green", screen=" >   Type your message")  # the input box
    assert not screen_keys.answer(relay, item, "reply", "Green", screen=BOX.replace("Which color?", "Which size?"))
    assert not screen_keys.answer(relay, item, "reply", "  \n ", screen=BOX)  # no words
    permission = gemini_asked({"details": {"type": "exec", "command": "ls"}})
    assert not screen_keys.answer(relay, permission, "reply", "Green", screen=BOX)  # another question's box
    assert relay.pressed == []
    monkeypatch.setattr(screen_keys, "pane_text", lambda pane=None: " >   Green")  # the person pressed Esc meanwhile
    taken = screen_keys.answer(relay, item, "reply", "Green", screen=BOX)
    assert isinstance(taken, Pending) and relay.pressed == [b"Green"]
    while relay.loop.due:
        relay.loop.run_one()
    assert relay.pressed == [b"Green"] and relay.loop.clock.now >= screen_keys.REPLY_WAIT  # no Enter: not sent
    assert taken.value is False  # not answered; no Backspace where the question's box is gone (the input box)


# -- a typed reply's outcome, over the launch's control socket and from the command ----------------------


def test_a_typed_reply_is_answered_once_seen_submitted_and_one_not_taken_is_exit_9_with_its_question_left_open(
    tmp_path: Path,
) -> None:
    questions = OpenQuestions("gem", asking=lambda: True)
    server = serve(tmp_path / "control.sock")
    server.on_question = questions.handle
    outcomes = iter([False, True])
    typed: list[str] = []

    def type_reply(decision: str, text: str) -> Pending[bool]:  # on the launch's loop, as the relay's keys are
        typed.append(text)
        taken: Pending[bool] = Pending()
        server.loop.call_later(0.3, lambda: taken.settle(next(outcomes)))  # the screen looked at, later
        return taken

    try:
        qid = questions.asked(QuestionAsked("ask_user", {"questions": [TEXT]}, ("reply", "deny"), type_reply)).id
        write_record(state_dir(), "gem", control=str(server.path), state="asking")
        refused = run_cli_inprocess("answer", "gem", "--reply", "Green", "--question", qid)
        assert refused.returncode == 9, refused.stderr
        assert b"did not take the reply" in refused.stderr and b"nothing answered" in refused.stderr
        shown = json.loads(run_cli_inprocess("answer", "gem", "--json").stdout)
        assert shown["question"]["id"] == qid  # still open: the same question, answered again
        done = run_cli_inprocess("answer", "gem", "--reply", "Blue", "--question", qid, "--json")
        assert done.returncode == 0 and json.loads(done.stdout) == {"agent": "gem", "answered": qid, "decision": "reply"}
        late = run_cli_inprocess("answer", "gem", "--reply", "Red", "--question", qid)
        assert late.returncode == 10, late.stderr
    finally:
        server.close()
    assert typed == ["Green", "Blue"]


def test_a_reply_not_taken_after_another_question_came_leaves_that_one_open() -> None:
    questions = OpenQuestions("gem", asking=lambda: True)
    pending: list[Pending[bool]] = []

    def type_reply(decision: str, text: str) -> Pending[bool]:
        pending.append(Pending())
        return pending[-1]

    first = questions.asked(QuestionAsked("ask_user", {"questions": [TEXT]}, ("reply", "deny"), type_reply)).id
    reply = questions.handle({"answer": {"question": first, "decision": "reply", "text": "Green"}})
    assert isinstance(reply, Pending) and not reply.settled
    second = questions.asked(QuestionAsked("ask_user", {"questions": [CHOICE]}, ("deny",), type_reply)).id
    pending[0].settle(False)
    assert reply.value is not None and reply.value["no_question"] is True
    assert questions.current is not None and questions.current.id == second  # the newer question stays the open one
