"""Gemini's ask_user question (agentlaunch/providers/native/gemini_ask.py) and a reply typed with keys only while
the pane shows it, its Enter only once the pane shows the typed words (agentlaunch/launch/native/screen_keys.py).
The box and the hooks' shapes are the ones measured on Gemini CLI 0.61.0: tests/e2e/test_answer_gemini_ask_e2e.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agentlaunch.launch.native import screen_keys
from agentlaunch.providers.native.gemini_ask import ask_user_question, asked_input, is_ask_user
from agentlaunch.providers.native.gemini_records import gemini_asked

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
    panes = iter([BOX, BOX.replace("> a color", "> Green, my"), BOX.replace("> a color", "> Green, my own words")])
    monkeypatch.setattr(screen_keys, "pane_text", lambda pane=None: next(panes))
    assert screen_keys.answer(relay, item, "reply", "Green,\n  my own words", screen=BOX)
    assert relay.pressed == [b"\x1b[200~Green, my own words\x1b[201~"]  # a new line would submit early
    relay.loop.run_one()
    relay.loop.run_one()
    assert relay.pressed[-1] != b"\r"  # not all of it on the pane yet
    relay.loop.run_one()
    assert relay.pressed[-1] == b"\r" and relay.loop.due == []


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
    assert screen_keys.answer(relay, item, "reply", "Green", screen=BOX) and relay.pressed == [b"Green"]
    while relay.loop.due:
        relay.loop.run_one()
    assert relay.pressed == [b"Green"] and relay.loop.clock.now >= screen_keys.REPLY_WAIT  # no Enter: not sent
