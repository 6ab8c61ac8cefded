"""Claude Code's meters and states in native mode, end to end: `agentlaunch run AGENT` on the real TUI.

agentlaunch runs on a PTY (pexpect) against the fake Anthropic API, the temp
HOME seeded as a set-up user's, whose own settings have a status line. What a
person and a script see is read where they read it: the screen (pyte), the
`agentlaunch status --json` record, and the usage store.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch.fakeapi.anthropic import ApiUsage, FakeAnthropic, text_reply, tool_reply
from agentlaunch.usage.store import Store
from testbed.agent_files import write_agent
from testbed.claude_tui import quit_with_ctrl_c, seed_home, tui_env
from testbed.pty_screen import Screen, run_to_exit, running
from tests.support.cli_runs import run_cli_inprocess
from tests.support.no_linux_lane import lane_env

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
STARTUP = "Please write out.txt."


@pytest.fixture
def root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="alnr-") as folder:
        yield Path(folder)


def status_json(env: dict[str, str], cwd: Path) -> list[dict[str, object]]:
    done = run_cli_inprocess("status", "--json", env=env, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout))


def wait_state(screen: Screen, env: dict[str, str], cwd: Path, state: str, timeout: float = 60) -> dict[str, object]:
    """Pump the screen until `status --json` shows the running agent in ``state``; its record."""
    end = time.monotonic() + timeout
    seen: list[object] = []
    while time.monotonic() < end:
        screen.pump(0.3)
        records = status_json(env, cwd)
        seen.append([r.get("state") for r in records])
        for record in records:
            if record.get("agent") == "native" and record.get("state") == state:
                return record
    raise AssertionError(f"status never showed {state!r} (saw {seen[-5:]}):\n{screen.text()}")


def settle(screen: Screen, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        screen.pump(0.1)


def setup(root: Path, agents_dir: Path, claude_bin: Path, api: FakeAnthropic, startup: str) -> tuple[dict[str, str], Path]:
    """A seeded home whose own settings have a status line, an agent `native`, and the environment to run it."""
    home, work = root / "home", root / "work"
    for folder in (home, work):
        folder.mkdir(mode=0o700)
    seed_home(home, [work])
    (home / ".claude").mkdir()
    own = {"statusLine": {"type": "command", "command": "echo MY-OWN-LINE"}}
    (home / ".claude" / "settings.json").write_text(json.dumps(own))
    write_agent(
        agents_dir,
        "native",
        {
            "display": "Native",
            "provider": "claude",
            "model": "claude-sonnet-4-5",
            "command": str(claude_bin),
            "working_dir": str(work),
            "startup": startup,
        },
    )
    assert api.server is not None
    keep = {**{k: os.environ[k] for k in os.environ if k.startswith("XDG_")}, **lane_env()}
    env = tui_env(
        api.server.url,
        home,
        {
            **keep,
            "AGENTLAUNCH_STATE_DIR": str(root / "state"),
            "AGENTLAUNCH_TITLE": "0",
            "AGENTLAUNCH_CONFIG_DIR": str(root / "config"),
        },
    )
    return env, work


def native_argv(agents_dir: Path) -> list[str]:
    return [sys.executable, "-m", "agentlaunch", "run", "native", "--agents-dir", str(agents_dir)]


def quit_native(screen: Screen) -> None:
    quit_with_ctrl_c(screen)


def test_crossing_the_compaction_threshold_marks_the_status_line_and_a_compaction_rearms_it(
    root: Path, claude_bin: Path, agents_dir: Path
) -> None:
    # 170,010 in context: past agentlaunch's threshold (200,000 - 33,000), short of Claude Code's own auto-compaction.
    api = FakeAnthropic(
        [text_reply("A long context.", ApiUsage(10, 0, 170_000, 5)), text_reply("Summary.", ApiUsage(900, 0, 0, 50))]
    )
    with api.serve():
        env, work = setup(root, agents_dir, claude_bin, api, "Read everything.")
        with running(native_argv(agents_dir), env, work) as screen:
            screen.wait_for(lambda t: "A long context." in t, 90, "the answer")
            screen.wait_for(lambda t: "⚠ ctx 170,010/200k (85.0%) · past compaction threshold" in t, 30, "the marked status line")
            record = wait_state(screen, env, work, "waiting")
            assert isinstance(record["to_compaction"], int) and record["to_compaction"] < 0
            settle(screen, 1.0)
            screen.child.send("/compact")
            settle(screen, 0.5)
            screen.child.send("\r")
            screen.wait_for(lambda t: "ompacted" in t, 90, "the compaction")
            assert "hook_report" not in screen.text()  # agentlaunch's plumbing never shows on Claude's screen
            # The next call starts from the summary: the line is no longer marked (Claude reruns it on a new message).
            settle(screen, 1.0)
            screen.child.send("go on")
            settle(screen, 0.5)
            screen.child.send("\r")
            screen.wait_for(lambda t: "MY-OWN-LINE │ ctx 10/200k" in t, 60, "the line after the compaction")
            line = next(t for t in screen.text().splitlines() if "MY-OWN-LINE │" in t)
            assert "⚠" not in line and "to compaction" in line
            record = wait_state(screen, env, work, "waiting")
            assert isinstance(record["to_compaction"], int) and record["to_compaction"] > 0
            quit_native(screen)


def test_status_asks_while_the_permission_prompt_waits_behind_a_proxy_and_the_store_has_each_call_once(
    root: Path, claude_bin: Path, agents_dir: Path
) -> None:
    """Behind a proxy, Claude Code's hooks still reach the launch: Claude Code sent its http hooks through HTTP_PROXY
    (measured: none arrived with it set); its hooks are command hooks on the launch's own sockets now, which no proxy
    setting touches. The launch no longer adds 127.0.0.1 to NO_PROXY: the user's own list names the fake API here, as
    it would a local API. Then a headless call of the same figures is stored as the native one (price and all)."""
    same = ApiUsage(6, 120, 13000, 4)
    api = FakeAnthropic(
        [
            tool_reply("Write", {"file_path": "out.txt", "content": "hi\n"}, ApiUsage(15, 2000, 11000, 40), text="Writing."),
            text_reply("Done writing.", same),
            text_reply("Headless answer.", same),
        ]
    )
    state_dir = root / "state"
    with api.serve():
        env, work = setup(root, agents_dir, claude_bin, api, STARTUP)
        dead = "http://127.0.0.1:9"  # nothing listens there: whatever goes through the proxy fails
        proxied = {"HTTP_PROXY": dead, "http_proxy": dead, "HTTPS_PROXY": dead, "https_proxy": dead}
        argv = native_argv(agents_dir)
        with running(argv, {**env, **proxied, "NO_PROXY": "corp.example,127.0.0.1"}, work) as screen:
            screen.wait_for(lambda t: "Do you want to create" in t, 90, "the permission prompt")
            asking = wait_state(screen, env, work, "asking")  # only the PreToolUse / PermissionRequest hooks tell it
            assert asking["provider"] == "claude"
            shown = run_cli_inprocess("status", "--line", "native", env=env, cwd=work)
            assert shown.returncode == 0, shown.stderr
            line = shown.stdout.decode()
            assert line.startswith("native · ASKING: needs you")
            for _ in range(10):  # Claude Code ignores keys in the dialog's first moments: send again until it closes
                settle(screen, 1.0)
                screen.child.send("1")
                settle(screen, 1.0)
                if "Do you want to create" not in screen.text():
                    break
            screen.wait_for(lambda t: "Done writing." in t, 60, "the answer")
            waiting = wait_state(screen, env, work, "waiting")
            assert waiting["calls"] == 2 and waiting["usage"] == {
                "input": 21,
                "cache_write": 2120,
                "cache_read": 24000,
                "output": 44,
                "reasoning": 0,
            }
            # Claude Code's status line: the user's own first, then agentlaunch's text (cost as agentlaunch priced it).
            screen.wait_for(lambda t: "MY-OWN-LINE │ ctx 13,126/200k" in t, 30, "the joined status line")
            shown = next(t for t in screen.text().splitlines() if "MY-OWN-LINE │" in t)
            assert "to compaction" in shown and "$0.0" in shown and "cache warm" in shown
            assert "hook_report" not in screen.text() and "claude.sock" not in screen.text()  # no plumbing on screen
            session_id = str(waiting["session_id"])
            quit_native(screen)
        headless = subprocess.run(
            [*argv, "say hello", "--json"],
            env=env,
            cwd=work,
            capture_output=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        assert headless.returncode == 0, headless.stderr.decode()[-2000:]
    head_session = next(json.loads(line)["session_id"] for line in headless.stdout.decode().splitlines() if '"session"' in line)
    with Store.open(state_dir / "usage.sqlite3") as store:
        calls = store.calls_for_session(session_id)
        (head,) = store.calls_for_session(head_session)
    got = [(c.usage.input, c.usage.cache_write, c.usage.cache_read, c.usage.output) for c in calls]
    assert got == [(15, 2000, 11000, 40), (6, 120, 13000, 4)]  # the fake API's figures, each call once
    assert all(c.model_reported == "claude-sonnet-4-5" and c.cost_usd for c in calls)
    assert calls[0].turn == calls[1].turn  # one turn: its last call is counted before the turn ends
    # The same figures from a headless call are stored as the native call's, at the same price.
    native = calls[1]
    assert native.usage == head.usage == native.usage.__class__(6, 120, 13000, 4)
    assert (native.model_reported, native.cost_usd, native.price_key) == (head.model_reported, head.cost_usd, head.price_key)


def test_a_spent_budget_ends_the_interface_with_exit_6_and_the_next_launch_is_refused(
    root: Path, claude_bin: Path, agents_dir: Path
) -> None:
    # The first call costs 100,000 x $3/M = $0.30, past a $0.05 session budget.
    api = FakeAnthropic([text_reply("Expensive answer.", ApiUsage(100_000, 0, 0, 5)), text_reply("never", ApiUsage(1, 0, 0, 1))])
    with api.serve():
        env, work = setup(root, agents_dir, claude_bin, api, "Spend.")
        conf = agents_dir / "native" / "agent.yaml"
        conf.write_text(conf.read_text() + "budget: {session_usd: 0.05}\n")
        screen = run_to_exit(native_argv(agents_dir), env, work)
        assert screen.child.exitstatus == 6, screen.text()
        assert "budget: stopped the agent" in screen.text()
        assert len(api.message_requests()) == 1
        again = subprocess.run(
            [sys.executable, "-m", "agentlaunch", "run", "native", "-c", "hi", "--agents-dir", str(agents_dir)],
            env=env,
            cwd=work,
            capture_output=True,
            timeout=120,
        )
        assert again.returncode == 6 and b"budget: not starting" in again.stderr
    with Store.open(root / "state" / "usage.sqlite3") as store:
        (session,) = store.list_sessions()
        assert [c.cost_usd for c in store.calls_for_session(session.session_id)] == [pytest.approx(0.300075, abs=1e-9)]


def test_the_merged_state_reaches_an_outer_terminal_only_once_it_answered_agentlaunchs_probe(
    root: Path, claude_bin: Path, agents_dir: Path
) -> None:
    """The test is the outer terminal: agentlaunch asks it as Claude Code asks (``ESC ] 7501 ; ? BEL``), tells it
    nothing until it answers, then passes on one merged report per state (app=agentlaunch: the permission the hooks
    named as blocked, the end of the turn as idle); Claude Code's own reports never reach it."""
    api = FakeAnthropic(
        [
            tool_reply("Write", {"file_path": "out.txt", "content": "hi\n"}, ApiUsage(15, 2000, 11000, 40), text="Writing."),
            text_reply("Done writing.", ApiUsage(6, 120, 13000, 4)),
        ]
    )
    raw = bytearray()
    with api.serve():
        env, work = setup(root, agents_dir, claude_bin, api, STARTUP)
        with running(native_argv(agents_dir), env, work) as screen:
            feed = screen.stream.feed

            def keep(data: bytes) -> None:
                raw.extend(data)
                feed(data)

            screen.stream.feed = keep  # type: ignore[method-assign]
            screen.wait_for(lambda t: b"\x1b]7501;?\x07" in raw, 60, "agentlaunch's probe of the outer terminal")
            screen.wait_for(lambda t: "Do you want to create" in t, 90, "the permission prompt")
            wait_state(screen, env, work, "asking")
            assert b"7501;state=" not in raw  # no answer yet: nothing told
            screen.child.send("\x1b]7501;?\x1b\\")  # the answer, as a terminal that speaks OSC 7501 gives it
            blocked = b"\x1b]7501;state=blocked:app=agentlaunch:kind=permission"
            screen.wait_for(lambda t: blocked in raw, 30, "the merged report: blocked, a permission")
            for _ in range(10):  # Claude Code ignores keys in the dialog's first moments: send again until it closes
                settle(screen, 1.0)
                screen.child.send("1")
                settle(screen, 1.0)
                if "Do you want to create" not in screen.text():
                    break
            screen.wait_for(lambda t: "Done writing." in t, 60, "the answer")
            wait_state(screen, env, work, "waiting")
            idle = b"\x1b]7501;state=idle:app=agentlaunch\x07"
            screen.wait_for(lambda t: raw.rfind(idle) > raw.find(blocked), 30, "the merged report: idle after the turn")
            assert b"app=claude-code" not in raw and "7501" not in screen.text()  # the CLI's own reports are taken out
            quit_native(screen)
