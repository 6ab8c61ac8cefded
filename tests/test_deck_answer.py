"""The deck's answers to an asking agent (``a`` allow, ``D`` deny after y, ``R`` reply), driven with Textual's pilot
against a status record and a control socket served in-process (playing the launch: tests/test_answer.py has the
protocol). The real CLIs answered from the deck: tests/e2e/test_answer_e2e.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from agentlaunch.deck.app import Deck
from agentlaunch.launch.control import ControlServer
from agentlaunch.launch.questions import OpenQuestions
from agentlaunch.providers.native.source import QuestionAsked
from tests.support.control_socket import serve
from tests.support.deck_pilot import drive, message, record, settle, sources
from tests.test_answer import Told


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[tuple[ControlServer, OpenQuestions]]:
    questions = OpenQuestions("needy")
    server = serve(tmp_path / "control.sock")
    server.on_question = questions.handle
    yield server, questions
    server.close()


def ask(questions: OpenQuestions, told: Told, command: str, options: tuple[str, ...] = ("once", "always", "deny")) -> str:
    asked = questions.asked(QuestionAsked("Bash", {"command": command}, options, told))
    return asked.asks


def test_a_allows_the_question_on_the_message_line_and_D_denies_after_y_naming_agent_and_tool(
    agents_dir: Path, launch: tuple[ControlServer, OpenQuestions]
) -> None:
    server, questions = launch
    told = Told()
    shown = ask(questions, told, "touch \x1b[2J[bold]x[/bold]")
    path = record("needy", "asking", 5, control=str(server.path), state_reason=shown)

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        await settle(pilot, lambda: "needy is asking" in message(app), app, "the question on the message line")
        assert "\x1b" not in message(app) and "[bold]x[/bold]" in message(app)  # inert: no escape, no markup
        await pilot.press("a")
        await settle(pilot, lambda: "allowed once" in message(app), app, "the allow answered")
        assert told.answers == [("once", "")]

        second = ask(questions, told, "rm -rf build")
        record("needy", "asking", 1, control=str(server.path), state_reason=second)
        await settle(pilot, lambda: "rm -rf build" in message(app), app, "the second question")
        await pilot.press("D")
        assert "deny needy's Bash: rm -rf build? (y/n)" in app.screen.query_one("Label").render().plain  # type: ignore[attr-defined]
        await pilot.press("n")  # no: nothing answered
        assert told.answers == [("once", "")]
        await pilot.press("D", "y")
        await settle(pilot, lambda: "denied" in message(app), app, "the deny answered")
        assert told.answers == [("once", ""), ("deny", "")]

    drive(Deck(sources(agents_dir), watch=True), script)
    assert path.exists()


def test_a_question_that_changed_since_the_row_showed_it_is_not_answered_and_R_replies(
    agents_dir: Path, launch: tuple[ControlServer, OpenQuestions]
) -> None:
    server, questions = launch
    told = Told()
    ask(questions, told, "touch a")
    record("needy", "asking", 5, control=str(server.path), state_reason="Bash: an older question")

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        await settle(pilot, lambda: "needy is asking" in message(app), app, "the question on the message line")
        await pilot.press("a")
        await settle(pilot, lambda: "question changed" in message(app), app, "the refusal")
        assert "nothing answered" in message(app) and told.answers == []

        which = {"prompt": "Which [b]branch[/b]? \x1b[2J"}
        asks = questions.asked(QuestionAsked("AskUserQuestion", which, ("reply",), told)).asks
        record("needy", "asking", 1, control=str(server.path), state_reason=asks)
        await settle(pilot, lambda: "Which [b]branch[/b]? \\x1b[2J" in message(app), app, "the question, inert")
        await pilot.press("a")  # not a permission: allow is refused, nothing told
        await settle(pilot, lambda: "takes reply" in message(app), app, "allow refused")
        await pilot.press("R")
        label = app.screen.query_one("Label").render().plain  # type: ignore[attr-defined]
        assert "Which [b]branch[/b]? \\x1b[2J" in label  # the CLI's text as it is: no markup, the escape visible
        await pilot.press(*"main", "enter")
        await settle(pilot, lambda: "answered" in message(app) and "failed" not in message(app), app, "the reply")
        assert told.answers == [("reply", "main")]

    drive(Deck(sources(agents_dir), watch=True), script)


def test_a_on_an_agent_that_asks_nothing_says_so(agents_dir: Path) -> None:
    record("calm", "thinking", 5)

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        await pilot.press("a")
        assert message(app) == "calm asks nothing now (thinking)"
        await pilot.press("D", "R")
        assert message(app) == "calm asks nothing now (thinking)"

    drive(Deck(sources(agents_dir)), script)


def test_an_answers_outcome_stays_on_the_line_while_the_record_still_shows_the_question_it_answered(
    agents_dir: Path, launch: tuple[ControlServer, OpenQuestions]
) -> None:
    """The record learns of an answer a moment after the deck gave it: coming back to the row meanwhile must not say
    the answered question again (it hid "allowed once", and the record's change then blanked the line). Once the
    record drops the question, a question of the same words is a new one and is said."""
    server, questions = launch
    told = Told()
    shown = ask(questions, told, "make build")
    record("needy", "asking", 5, control=str(server.path), state_reason=shown)
    record("calm", "waiting", 9)

    async def script(app: Deck, pilot: Pilot[None]) -> None:
        await settle(pilot, lambda: "needy is asking" in message(app), app, "the question on the message line")
        await pilot.press("a")
        await settle(pilot, lambda: "allowed once" in message(app), app, "the allow answered")
        await pilot.press("down")
        await pilot.press("up")  # back on needy, whose record still asks (stale)
        await pilot.pause(0.3)
        assert "allowed once" in message(app), message(app)
        record("needy", "thinking", 1, control=str(server.path))
        await settle(pilot, lambda: "thinking" in " ".join(map(str, app.rows)), app, "the record without the question")
        await pilot.pause(0.3)
        assert "allowed once" in message(app), message(app)  # not blanked: the line no longer held the question
        record("needy", "asking", 1, control=str(server.path), state_reason=ask(questions, told, "make build"))
        await settle(pilot, lambda: "needy is asking" in message(app), app, "the same words asked again")

    drive(Deck(sources(agents_dir), watch=True), script)
