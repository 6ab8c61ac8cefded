"""Claude Code 2.1.332's ``PreToolUse`` command hook, the budget gate's way in: what each outcome does to the tool.

The budget's gate is a command hook (``providers/native/hook_ask.py``) since an http hook fails open and another
local user could make every one fail (issue 41). This pins, against the pinned binary (headless, the fake API),
the outcomes the gate relies on or avoids:

- ``hook_ask`` with no launch to reach prints ``tool_refusal``'s JSON: the tool does not run and the turn ends,
  no further model call (it fails closed);
- exit code 2 blocks the tool (its stderr goes to the model as the tool's error; the turn goes on);
- exit code 1 (a crash) lets the tool run: a non-blocking error;
- a hook still running at its ``timeout`` is stopped and the tool runs: so ``hook_ask`` gives up first
  (``ASK_WAIT`` < ``claude_settings.GATE_TIMEOUT``) and refuses.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from agentlaunch.fakeapi.anthropic import ApiUsage, FakeAnthropic, claude_env, text_reply, tool_reply
from agentlaunch.providers.native.claude_settings import ASKER
from agentlaunch.providers.native.hook_socket import script_argv
from testbed.claude_tui import seed_home

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

TIMEOUT = 3
"""The hook's ``timeout`` (seconds): ``slow.txt``'s hook sleeps past it."""
FILES = ("crash.txt", "blocked.txt", "slow.txt", "unreachable.txt")

HOOK = """
import json, subprocess, sys, time
raw = sys.stdin.buffer.read()
name = json.loads(raw)["tool_input"]["file_path"].rsplit("/", 1)[-1]
if name == "crash.txt":
    sys.exit(1)
if name == "blocked.txt":
    sys.stderr.write("blocked by exit code 2")
    sys.exit(2)
if name == "slow.txt":
    time.sleep(30)
if name == "unreachable.txt":
    asked = subprocess.run(ASK, input=raw, capture_output=True)
    sys.stdout.buffer.write(asked.stdout)
"""


def test_a_pretooluse_command_hook_blocks_on_exit_2_and_refusal_and_lets_the_tool_run_on_a_crash_or_timeout(
    claude_bin: Path,
) -> None:
    with tempfile.TemporaryDirectory(prefix="alcg-") as folder:
        root = Path(folder)
        home, work = root / "home", root / "work"
        home.mkdir()
        work.mkdir()
        seed_home(home, [work])
        ask = script_argv(sys.executable, ASKER, str(root / "no-launch.sock"), "PreToolUse")
        script = root / "hook.py"
        script.write_text(f"ASK = {ask!r}\n{HOOK}")
        hook = {"type": "command", "command": shlex.join([sys.executable, str(script)]), "timeout": TIMEOUT}
        calls = [
            tool_reply("Write", {"file_path": str(work / name), "content": "x\n"}, ApiUsage(10, 0, 0, 5), text=f"Step {name}.")
            for name in FILES
        ]
        api = FakeAnthropic([*calls, text_reply("Never sent.")], default=text_reply("Side.", ApiUsage(1, 0, 0, 1)))
        with api.serve() as server:
            argv = [
                str(claude_bin),
                "-p",
                "write the files",
                "--session-id",
                str(uuid.uuid4()),
                "--model",
                "claude-sonnet-4-5",
                "--permission-mode",
                "acceptEdits",
                "--settings",
                json.dumps({"hooks": {"PreToolUse": [{"hooks": [hook]}]}}),
            ]
            env = {**os.environ, **claude_env(server.url, home)}
            done = subprocess.run(argv, cwd=work, env=env, capture_output=True, timeout=240, check=False)
            main_calls = [r for r in api.message_requests() if "write the files" in json.dumps(r.body)]
        written = sorted(name for name in FILES if (work / name).exists())
    assert written == ["crash.txt", "slow.txt"], done
    # Each Write was one call; the refusal ended the turn: no call after the fourth ("Never sent." unasked).
    assert len(main_calls) == len(FILES), done
    assert "blocked by exit code 2" in json.dumps(main_calls[2].body), "exit 2's stderr went to the model"
