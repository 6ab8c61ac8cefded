"""Another local user cannot blind a native Claude launch (issue 41): with ``nobody`` flooding every channel it can
name, the launch in a private tmux server keeps its state hooks and its budget gate.

The hooks reach the launch only through sockets in its 0700 runtime folder (``hook_report``'s datagrams, the gate's
``hook_held`` stream socket); nothing listens on 127.0.0.1. The flood, run as ``nobody`` (``setpriv``; the tests
run as root), tries to hold 200 connections to the gate's socket and to send datagrams to the hook socket the whole
time, and says what it got: every attempt refused (EACCES). Meanwhile the crossing call's tool is refused (the
gate: two model calls, not three), the launch says ``paused: budget``, and a confirmed turn goes on and ends
(the state hooks: ``send --wait`` returns the answer).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.fakeapi.anthropic import ApiUsage, FakeAnthropic, text_reply, tool_reply
from agentlaunch.providers.native.claude import HELD_NAME, SOCKET_NAME
from agentlaunch.providers.native.claude_source import UNDECIDED
from tests.e2e.test_budget_pause_e2e import _paused, _record
from tests.e2e.test_tmux_claude import claude_agent, cli, pane_of, say, screen, settled
from tests.e2e.test_tmux_claude import env as tmux_env
from tests.support.waits import wait_for

__all__ = ["tmux_env"]  # the fixture, used by name

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

FLOOD = r"""
import errno, json, os, signal, socket, sys, time
held_path, dgram_path = sys.argv[1], sys.argv[2]
seen = {"uid": os.getuid(), "connected": 0, "sent": 0, "errors": {}}
held = []
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))

def note(exc):
    name = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
    seen["errors"][name] = seen["errors"].get(name, 0) + 1

with open(sys.argv[3], "w") as ready:
    ready.write("started")
while not stop:
    while len(held) < 200 and not stop:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(held_path)
            held.append(s)
            seen["connected"] += 1
        except OSError as exc:
            s.close()
            note(exc)
            break
    d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        d.sendto(b'{"event": "Stop"}\n{}', dgram_path)
        seen["sent"] += 1
    except OSError as exc:
        note(exc)
    finally:
        d.close()
    time.sleep(0.05)
print(json.dumps(seen))
"""


def _runtime_folder(pid: int) -> Path:
    """The launch's runtime folder: the one whose ``.owner`` names its pid."""
    bases = {Path("/tmp"), *([Path(os.environ["XDG_RUNTIME_DIR"])] if os.environ.get("XDG_RUNTIME_DIR") else [])}
    for base in bases:
        for owner in base.glob("agentlaunch-*/.owner"):
            if owner.read_text().split()[0] == str(pid):
                return owner.parent
    raise AssertionError(f"no runtime folder of pid {pid}")


