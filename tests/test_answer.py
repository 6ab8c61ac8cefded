"""``agentlaunch answer``: the question/answer protocol on a launch's control socket (agentlaunch.launch.questions),
the command's forms, refusals and exit codes (against a socket served in-process, playing the launch), and the
per-CLI answer makers (Claude Code's hook answer, Gemini's keys only while its screen shows the prompt).

The real CLIs answering: tests/e2e/test_answer_e2e.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlaunch.launch.control import ControlServer
from agentlaunch.launch.control_client import ControlClient
from agentlaunch.launch.control_request import Parsed, parse_request
from agentlaunch.launch.native import screen_keys
from agentlaunch.launch.questions import OpenQuestions, answer_problem
from agentlaunch.providers.native.claude_question import DENIED, decision, question_items
from agentlaunch.providers.native.gemini_records import gemini_asked
from agentlaunch.providers.native.source import QuestionAsked
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.control_socket import serve, state_dir, write_record


class Told:
    """The CLI's side of a question: every answer it was told, and whether it still takes one."""

    def __init__(self) -> None:
        self.answers: list[tuple[str, str]] = []
        self.takes = True

    def __call__(self, decision: str, text: str) -> bool:
        if self.takes:
            self.answers.append((decision, text))
        return self.takes


def asked(
    told: Told, tool: str = "Bash", tool_input: Any = None, options: tuple[str, ...] = ("once", "always", "deny")
) -> QuestionAsked:
    return QuestionAsked(tool, {"command": "rm -rf build"} if tool_input is None else tool_input, options, told)


# -- the launch's side ---------------------------------------------------------------------------


def test_nothing_asked_is_no_question_and_an_answer_to_nothing_is_refused() -> None:
    questions = OpenQuestions("bob")
    assert questions.handle({"question": True}) == {"ok": False, "no_question": True, "error": "bob asks nothing now"}
    reply = questions.handle({"answer": {"question": "abc", "decision": "once"}})
    assert reply["ok"] is False and reply["no_question"] is True


def test_a_question_is_shown_with_its_id_and_answered_once() -> None:
    told = Told()
    questions = OpenQuestions("bob")
    questions.asked(asked(told))
    shown = questions.handle({"question": True})["question"]
    assert shown["tool"] == "Bash" and shown["asks"] == "Bash: rm -rf build"
    assert shown["options"] == ["once", "always", "deny"] and json.loads(shown["input"]) == {"command": "rm -rf build"}
    assert len(shown["id"]) == 12
    assert questions.handle({"answer": {"question": shown["id"], "decision": "once"}}) == {
        "ok": True,
        "answered": shown["id"],
        "decision": "once",
    }
    assert told.answers == [("once", "")]
    # Two answers at once: the loop takes one after the other; the second finds the question closed.
    second = questions.handle({"answer": {"question": shown["id"], "decision": "deny"}})
    assert second["ok"] is False and second["changed"] is True and "answered meanwhile" in second["error"]
    assert told.answers == [("once", "")]


def test_the_same_tool_asked_again_is_another_question_and_the_old_id_is_refused_as_changed() -> None:
    first_told, second_told = Told(), Told()
    questions = OpenQuestions("bob")
    first = questions.asked(asked(first_told)).id
    questions.closed()  # answered in the pane
    second = questions.asked(asked(second_told)).id
    assert first != second
    reply = questions.handle({"answer": {"question": first, "decision": "once"}})
    assert reply["changed"] is True and "asks another now (Bash: rm -rf build)" in reply["error"]
    assert first_told.answers == [] and second_told.answers == []
    unknown = questions.handle({"answer": {"question": "not-an-id", "decision": "once"}})
    assert unknown["changed"] is True and unknown["question"]["id"] == second


def test_a_budget_that_holds_tools_refuses_an_allow_but_takes_a_deny() -> None:
    told = Told()
    questions = OpenQuestions("bob", held=lambda: "budget: daily $1.00 spent")
    qid = questions.asked(asked(told)).id
    for choice in ("once", "always"):
        reply = questions.handle({"answer": {"question": qid, "decision": choice}})
        assert reply["budget"] is True and "daily $1.00 spent" in reply["error"]
    assert told.answers == []
    assert questions.handle({"answer": {"question": qid, "decision": "deny"}})["ok"] is True
    assert told.answers == [("deny", "")]


