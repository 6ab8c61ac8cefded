"""The native sources of Codex and Gemini on their real TUIs (pexpect + pyte), against the fake APIs.

The TUI runs on a PTY with ``native_extras(ctx)``'s flags, in a temporary HOME
seeded like a set-up user's; the sources are read as the relay loop reads them
(see testbed/native_flows.py). What is pinned: every model call of a
tool turn is reported once with the fake API's exact figures (the same a
headless run records), the session id is learned, the states the CLI can
tell arrive in order, and a resume reports only its own calls.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentlaunch.events import CallUsage, ContextWindow, SessionStarted, Text
from agentlaunch.fakeapi.gemini import FunctionCallReply, GeminiFake, GeminiScript, GeminiUsage, prepare_gemini_home
from agentlaunch.fakeapi.gemini import TextReply as GeminiText
from agentlaunch.fakeapi.responses import ResponsesScript, ResponsesUsage, ShellCallReply, TextReply
from agentlaunch.sinks import StateChanged
from agentlaunch.token_usage import Usage
from testbed.clis import ensure_cli
from testbed.native_flows import Followed, codex_turns, gemini_turns
from testbed.native_tui import TitledResponsesFake, seed_codex_home

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


def after_up(reported: list[str]) -> list[str]:
    """What a source reported after the CLI's report that it is up, a leading ``waiting`` (its SessionStart hook, or
    its session file found; issue 24: until then the launch says ``starting``). Codex's SessionStart comes before
    any prompt; Gemini's is there or not by the time its first prompt is read, so the turns are compared without it."""
    return reported[1:] if reported[:1] == ["waiting"] else reported


def states(followed: Followed) -> list[str]:
    return after_up([i.state for i in followed.of(StateChanged)])


def calls(followed: Followed) -> list[tuple[Usage, str | None]]:
    return [(c.usage, c.call_id) for c in followed.of(CallUsage)]


def answers(followed: Followed) -> list[str]:
    """Each answer text and each ``waiting``, in the order the source reported them."""
    return after_up(
        [
            i.text if isinstance(i, Text) else i.state
            for i in followed.items
            if isinstance(i, Text) or (isinstance(i, StateChanged) and i.state == "waiting")
        ]
    )


def test_codex_tui_tool_turn_is_metered_once_per_call_and_resume_adds_only_its_own(tmp_path: Path) -> None:
    codex = ensure_cli("codex")
    workdir = tmp_path / "work"
    workdir.mkdir()
    script = ResponsesScript(
        [
            ShellCallReply("echo hi", ResponsesUsage(9000, 8000, 7, 3)),
            TextReply("first answer done", ResponsesUsage(9100, 9000, 5, 0)),
            TextReply("second answer done", ResponsesUsage(9200, 9100, 4, 0)),
            TextReply("third answer done", ResponsesUsage(9300, 9200, 6, 1)),
        ]
    )
    with TitledResponsesFake(script) as api:
        env = seed_codex_home(tmp_path / "home", api.base_url, workdir)
        first = codex_turns(codex, env, workdir, ["run echo hi please", "and again"], ["first answer done", "second answer done"])
        assert len(api.turn_requests) == 3
        (started,) = first.followed.of(SessionStarted)
        assert first.rollout is not None and first.rollout.name.endswith(f"-{started.session_id}.jsonl")
        # input is the uncached part (Codex's input_tokens includes the cached ones); each call once, by response id.
        assert calls(first.followed) == [
            (Usage(input=1000, cache_read=8000, output=7, reasoning=3), "resp_fake_1"),
            (Usage(input=100, cache_read=9000, output=5), "resp_fake_2"),
            (Usage(input=100, cache_read=9100, output=4), "resp_fake_3"),
        ]
        assert all(c.model == "gpt-5.5" for c in first.followed.of(CallUsage))
        assert [w.tokens for w in first.followed.of(ContextWindow)] == [258400]
        assert states(first.followed) == ["thinking", "tool", "thinking", "waiting", "thinking", "waiting"]
        # The fake API's answer of each turn, once, before the waiting that ends the turn.
        assert answers(first.followed) == ["first answer done", "waiting", "second answer done", "waiting"]
        # The hooks ran without Codex's trust dialog, and nothing was written into the user's config.
        assert "Hooks need review" not in first.screen
        assert "hooks" not in (tmp_path / "home" / ".codex" / "config.toml").read_text()

        resumed = codex_turns(codex, env, workdir, ["one more"], ["third answer done"], session_id=started.session_id)
        assert resumed.rollout == first.rollout
        assert calls(resumed.followed) == [(Usage(input=100, cache_read=9200, output=6, reasoning=1), "resp_fake_4")]
        assert [s.session_id for s in resumed.followed.of(SessionStarted)] == [started.session_id]
        assert states(resumed.followed)[-1] == "waiting"
        assert answers(resumed.followed) == ["third answer done", "waiting"]  # the earlier turns are history