def _flood(folder: Path, ready: Path) -> subprocess.Popen[bytes]:
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    argv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", python, "-c", FLOOD]
    argv += [str(folder / HELD_NAME), str(folder / SOCKET_NAME), str(ready)]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd="/")


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv to run as nobody")
def test_a_flood_by_another_user_leaves_the_launchs_state_hooks_and_budget_gate_alone(
    socket: str, tmux_env: dict[str, str], anthropic: FakeAnthropic, agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    env = tmux_env
    name = claude_agent(
        agents_dir, "spender", claude_bin, workdir, allowed_tools=["Bash"], budget={"session_usd": 0.05, "on_spent": "pause"}
    )
    anthropic.push(
        text_reply("Ready.", ApiUsage(10, 0, 0, 5)),
        tool_reply("Bash", {"command": "echo hi", "description": "Print hi"}, ApiUsage(100_000, 0, 0, 30)),
        text_reply("One more turn, confirmed.", ApiUsage(8, 0, 0, 9)),
    )
    assert cli(env, workdir, "tmux", "up", name, "--socket", socket, "--no-attach", "--wait", "60").returncode == 0
    pane = pane_of(socket, name)
    wait_for(lambda: settled(env, workdir, name), timeout=90, what="the interface waiting after its startup turn")
    record: dict[str, Any] | None = _record(env, workdir)
    assert record is not None
    folder = _runtime_folder(int(record["pid"]))
    ready = Path("/tmp") / f"al-flood-{os.getpid()}-{folder.name}"
    flood = _flood(folder, ready)
    try:
        wait_for(lambda: flood.poll() is not None or ready.exists(), timeout=30, what="the flood started")
        assert flood.poll() is None, flood.communicate()
        say(socket, pane, "run echo hi")
        paused = wait_for(lambda: _paused(env, workdir), timeout=90, what="paused: budget")
        assert paused["state_reason"] == "budget"
        assert len(anthropic.message_requests()) == 2, "the crossing call, and none after it: its tool was refused"
        resumed = cli(env, workdir, "resume-budget", name)
        assert resumed.returncode == 0, resumed
        sent = cli(env, workdir, "send", name, "go on", "--wait", "--timeout", "120")
        assert sent.returncode == 0 and "One more turn, confirmed." in sent.stdout.decode(), sent
    finally:
        flood.terminate()
        out, err = flood.communicate(timeout=30)
        ready.unlink(missing_ok=True)
    seen = json.loads(out)
    assert seen["uid"] != 0 and seen["connected"] == 0 and seen["sent"] == 0, (seen, err)
    assert set(seen["errors"]) == {"EACCES"} and sum(seen["errors"].values()) > 10, seen
    assert screen(socket, pane)
    assert cli(env, workdir, "tmux", "down", "--socket", socket, "--timeout", "60").returncode == 0


def test_a_tool_claude_code_starts_while_its_call_still_streams_is_refused_with_the_reason_on_the_row(
    socket: str, tmux_env: dict[str, str], anthropic: FakeAnthropic, agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    """The fake API waits a second before each event: Claude Code 2.1.332 starts the tool (its PreToolUse hook) once
    the tool's block is whole, and writes the call's transcript line only after the tool ran, so the gate cannot
    count the call. Near the limit ($1: one Sonnet call can cost up to $2.16) the bound does not allow it either: the
    tool is refused (it never runs: no call with its result) and the row says why."""
    env = tmux_env
    name = claude_agent(
        agents_dir, "spender", claude_bin, workdir, allowed_tools=["Bash"], budget={"session_usd": 1, "on_spent": "pause"}
    )
    slow = tool_reply("Bash", {"command": "touch ran.txt", "description": "Touch"}, ApiUsage(100, 0, 0, 30), delay=1.0)
    anthropic.push(text_reply("Ready.", ApiUsage(10, 0, 0, 5)), slow, text_reply("Never sent.", ApiUsage(8, 0, 0, 9)))
    assert cli(env, workdir, "tmux", "up", name, "--socket", socket, "--no-attach", "--wait", "60").returncode == 0
    pane = pane_of(socket, name)
    wait_for(lambda: settled(env, workdir, name), timeout=90, what="the interface waiting after its startup turn")
    say(socket, pane, "touch the file")

    def refused() -> dict[str, Any] | None:
        record = _record(env, workdir)
        return record if record is not None and str(record.get("state_reason")).startswith(UNDECIDED) else None

    record = wait_for(refused, timeout=120, what="the tool refused, the reason on the row")
    assert record["state"] == "waiting"
    assert "at its worst that call could spend the session budget of agent 'spender' ($1.00)" in record["state_reason"]
    assert not (workdir / "ran.txt").exists()
    assert len(anthropic.message_requests()) == 2, "the refusal ended the turn: no call with the tool's result"
    assert cli(env, workdir, "tmux", "down", "--socket", socket, "--timeout", "60").returncode == 0


def test_tools_claude_code_starts_while_their_call_still_streams_run_when_the_budget_is_far_from_spent(
    socket: str, tmux_env: dict[str, str], anthropic: FakeAnthropic, agents_dir: Path, workdir: Path, claude_bin: Path
) -> None:
    """The same slowed stream (0.3 s before each event), one message asking for two tools, a $5 budget with almost
    nothing spent: their call's line cannot be read in time, but even at their worst (each tool counted as a call of
    its own: 2 x $2.16) they cannot spend the budget, so both run (at once: the gate does not wait for the line)
    and the next call carries their results."""
    env = tmux_env
    name = claude_agent(
        agents_dir, "spender", claude_bin, workdir, allowed_tools=["Bash"], budget={"session_usd": 5, "on_spent": "pause"}
    )
    second = ("Bash", {"command": "touch two.txt", "description": "Touch two"})
    slow = tool_reply(
        "Bash", {"command": "touch one.txt", "description": "Touch one"}, ApiUsage(100, 0, 0, 30), delay=0.3, more=(second,)
    )
    anthropic.push(text_reply("Ready.", ApiUsage(10, 0, 0, 5)), slow, text_reply("Both touched.", ApiUsage(8, 0, 0, 9)))
    assert cli(env, workdir, "tmux", "up", name, "--socket", socket, "--no-attach", "--wait", "60").returncode == 0
    pane = pane_of(socket, name)
    wait_for(lambda: settled(env, workdir, name), timeout=90, what="the interface waiting after its startup turn")
    say(socket, pane, "touch the files")
    wait_for(lambda: len(anthropic.message_requests()) >= 3, timeout=120, what="the call with the tools' results")
    assert (workdir / "one.txt").exists() and (workdir / "two.txt").exists()  # they ran before that call was made
    requests = anthropic.message_requests()
    results = [
        block
        for message in requests[2].body["messages"]
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    # Both ran; none was refused. (Claude Code 2.1.332 reports the second one's result as "[Tool result missing due
    # to internal error]" on this slowed stream with no budget and no hook at all too, measured: its quirk, not ours.)
    assert len(results) == 2 and not any("agentlaunch" in json.dumps(block) for block in results), results
    first = next(block for block in results if block["tool_use_id"] == "toolu_fake_0002")
    assert first["content"] == "(Bash completed with no output)" and not first["is_error"]

    def answered() -> dict[str, Any] | None:
        record = _record(env, workdir)
        return record if record is not None and record.get("state") == "waiting" and record.get("turns", 0) >= 2 else None

    record = wait_for(answered, timeout=90, what="the turn over, its answer read")
    assert not str(record.get("state_reason") or "").startswith(UNDECIDED)
    assert len(anthropic.message_requests()) == 3
    assert cli(env, workdir, "tmux", "down", "--socket", socket, "--timeout", "60").returncode == 0