def test_an_option_the_cli_does_not_offer_and_a_cli_that_no_longer_waits_are_refused() -> None:
    told = Told()
    questions = OpenQuestions("bob")
    qid = questions.asked(asked(told, options=("once", "deny"))).id
    reply = questions.handle({"answer": {"question": qid, "decision": "always"}})
    assert reply["bad_input"] is True and "takes once, deny" in reply["error"]
    told.takes = False  # the hook timed out, the screen shows something else
    gone = questions.handle({"answer": {"question": qid, "decision": "once"}})
    assert gone["no_question"] is True and "answer it in its window" in gone["error"]


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("yes", "not a JSON object"),
        ({"decision": "once"}, "names no question"),
        ({"question": "", "decision": "once"}, "names no question"),
        ({"question": "a", "decision": "maybe"}, "one of once, always, deny, reply"),
        ({"question": "a", "decision": "reply"}, "needs its text"),
        ({"question": "a", "decision": "reply", "text": "  "}, "needs its text"),
        ({"question": "a", "decision": "reply", "text": "hi\x1b[2J"}, "control character"),
        ({"question": "a", "decision": "reply", "text": "x" * 20000}, "at most"),
        ({"question": "a", "decision": "once", "text": "why"}, "only a reply has a text"),
    ],
)
def test_a_malformed_answer_is_refused_with_its_reason(answer: Any, problem: str) -> None:
    said = answer_problem(answer)
    assert said is not None and problem in said
    told = Told()
    questions = OpenQuestions("bob")
    questions.asked(asked(told))
    reply = questions.handle({"answer": answer})
    assert reply["bad_input"] is True and told.answers == []


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=12,
    )
)
def test_any_json_answer_or_request_line_is_taken_or_refused_never_raised(value: Any) -> None:
    questions = OpenQuestions("bob")
    questions.asked(asked(Told()))
    assert isinstance(questions.handle({"answer": value}), dict)
    parsed = parse_request(json.dumps({"answer": value}).encode())
    assert isinstance(parsed, Parsed) and parsed.asked == {"answer": value}


def test_the_question_and_answer_requests_are_parsed_apart_from_a_prompt() -> None:
    assert parse_request(b'{"question": true}') == Parsed("", False, asked={"question": True})
    assert parse_request(b'{"question": "yes", "prompt": "hi"}') == Parsed("hi", False)  # only true asks


# -- over the socket --------------------------------------------------------------------------------


@pytest.fixture
def asking(tmp_path: Path) -> Iterator[tuple[ControlServer, OpenQuestions, Told]]:
    told = Told()
    questions = OpenQuestions("scribe")
    server = serve(tmp_path / "control.sock")
    server.on_question = questions.handle
    yield server, questions, told
    server.close()


def test_the_socket_carries_the_question_and_the_answer(asking: tuple[ControlServer, OpenQuestions, Told]) -> None:
    server, questions, told = asking
    qid = questions.asked(asked(told)).id
    client = ControlClient(str(server.path))
    shown = client.ask({"question": True})
    client.close()
    assert shown is not None and shown["question"]["id"] == qid
    client = ControlClient(str(server.path))
    assert client.ask({"answer": {"question": qid, "decision": "deny"}}) == {"ok": True, "answered": qid, "decision": "deny"}
    client.close()
    assert told.answers == [("deny", "")]


def test_a_session_without_questions_says_so(tmp_path: Path) -> None:
    server = serve(tmp_path / "control.sock")
    try:
        client = ControlClient(str(server.path))
        reply = client.ask({"question": True})
        client.close()
    finally:
        server.close()
    assert reply is not None and reply["no_question"] is True and "its own window" in reply["error"]


# -- the command ----------------------------------------------------------------------------------------


