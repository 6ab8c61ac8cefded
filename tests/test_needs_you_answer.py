"""A question announced where the person reads it: the notify command's JSON carries the question and the commands
that answer it; a desktop notification (``notify-send --action``) has Allow / Deny, which run ``agentlaunch answer``
(the same path as the command), here against a control socket served in-process playing the launch.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.launch.control import ControlServer
from agentlaunch.launch.questions import OpenQuestions
from agentlaunch.live.needs_you import CLICK_LOOK, NeedsYou
from agentlaunch.live.needs_you_answer import QuestionOpen, action_args, answer_commands
from agentlaunch.providers.native.source import QuestionAsked
from agentlaunch.sinks import SessionClosed, StateChanged
from tests.support.control_socket import serve, state_dir, write_record
from tests.support.waits import wait_for
from tests.test_answer import Told
from tests.test_needs_you import Clock, notified, recorder, view


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[tuple[ControlServer, OpenQuestions]]:
    questions = OpenQuestions("demo")
    server = serve(tmp_path / "control.sock")
    server.on_question = questions.handle
    write_record(state_dir(), "demo", control=str(server.path), state="asking")
    yield server, questions
    server.close()


def fake_notify_send(tmp_path: Path, click: str, actions: bool = True) -> Path:
    """A ``notify-send`` that logs its argv and, run with buttons, prints the name of the one ``click`` names."""
    folder = tmp_path / "desktop-bin"
    folder.mkdir(exist_ok=True)
    script = folder / "notify-send"
    out = tmp_path / "notify-send.jsonl"
    helps = "-A, --action=[NAME=]Text..." if actions else "-u, --urgency=LEVEL"
    script.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"if sys.argv[1:] == ['--help']:\n    print({helps!r}); sys.exit(0)\n"
        f"open({str(out)!r}, 'a').write(json.dumps(sys.argv) + '\\n')\n"
        f"if '--wait' in sys.argv:\n    print({click!r})\n"
    )
    script.chmod(0o755)
    return script


def runs(tmp_path: Path) -> list[list[str]]:
    path = tmp_path / "notify-send.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def shown(questions: OpenQuestions, told: Told, command: str = "rm -rf build") -> dict[str, Any]:
    return questions.asked(QuestionAsked("Bash", {"command": command}, ("once", "always", "deny"), told)).shown()


def test_the_notify_command_gets_the_question_and_the_commands_that_answer_it(tmp_path: Path) -> None:
    told = Told()
    questions = OpenQuestions("demo")
    question = shown(questions, told)
    sink = NeedsYou(notify=recorder(tmp_path), bell=False, pane=None, clock=Clock())
    launch = view(tmp_path)
    sink.event(StateChanged("thinking"), launch)
    sink.event(QuestionOpen(question), launch)
    sink.event(StateChanged("asking", question["asks"]), launch)
    (payload,) = wait_for(lambda: notified(tmp_path), what="the notify command's JSON")
    sink.event(SessionClosed(0), launch)
    assert payload["question"] == question and payload["reason"] == "Bash: rm -rf build"
    assert payload["answer"]["deny"] == [
        sys.executable,
        "-m",
        "agentlaunch",
        "answer",
        "demo",
        "--deny",
        "--question",
        question["id"],
    ]
    assert set(payload["answer"]) == {"once", "always", "deny"}


def test_asking_said_before_its_question_came_is_announced_again_with_it(tmp_path: Path) -> None:
    # Codex's thread status says asking before its approval request names what: the notify command gets both.
    questions = OpenQuestions("demo")
    sink = NeedsYou(notify=recorder(tmp_path), bell=False, pane=None, clock=Clock())
    launch = view(tmp_path)
    sink.event(StateChanged("thinking"), launch)
    sink.event(StateChanged("asking", "Codex waits for an approval in its interface"), launch)
    question = shown(questions, Told())
    sink.event(QuestionOpen(question), launch)
    both = wait_for(lambda: len(n := notified(tmp_path)) == 2 and n, what="two announcements")
    sink.event(SessionClosed(0), launch)
    # the two commands run side by side: their lines come in either order
    assert sorted(p.get("question", {}).get("id", "") for p in both) == ["", question["id"]]


def test_a_desktop_deny_click_answers_through_agentlaunch_answer(
    tmp_path: Path, launch: tuple[ControlServer, OpenQuestions]
) -> None:
    _, questions = launch
    told = Told()
    question = shown(questions, told, "echo <b>bold</b> \x1b[2J & more")
    fake = fake_notify_send(tmp_path, click="deny")
    sink = NeedsYou(notify=None, bell=False, pane=None, clock=Clock(), desktop=str(fake))
    launch_view = view(tmp_path)
    sink.event(StateChanged("thinking"), launch_view)
    sink.event(QuestionOpen(question), launch_view)
    sink.event(StateChanged("asking", question["asks"]), launch_view)
    (argv,) = wait_for(lambda: runs(tmp_path), what="notify-send run")
    assert "--action=once=Allow" in argv and "--action=deny=Deny" in argv and "--wait" in argv
    body = argv[-1]
    assert "\x1b" not in body and "<b>" not in body and "&lt;b&gt;bold&lt;/b&gt;" in body and "&amp;" in body
    wait_for(lambda: sink.clicks and sink.clicks[0][0].poll() is not None, what="the click")
    # No other event comes while the session asks: the sink's own look on the launch's loop reads the click.
    (delay, _, _), *more = launch_view.call_later.due
    assert delay == CLICK_LOOK and not more
    assert launch_view.call_later.run() == 1  # reads the click, runs the answer
    wait_for(lambda: told.answers, timeout=60, what="the answer through agentlaunch answer")
    assert told.answers == [("deny", "")] and sink.clicks == [] and launch_view.call_later.due == []  # no more looks
    sink.event(SessionClosed(0), launch_view)


def test_a_click_not_made_yet_is_looked_for_again_and_the_looks_end_with_the_session(tmp_path: Path) -> None:
    folder = tmp_path / "desktop-bin"
    folder.mkdir()
    fake = folder / "notify-send"  # takes --action; run with buttons, waits for a click that never comes
    fake.write_text(f"#!{sys.executable}\nimport sys, time\nprint('--action') if '--help' in sys.argv else time.sleep(60)\n")
    fake.chmod(0o755)
    sink = NeedsYou(notify=None, bell=False, pane=None, clock=Clock(), desktop=str(fake))
    launch = view(tmp_path)
    sink.event(QuestionOpen(shown(OpenQuestions("demo"), Told())), launch)
    sink.event(StateChanged("asking", "Bash: rm -rf build"), launch)
    assert launch.call_later.run() == 1 and len(sink.clicks) == 1  # no click yet: looked for again
    assert len(launch.call_later.due) == 1
    sink.event(SessionClosed(0), launch)
    assert sink.clicks == [] and launch.call_later.run() == 0  # the session is over: its look is cancelled


def test_a_notify_send_without_actions_shows_the_question_with_no_buttons(tmp_path: Path) -> None:
    fake = fake_notify_send(tmp_path, click="once", actions=False)
    sink = NeedsYou(notify=None, bell=False, pane=None, clock=Clock(), desktop=str(fake))
    launch = view(tmp_path)
    sink.event(QuestionOpen(shown(OpenQuestions("demo"), Told())), launch)
    sink.event(StateChanged("asking", "Bash: rm -rf build"), launch)
    (argv,) = wait_for(lambda: runs(tmp_path), what="notify-send run")
    sink.event(SessionClosed(0), launch)
    assert not any(a.startswith("--action") or a == "--wait" for a in argv) and sink.clicks == []


def test_buttons_only_for_what_a_click_can_answer() -> None:
    question = {"id": "abc", "options": ["reply"]}
    assert action_args(question) == [] and answer_commands("demo", question) == {}
    assert action_args({"id": "abc", "options": ["once", "deny"]}) == ["--action=once=Allow", "--action=deny=Deny", "--wait"]
    assert action_args(None) == []


def test_a_new_question_within_the_debounce_is_announced_the_same_one_is_not(tmp_path: Path) -> None:
    questions = OpenQuestions("demo")
    sink = NeedsYou(notify=recorder(tmp_path), bell=False, pane=None, clock=Clock(), debounce=5)
    launch = view(tmp_path)
    for command in ("touch a", "touch b"):  # two dialogs a second apart: each has its own id to answer
        sink.event(StateChanged("thinking"), launch)
        sink.event(QuestionOpen(shown(questions, Told(), command)), launch)
        sink.event(StateChanged("asking"), launch)
    sink.event(StateChanged("thinking"), launch)
    sink.event(StateChanged("asking"), launch)  # asking again with no new question: debounced as before
    both = wait_for(lambda: len(n := notified(tmp_path)) >= 2 and n, what="two announcements")
    sink.event(SessionClosed(0), launch)
    asks = sorted(p["question"]["asks"] for p in both)  # the two commands run side by side: either order
    assert asks == ["Bash: touch a", "Bash: touch b"] and len(notified(tmp_path)) == 2
