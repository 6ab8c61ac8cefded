"""Gemini's own question (its ``ask_user`` tool) read and answered with ``agentlaunch answer`` in tmux: a reply typed
into its box only while the pane shows it (its Enter only once the pane shows the typed words there), a denial as
Esc; end to end on the pinned Gemini CLI against the fake Gemini API.

Measured on Gemini CLI 0.61.0 (agentlaunch/providers/native/gemini_ask.py): the interactive CLI offers ``ask_user``;
its call runs ``BeforeTool`` (with the questions) and ``Notification`` ``ToolPermission`` (``details`` only
``{"type": "ask_user", "title": "Ask User"}``); the box shows ``Answer Questions``, the question and ``Enter to
submit · Esc to cancel``; the model reads ``{"answers": {"0": TEXT}}``; Esc cancels the request ("Request
cancelled.", the turn over, no further model call), as it does a permission prompt.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.fakeapi import gemini as gfake
from testbed.agent_files import write_agent
from testbed.clis import ensure_cli
from tests.e2e.test_answer_e2e import cli, pane_of, question, record, screen, state_of, tmux
from tests.support.cli_runs import run_cli
from tests.support.gemini_process import one_gemini_process
from tests.support.waits import turn_over, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

TEXT_QUESTION = {"question": "Which color?", "header": "Color", "type": "text", "placeholder": "a color"}
CHOICE_QUESTION = {
    "question": "Which size?",
    "header": "Size",
    "type": "choice",
    "options": [{"label": "Small", "description": "s"}, {"label": "Large", "description": "l"}],
}


def function_responses(api: gfake.GeminiFake) -> list[str]:
    """The tool results the model was sent, in order (the last request carries the conversation so far)."""
    contents = api.model_requests[-1].body.get("contents", [])
    return [
        json.dumps(part["functionResponse"]["response"])
        for content in contents
        for part in content.get("parts", [])
        if isinstance(part, dict) and "functionResponse" in part
    ]


def test_gemini_ask_user_replied_with_words_then_dismissed_only_while_its_box_shows(
    socket: str, isolated_home: Path, agents_dir: Path, request: pytest.FixtureRequest
) -> None:
    binary = ensure_cli("gemini")
    with tempfile.TemporaryDirectory(prefix="alga-") as folder, gfake.GeminiFake() as api:
        root = Path(folder)
        home, work = root / "home", root / "work"
        home.mkdir()
        work.mkdir()
        env = gfake.prepare_gemini_home(home, api.base_url, max_attempts=1, no_relaunch=one_gemini_process(request))
        env.update(TERM="xterm-256color", AGENTLAUNCH_TITLE="0", AGENTLAUNCH_AGENTS_DIR=str(agents_dir))
        env.update({k: v for k, v in os.environ.items() if k.startswith("AGENTLAUNCH_") and k not in env})
        agent = {"provider": "gemini", "model": "gemini-2.5-pro", "command": str(binary), "working_dir": str(work)}
        write_agent(agents_dir, "gem", {**agent, "startup": "say hello"})
        usage = gfake.GeminiUsage(prompt=900, output=7)
        api.script.push(gfake.TextReply("Hello, ready.", usage))
        api.script.push(gfake.FunctionCallReply("ask_user", {"questions": [TEXT_QUESTION]}, usage))
        api.script.push(gfake.TextReply("Green noted.", usage))
        api.script.push(gfake.FunctionCallReply("ask_user", {"questions": [CHOICE_QUESTION]}, usage))
        api.script.push(gfake.TextReply("Never sent.", usage))
        up = run_cli("tmux", "up", "gem", "--socket", socket, "--no-attach", "--wait", "90", env=env, cwd=work, timeout=150)
        assert up.returncode == 0, up.stderr.decode()
        pane = pane_of(socket, "gem")
        wait_for(lambda: turn_over(record(env, work, "gem")), timeout=90, what="the startup turn over")

        def ask(text: str) -> dict[str, Any]:
            tmux(socket, "send-keys", "-t", pane, "-l", text)
            wait_for(lambda: text in screen(socket, pane), timeout=30, what=f"{text!r} typed")
            sent = len(api.model_requests)
            for _ in range(3):  # Gemini 0.61 under load keeps an Enter read with the typed keys in its box
                tmux(socket, "send-keys", "-t", pane, "Enter")
                with contextlib.suppress(AssertionError):
                    wait_for(lambda: len(api.model_requests) > sent, timeout=5, what="the prompt's call")
                    break
            wait_for(lambda: state_of(env, work, "gem") == "asking", timeout=60, what="asking")
            wait_for(lambda: "Answer Questions" in screen(socket, pane), timeout=30, what="the box on the screen")
            return question(env, work, "gem")

        first = ask("ask me")
        assert (first["tool"], first["asks"], first["options"]) == ("ask_user", "ask_user: Which color?", ["reply", "deny"])
        assert record(env, work, "gem")["state_reason"] == "ask_user: Which color?"
        allow = cli(env, work, "answer", "gem", "--allow", "--question", first["id"])
        assert allow.returncode == 2, allow.stderr  # a question, not a tool: nothing typed
        replied = cli(env, work, "answer", "gem", "--reply", "Green,\n  my own words", "--question", first["id"])
        assert replied.returncode == 0, replied.stderr
        wait_for(lambda: "Green noted." in screen(socket, pane), timeout=60, what="the replied turn's answer")
        wait_for(lambda: state_of(env, work, "gem") == "waiting", timeout=60, what="the turn over")
        assert function_responses(api)[-1] == json.dumps({"output": '{"answers":{"0":"Green, my own words"}}'})

        second = ask("ask again")  # a choice: picked with arrows in the box; only a denial from outside
        assert (second["asks"], second["options"]) == ("ask_user: Which size? (Small / Large)", ["deny"]), second
        calls = len(api.model_requests)
        denied = cli(env, work, "answer", "gem", "--deny", "--question", second["id"])
        assert denied.returncode == 0, denied.stderr
        wait_for(lambda: "Request cancelled" in screen(socket, pane), timeout=60, what="the request cancelled")
        wait_for(lambda: state_of(env, work, "gem") == "waiting", timeout=60, what="the second turn over")
        assert len(api.model_requests) == calls  # Esc cancels the request: no further model call
        late = cli(env, work, "answer", "gem", "--reply", "typed nowhere", "--question", first["id"])
        assert late.returncode == 10, late.stderr  # closed: no key typed into the input box
        assert "Type your message" in screen(socket, pane) and "typed nowhere" not in screen(socket, pane)
        assert run_cli("tmux", "down", "--socket", socket, env=env, cwd=work, timeout=120).returncode == 0
