"""Codex's own question (its ``request_user_input`` tool) answered with ``agentlaunch answer --reply`` on agentlaunch's
app-server connection, and denied; end to end on the pinned Codex CLI against the fake Responses API.

Measured on Codex 0.171.0 (agentlaunch/providers/native/codex_question.py): with the feature
``default_mode_request_user_input`` on, the model is offered ``request_user_input`` in the default mode; its call
reaches agentlaunch's connection as ``item/tool/requestUserInput``, the interface shows the question with its options
(and "None of the above"), the CLI's own OSC 7501 report says ``blocked kind=question``, and the first answer the
app-server gets closes the interface's question. The model reads ``{"answers": {ID: {"answers": [TEXT]}}}``, or
``{"answers": {}}`` for a denial.

The same session's later questions are answered from the deck (``R``, in a terminal of a private tmux server) and
denied from a desktop notification's Deny button (a ``notify-send`` the test clicks, tests/support/desktop_clicks.py);
each question is announced once, named (the thread's status waits for the request that names it: ASK_GRACE).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agentlaunch.fakeapi import responses as cfake
from testbed.native_tui import TitledResponsesFake
from testbed.pty_screen import Screen
from tests.e2e.test_answer_e2e import answer_cli, tmux
from tests.e2e.test_native_codex_remote import setup, short_root, status_of  # noqa: F401 - short_root: a fixture
from tests.e2e.test_native_run_codex_gemini import quit_tui, type_prompt, until
from tests.support.desktop_clicks import click, clicked, desktop_env, shown_with
from tests.support.desktop_clicks import shown as notifications

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

COLOR = {
    "id": "color",
    "header": "Color",
    "question": "Which color?",
    "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}],
}


SIZE = {
    **COLOR,
    "id": "size",
    "header": "Size",
    "question": "Which size?",
    "options": [{"label": "Small", "description": "s"}, {"label": "Large", "description": "l"}],
}
SHAPE = {
    **COLOR,
    "id": "shape",
    "header": "Shape",
    "question": "Which shape?",
    "options": [{"label": "Round", "description": "r"}, {"label": "Square", "description": "q"}],
}


def ask(question: dict[str, object], usage: cfake.ResponsesUsage) -> cfake.ShellCallReply:
    """The model's call of Codex's question tool."""
    return cfake.ShellCallReply(name="request_user_input", arguments={"questions": [question]}, usage=usage)


def outputs(api: TitledResponsesFake) -> list[str]:
    """The tool outputs the model was sent, in order (the last request carries the conversation so far)."""
    body = api.turn_requests[-1].body
    return [str(item.get("output")) for item in body.get("input", []) if item.get("type") == "function_call_output"]


def deck_shows(tui: Screen, socket: str, text: str) -> None:
    """Pump the interface until the deck (its tmux session ``deck``) shows ``text``."""
    try:
        until(tui, lambda: text in tmux(socket, "capture-pane", "-p", "-t", "=deck:").replace("\n", ""), repr(text))
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the deck shows:\n{tmux(socket, 'capture-pane', '-p', '-t', '=deck:')}") from None


def test_codexs_question_answered_with_a_reply_from_the_command_the_deck_and_denied_from_a_notification(
    short_root: Path,  # noqa: F811 - the fixture
    agents_dir: Path,
    socket: str,
) -> None:
    script = cfake.ResponsesScript(
        [
            cfake.TextReply("STARTUP-ANSWER", cfake.ResponsesUsage(9000, 8000, 7, 3)),
            ask(COLOR, cfake.ResponsesUsage(9100, 9000, 5, 0)),
            cfake.TextReply("REPLIED-ANSWER", cfake.ResponsesUsage(9200, 9100, 4, 0)),
            ask(SIZE, cfake.ResponsesUsage(9300, 9200, 5, 0)),
            cfake.TextReply("DECKED-ANSWER", cfake.ResponsesUsage(9400, 9300, 4, 0)),
            ask(SHAPE, cfake.ResponsesUsage(9500, 9400, 5, 0)),
            cfake.TextReply("DENIED-ANSWER", cfake.ResponsesUsage(9600, 9500, 4, 0)),
        ]
    )
    desktop = short_root / "desktop"
    with TitledResponsesFake(script) as api:
        agent = setup(short_root, agents_dir, api)
        agent.env = desktop_env(desktop, agent.env)  # no notify command: notify-send, with Allow/Deny buttons
        config = next((short_root / "home").rglob("config.toml"))
        config.write_text(config.read_text() + "\n[features]\ndefault_mode_request_user_input = true\n")
        tui = agent.run()
        try:
            until(tui, lambda: agent.state() == "waiting", "status 'waiting' after the startup turn")
            type_prompt(tui, "ask me a question please", "Which color?")
            until(tui, lambda: status_of(agent).get("state") == "asking", "status 'asking' while the question waits")
            record = status_of(agent)
            assert (record["state_reason"], record["state_source"]) == ("question: Which color? (Red / Blue)", "app-server")
            shown = answer_cli(tui, agent.env, agent.work, "coder", "--json")
            assert shown.returncode == 0, shown.stderr
            first = json.loads(shown.stdout)["question"]
            assert (first["tool"], first["options"]) == ("request_user_input", ["reply", "deny"]), first
            assert first["asks"] == "question: Which color? (Red / Blue)" and '"id": "color"' in first["input"], first
            allow = answer_cli(tui, agent.env, agent.work, "coder", "--allow", "--question", first["id"])
            assert allow.returncode == 2 and b"reply, deny" in allow.stderr, allow.stderr  # a question, not a tool
            replied = answer_cli(tui, agent.env, agent.work, "coder", "--reply", "Green, my own words", "--question", first["id"])
            assert replied.returncode == 0, replied.stderr
            until(tui, lambda: "REPLIED-ANSWER" in tui.text(), "the replied turn's answer")
            until(tui, lambda: agent.state() == "waiting", "status 'waiting' after the replied turn")
            assert "Which color?" not in tui.text()  # the interface's question closed with the answer
            assert outputs(api) == ['{"answers":{"color":{"answers":["Green, my own words"]}}}']

            # From the deck, in a real terminal: R, the reply typed on its input line, Enter.
            type_prompt(tui, "ask about the size", "Which size?")
            until(tui, lambda: status_of(agent).get("state") == "asking", "status 'asking' for the second question")
            stale = answer_cli(tui, agent.env, agent.work, "coder", "--reply", "late", "--question", first["id"])
            assert stale.returncode == 10, stale.stderr  # the question named was answered: nothing answered
            keep = [f"-e{k}={v}" for k, v in agent.env.items() if k.startswith(("AGENTLAUNCH_", "HOME", "XDG_", "PATH"))]
            deck = [sys.executable, "-m", "agentlaunch", "deck", "--agents-dir", str(agents_dir)]
            tmux(socket, "new-session", "-d", "-s", "deck", "-x", "160", "-y", "40", "-c", str(agent.work), *keep, *deck)
            deck_shows(tui, socket, "coder is asking: question: Which size? (Small / Large)")
            tmux(socket, "send-keys", "-t", "=deck:", "R")
            deck_shows(tui, socket, "reply to coder (question: Which size? (Small / Large)):")
            tmux(socket, "send-keys", "-t", "=deck:", "-l", "Large, from the deck")
            tmux(socket, "send-keys", "-t", "=deck:", "Enter")
            deck_shows(tui, socket, "coder: answered: question: Which size? (Small / Large)")
            until(tui, lambda: "DECKED-ANSWER" in tui.text(), "the turn the deck answered")
            until(tui, lambda: agent.state() == "waiting", "status 'waiting' after the deck's reply")
            tmux(socket, "send-keys", "-t", "=deck:", "q")

            # From the desktop notification: its Deny button, clicked, runs agentlaunch answer --deny.
            type_prompt(tui, "ask about the shape", "Which shape?")
            until(tui, lambda: status_of(agent).get("state") == "asking", "status 'asking' for the third question")
            until(tui, lambda: bool(shown_with(desktop, "Which shape?")), "the third question's notification")
            (argv,) = shown_with(desktop, "Which shape?")
            assert "--action=deny=Deny" in argv and "--wait" in argv and not any("Allow" in a for a in argv), argv
            click(desktop, "Which shape?", "deny")
            until(tui, lambda: "DENIED-ANSWER" in tui.text(), "the turn the notification denied")
            until(tui, lambda: agent.state() == "waiting", "status 'waiting' after the denied turn")
            assert clicked(desktop)
        finally:
            quit_tui(tui)
    assert outputs(api) == [
        '{"answers":{"color":{"answers":["Green, my own words"]}}}',
        '{"answers":{"size":{"answers":["Large, from the deck"]}}}',
        '{"answers":{}}',  # denied: no answer; the model goes on by itself
    ]
    # One question, one notification, naming it (never first the thread's status alone, then the question).
    bodies = [argv[-1].splitlines()[0] for argv in notifications(desktop)]
    assert bodies == [
        "question: Which color? (Red / Blue)",
        "question: Which size? (Small / Large)",
        "question: Which shape? (Round / Square)",
    ], bodies
