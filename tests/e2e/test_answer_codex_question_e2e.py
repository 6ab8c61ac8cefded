"""Codex's own question (its ``request_user_input`` tool) answered with ``agentlaunch answer --reply`` on agentlaunch's
app-server connection, and denied; end to end on the pinned Codex CLI against the fake Responses API.

Measured on Codex 0.171.0 (agentlaunch/providers/native/codex_question.py): with the feature
``default_mode_request_user_input`` on, the model is offered ``request_user_input`` in the default mode; its call
reaches agentlaunch's connection as ``item/tool/requestUserInput``, the interface shows the question with its options
(and "None of the above"), the CLI's own OSC 7501 report says ``blocked kind=question``, and the first answer the
app-server gets closes the interface's question. The model reads ``{"answers": {ID: {"answers": [TEXT]}}}``, or
``{"answers": {}}`` for a denial.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentlaunch.fakeapi import responses as cfake
from testbed.native_tui import TitledResponsesFake
from tests.e2e.test_answer_e2e import answer_cli
from tests.e2e.test_native_codex_remote import setup, short_root, status_of  # noqa: F401 - short_root: a fixture
from tests.e2e.test_native_run_codex_gemini import quit_tui, type_prompt, until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

COLOR = {
    "id": "color",
    "header": "Color",
    "question": "Which color?",
    "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}],
}


def ask(usage: cfake.ResponsesUsage) -> cfake.ShellCallReply:
    """The model's call of Codex's question tool."""
    return cfake.ShellCallReply(name="request_user_input", arguments={"questions": [COLOR]}, usage=usage)


def outputs(api: TitledResponsesFake) -> list[str]:
    """The tool outputs the model was sent, in order (the last request carries the conversation so far)."""
    body = api.turn_requests[-1].body
    return [str(item.get("output")) for item in body.get("input", []) if item.get("type") == "function_call_output"]


def test_codexs_question_answered_with_a_reply_then_denied_on_the_app_server_connection(
    short_root: Path,  # noqa: F811 - the fixture
    agents_dir: Path,
) -> None:
    script = cfake.ResponsesScript(
        [
            cfake.TextReply("STARTUP-ANSWER", cfake.ResponsesUsage(9000, 8000, 7, 3)),
            ask(cfake.ResponsesUsage(9100, 9000, 5, 0)),
            cfake.TextReply("REPLIED-ANSWER", cfake.ResponsesUsage(9200, 9100, 4, 0)),
            ask(cfake.ResponsesUsage(9300, 9200, 5, 0)),
            cfake.TextReply("DENIED-ANSWER", cfake.ResponsesUsage(9400, 9300, 4, 0)),
        ]
    )
    with TitledResponsesFake(script) as api:
        agent = setup(short_root, agents_dir, api)
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

            type_prompt(tui, "ask again", "Which color?")
            until(tui, lambda: status_of(agent).get("state") == "asking", "status 'asking' for the second question")
            second = json.loads(answer_cli(tui, agent.env, agent.work, "coder", "--json").stdout)["question"]
            stale = answer_cli(tui, agent.env, agent.work, "coder", "--reply", "late", "--question", first["id"])
            assert stale.returncode == 10, stale.stderr  # the question named was answered: nothing answered
            denied = answer_cli(tui, agent.env, agent.work, "coder", "--deny", "--question", second["id"])
            assert denied.returncode == 0, denied.stderr
            until(tui, lambda: "DENIED-ANSWER" in tui.text(), "the denied turn's answer")
            until(tui, lambda: agent.state() == "waiting", "status 'waiting' after the denied turn")
        finally:
            quit_tui(tui)
    assert outputs(api)[-1] == '{"answers":{}}', outputs(api)  # denied: no answer; the model goes on by itself