def test_codex_tui_permission_prompt_is_asking(tmp_path: Path) -> None:
    codex = ensure_cli("codex")
    workdir = tmp_path / "work"
    workdir.mkdir()
    # A command asking to run outside the sandbox waits for the person's approval.
    escalated = {"cmd": "touch made-by-tool", "sandbox_permissions": "require_escalated", "justification": "a test"}
    script = ResponsesScript(
        [
            ShellCallReply(arguments=escalated, usage=ResponsesUsage(9000, 8000, 7, 0)),
            TextReply("made it", ResponsesUsage(9100, 9000, 5, 0)),
        ]
    )
    with TitledResponsesFake(script) as api:
        env = seed_codex_home(tmp_path / "home", api.base_url, workdir, extra='approval_policy = "on-request"\n')
        run = codex_turns(codex, env, workdir, ["make the file please"], ["made it"], answer="y")
        assert len(api.turn_requests) == 2
    seen = states(run.followed)
    # PreToolUse comes before the prompt; Codex has no hook for the answer, so "asking" lasts until the tool ran.
    assert seen == ["thinking", "tool", "asking", "thinking", "waiting"], (seen, run.screen)
    assert (workdir / "made-by-tool").exists()


def test_gemini_tui_tool_turn_is_metered_once_per_call_and_resume_adds_only_its_own(tmp_path: Path) -> None:
    gemini = ensure_cli("gemini")
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "notes.txt").write_text("hello notes\n")
    script = GeminiScript(
        [
            FunctionCallReply("read_file", {"file_path": str(workdir / "notes.txt")}, GeminiUsage(9000, 7, 6000, 3)),
            GeminiText("first answer done", GeminiUsage(9100, 5, 9000)),
            GeminiText("second answer done", GeminiUsage(9200, 4, 9100)),
            GeminiText("third answer done", GeminiUsage(9300, 6, 9200, 2)),
        ]
    )
    with GeminiFake(script) as api:
        env = prepare_gemini_home(tmp_path / "home", api.base_url, no_relaunch=True)  # the tree is not this test's subject
        env["TERM"] = "xterm-256color"
        model = "gemini-2.5-pro"
        first = gemini_turns(
            gemini, env, workdir, model, ["read notes.txt please", "and again"], ["first answer done", "second answer done"]
        )
        assert len(api.model_requests) == 3
        (session,) = first.files
        session_id = json.loads(session.read_text().splitlines()[0])["sessionId"]
        assert [s.session_id for s in first.followed.of(SessionStarted)] == [session_id]
        # input is the uncached part, thoughts count as output (as the headless split reads the same file).
        assert [c.usage for c in first.followed.of(CallUsage)] == [
            Usage(input=3000, cache_read=6000, output=10, reasoning=3),
            Usage(input=100, cache_read=9000, output=5),
            Usage(input=100, cache_read=9100, output=4),
        ]
        assert len({c.call_id for c in first.followed.of(CallUsage)}) == 3
        assert all(c.model == model for c in first.followed.of(CallUsage))
        assert states(first.followed) == ["thinking", "tool", "thinking", "waiting", "thinking", "waiting"]
        assert answers(first.followed) == ["first answer done", "waiting", "second answer done", "waiting"]

        resumed = gemini_turns(gemini, env, workdir, model, ["one more"], ["third answer done"], session_id=session_id)
        assert [c.usage for c in resumed.followed.of(CallUsage)] == [Usage(input=100, cache_read=9200, output=8, reasoning=2)]
        assert states(resumed.followed)[-1] == "waiting"
        assert answers(resumed.followed) == ["third answer done", "waiting"]  # the $set of the history gives none


def test_codex_users_own_notify_and_hooks_keep_running_beside_agentlaunchs(tmp_path: Path) -> None:
    from agentlaunch.providers.native.codex_hooks import trust_hash

    codex = ensure_cli("codex")
    workdir = tmp_path / "work"
    workdir.mkdir()
    notified, hooked = tmp_path / "notified.txt", tmp_path / "hooked.txt"
    notify = tmp_path / "notify.sh"  # the user's notify program, failing after it did its job
    notify.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" >> {notified}\nexit 3\n')
    notify.chmod(0o755)
    user_hook = f"sh -c 'cat >> {hooked}'"
    config = tmp_path / "home" / ".codex" / "config.toml"
    own = (
        f'notify = ["{notify}"]\n'
        f'[[hooks.Stop]]\nhooks = [{{type = "command", command = {json.dumps(user_hook)}, timeout = 10}}]\n'
        f'[hooks.state."{config}:stop:0:0"]\ntrusted_hash = "{trust_hash("stop", user_hook)}"\n'
    )
    script = ResponsesScript([TextReply("first answer done", ResponsesUsage(9000, 8000, 7, 0))])
    with TitledResponsesFake(script) as api:
        # notify is a top-level key: it goes before the tables seed_codex_home writes.
        env = seed_codex_home(tmp_path / "home", api.base_url, workdir)
        top, tables = own.split("[[hooks.Stop]]")
        config.write_text(top + config.read_text() + "[[hooks.Stop]]" + tables)
        before = config.read_text()
        run = codex_turns(codex, env, workdir, ["say something"], ["first answer done"])
    assert states(run.followed) == ["thinking", "waiting"]
    assert calls(run.followed) == [(Usage(input=1000, cache_read=8000, output=7), "resp_fake_1")]
    reports = [json.loads(line) for line in notified.read_text().splitlines()]
    main_turn = [r for r in reports if r.get("input-messages") == ["say something"]]  # not the thread-title call
    assert len(main_turn) == 1 and main_turn[0]["type"] == "agent-turn-complete"  # the user's notify ran
    assert json.loads(hooked.read_text().splitlines()[0])["hook_event_name"] == "Stop"  # and their own hook
    assert "Hooks need review" not in run.screen
    # Nothing of agentlaunch's landed in the user's config (Codex itself adds its [tui] notes there).
    after = config.read_text()
    assert after.startswith(before.rstrip("\n")) and "session-flags" not in after and "hook_report" not in after