def answer_in_background(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "agentlaunch", "answer", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def test_the_command_shows_then_answers_and_names_each_refusal_by_its_exit_code(
    asking: tuple[ControlServer, OpenQuestions, Told],
) -> None:
    server, questions, told = asking
    write_record(state_dir(), "scribe", control=str(server.path), state="asking")
    nothing = run_cli("answer", "scribe", "--json")
    assert nothing.returncode == 9 and b"scribe asks nothing now" in nothing.stderr
    qid = questions.asked(asked(told, tool_input={"command": "echo \x1b]0;pwned\x07 [bold]hi[/bold]"})).id
    shown = run_cli("answer", "scribe")
    text = shown.stdout.decode()
    assert shown.returncode == 0 and "\x1b" not in text and "\x07" not in text
    assert "\\x1b]0;pwned\\x07 [bold]hi[/bold]" in text and f"question: {qid}" in text
    as_json = json.loads(run_cli("answer", "scribe", "--json").stdout)
    assert as_json["question"]["id"] == qid and "\x1b" in as_json["question"]["asks"]  # JSON keeps the data exactly
    assert run_cli("answer", "scribe", "--allow", "--deny", "--question", qid).returncode == 2
    no_id = run_cli("answer", "scribe", "--deny")
    assert no_id.returncode == 2 and b"--question ID" in no_id.stderr
    assert told.answers == []
    done = run_cli("answer", "scribe", "--always", "--question", qid, "--json")
    assert done.returncode == 0 and json.loads(done.stdout) == {"agent": "scribe", "answered": qid, "decision": "always"}
    late = run_cli("answer", "scribe", "--deny", "--question", qid)
    assert late.returncode == 10 and b"answered meanwhile" in late.stderr
    assert told.answers == [("always", "")]


def test_an_allow_a_budget_holds_is_exit_6_and_an_option_not_offered_exit_2(tmp_path: Path) -> None:
    told = Told()
    questions = OpenQuestions("scribe", held=lambda: "budget: spent")
    server = serve(tmp_path / "control.sock")
    server.on_question = questions.handle
    try:
        write_record(state_dir(), "scribe", control=str(server.path), state="asking")
        qid = questions.asked(asked(told, options=("once", "deny"))).id
        assert run_cli("answer", "scribe", "--allow", "--question", qid).returncode == 6
        assert run_cli("answer", "scribe", "--always", "--question", qid).returncode == 2
        assert run_cli("answer", "scribe", "--reply", "yes", "--question", qid).returncode == 2
    finally:
        server.close()
    assert told.answers == []


def test_answer_to_an_agent_that_died_or_never_ran_or_has_no_interface() -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    write_record(state_dir(), "ghost", pid=int(dead.stdout), pid_start="0")
    gone = run_cli("answer", "ghost")
    assert gone.returncode == 7 and b"ghost is not running" in gone.stderr
    write_record(state_dir(), "oneshot", state="thinking", control=None)
    headless = run_cli_inprocess("answer", "oneshot")
    assert headless.returncode == 7 and b"no running interface" in headless.stderr
    write_record(state_dir(), "vanished", control="/nonexistent/control.sock")
    unreachable = run_cli_inprocess("answer", "vanished")
    assert unreachable.returncode == 7 and b"does not answer" in unreachable.stderr


def test_answer_help_teaches_the_forms_and_the_exit_codes() -> None:
    shown = run_cli_inprocess("answer", "--help").stdout.decode()
    for words in ("--allow", "--always", "--deny", "--reply", "--question", "9 the agent asks nothing", "10 the question"):
        assert words in " ".join(shown.split()), words


# -- per CLI ------------------------------------------------------------------------------------------------


def test_claudes_hook_answers_allow_once_always_with_its_suggestions_and_deny_with_the_reason() -> None:
    suggestion = {"type": "addDirectories", "directories": ["/w"], "destination": "session"}
    payload = {"tool_name": "Bash", "tool_input": {"command": "ls"}, "permission_suggestions": [suggestion]}
    inner = lambda choice: decision(choice, payload)["hookSpecificOutput"]  # noqa: E731
    assert inner("once") == {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}
    assert inner("always")["decision"] == {"behavior": "allow", "updatedPermissions": [suggestion]}
    assert inner("deny")["decision"] == {"behavior": "deny", "message": DENIED}


class FakeServer:
    def __init__(self) -> None:
        self.said: list[tuple[str, str]] = []

    def answer(self, reply: str, text: str) -> bool:
        self.said.append((reply, text))
        return True


def test_claudes_question_offers_always_only_where_the_dialog_has_it() -> None:
    server = FakeServer()
    (item,) = question_items(server, "7", {"tool_name": "Write", "tool_input": {"file_path": "a"}})  # type: ignore[arg-type]
    assert isinstance(item, QuestionAsked) and item.options == ("once", "deny") and item.answer is not None
    assert item.answer("deny", "") is True
    assert server.said[0][0] == "7" and json.loads(server.said[0][1])["hookSpecificOutput"]["decision"]["behavior"] == "deny"


class Keys:
    def __init__(self) -> None:
        self.pressed: list[bytes] = []

    def press(self, keys: bytes) -> None:
        self.pressed.append(keys)


PROMPT = """│ ? Shell  touch a.txt                      │
│ Allow execution of [Shell]?                │
│ ● 1. Allow once                            │
│   2. Allow for this    session             │
│   3. No, suggest changes (esc)             │"""


def test_gemini_keys_are_typed_only_while_the_screen_shows_that_prompt() -> None:
    item = gemini_asked({"notification_type": "ToolPermission", "details": {"type": "exec", "command": "touch a.txt"}})
    assert item.tool == "shell" and item.options == ("once", "always", "deny") and item.answer is None
    keys = Keys()
    assert screen_keys.answer(keys, item, "deny", "", screen=PROMPT) is True
    assert keys.pressed == [b"3"]
    other = PROMPT.replace("touch a.txt", "rm -rf /")  # another prompt: not the question the person saw
    assert screen_keys.answer(keys, item, "once", "", screen=other) is False
    assert screen_keys.answer(keys, item, "once", "", screen=" >   Type your message") is False  # the input box
    assert screen_keys.answer(keys, item, "reply", "", screen=PROMPT) is False  # no key for it
    assert keys.pressed == [b"3"]


def test_outside_tmux_the_screen_cannot_be_read_and_nothing_is_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.delenv("TMUX_PANE", raising=False)
    item = gemini_asked({"details": {"type": "exec", "command": "ls"}})
    keys = Keys()
    assert screen_keys.pane_text() is None
    assert screen_keys.answer(keys, item, "once", "") is False and keys.pressed == []


def test_an_asking_session_whose_cli_handed_nothing_over_says_to_answer_in_its_window() -> None:
    # Codex's direct route, a CLI that never reports its question: asking, but nothing agentlaunch can answer.
    questions = OpenQuestions("bob", asking=lambda: True)
    reply = questions.handle({"question": True})
    assert reply["no_question"] is True and "answer it there" in reply["error"]


def test_the_interactive_form_shows_the_question_and_takes_a_key_on_a_terminal(
    asking: tuple[ControlServer, OpenQuestions, Told],
) -> None:
    import os

    import pexpect

    server, questions, told = asking
    write_record(state_dir(), "scribe", control=str(server.path), state="asking")
    qid = questions.asked(asked(told)).id
    env = {**os.environ, "TERM": "dumb"}
    child = pexpect.spawn(sys.executable, ["-m", "agentlaunch", "answer", "scribe"], env=env, encoding="utf-8", timeout=60)
    child.expect(f"question: {qid}")
    child.expect(r"answer \(a allow  A allow always  d deny, Enter: leave it\): ")
    child.sendline("d")
    child.expect(f"scribe: denied \\(question {qid}\\)")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and told.answers == [("deny", "")]

    qid = questions.asked(asked(told)).id
    child = pexpect.spawn(sys.executable, ["-m", "agentlaunch", "answer", "scribe"], env=env, encoding="utf-8", timeout=60)
    child.expect("Enter: leave it")
    child.sendline("")  # Enter: nothing answered, the question stays open
    child.expect("left open: nothing answered")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and told.answers == [("deny", "")] and questions.current is not None


def test_two_answers_at_once_over_the_socket_one_is_told_the_other_refused_as_changed(
    asking: tuple[ControlServer, OpenQuestions, Told],
) -> None:
    import threading

    server, questions, told = asking
    qid = questions.asked(asked(told)).id
    replies: list[dict[str, Any] | None] = []

    def answer(decision: str) -> None:
        client = ControlClient(str(server.path))
        replies.append(client.ask({"answer": {"question": qid, "decision": decision}}))
        client.close()

    threads = [threading.Thread(target=answer, args=(d,)) for d in ("once", "deny")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(bool(r and r["ok"]) for r in replies) == [False, True]
    refused = next(r for r in replies if r and not r["ok"])
    assert refused["changed"] is True and len(told.answers) == 1


def test_the_deck_waits_briefly_for_the_question_its_row_shows_to_be_handed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    """The row says asking (Claude Code's PreToolUse) a moment before the question opens (its PermissionRequest hook):
    the deck's answer waits for it instead of saying the agent asks nothing; past the wait, it does say so."""
    from agentlaunch.deck import answering
    from agentlaunch.errors import NoQuestion

    asked = {"id": "q1", "asks": "Bash: touch x"}
    tries: list[str] = []

    def opens_on_the_third_try(agent: str, session: str | None) -> dict[str, Any]:
        tries.append(agent)
        if len(tries) < 3:
            raise NoQuestion(f"{agent} asks nothing now")
        return asked

    given_answers: list[tuple[str, str]] = []
    monkeypatch.setattr(answering, "open_question", opens_on_the_third_try)
    monkeypatch.setattr(
        answering, "give_answer", lambda agent, question, decision, text, session: given_answers.append((question, decision))
    )
    monkeypatch.setattr(answering.time, "sleep", lambda _s: None)
    outcome = answering.answer_shown("asker", None, "Bash: touch x", "deny")
    assert outcome.code == 0 and given_answers == [("q1", "deny")] and len(tries) == 3, outcome

    def never(agent: str, session: str | None) -> dict[str, Any]:
        raise NoQuestion(f"{agent} asks nothing now")

    clock = iter(range(0, 1000))
    monkeypatch.setattr(answering, "open_question", never)
    monkeypatch.setattr(answering.time, "monotonic", lambda: float(next(clock)))
    late = answering.answer_shown("asker", None, "Bash: touch x", "deny")
    assert late.code == 9 and "asks nothing now" in late.said and given_answers == [("q1", "deny")], late
