"""The child of one ``agentlaunch acp`` prompt (``agentlaunch.cli.acp_turn.TurnProcess``) with a stand-in child: its
event lines read whatever they hold, its permission answers written on the pipe, its end."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from agentlaunch.cli.acp_turn import EVENT_LINE, TurnProcess, failure_text

CHILD = r"""
import os, sys
prompt = sys.stdin.read()
out = sys.stdout
out.write("x" * (EVENT_LINE + 10) + "\n")  # over the bound: skipped
out.write('{"event": "text", "text": "after the long line"}\n')
out.write("not json\n[1]\n")
out.write('{"event": "text", "text": "' + prompt + '"}\n')
out.flush()
answer = os.read(int(sys.argv[1]), 10)  # the permission answer, on the ask pipe
out.write('{"event": "text", "text": "' + answer.decode().strip() + '"}\n')
out.write('{"event": "turn_end"}')  # no newline at the end
out.flush()
sys.stderr.write("working\nerror: it went wrong\nhint: do it again\n")
sys.exit(3)
"""


def test_events_skip_what_is_no_event_and_answers_reach_the_child() -> None:
    async def go() -> tuple[list[dict[str, Any]], int, str]:
        script = CHILD.replace("EVENT_LINE", str(EVENT_LINE))
        turn = await TurnProcess.start(lambda fd: [sys.executable, "-c", script, str(fd)], "the prompt")
        seen = []
        async for event in turn.events():
            seen.append(event)
            if event.get("text") == "the prompt":
                turn.answer("always")
        code, stderr = await turn.wait()
        return seen, code, stderr

    seen, code, stderr = asyncio.run(go())
    assert [e.get("text") for e in seen] == ["after the long line", "the prompt", "a", None]
    assert seen[-1] == {"event": "turn_end"}
    assert code == 3
    assert failure_text(stderr) == "error: it went wrong\nhint: do it again"


def test_end_terminates_a_child_that_runs_on() -> None:
    async def go() -> int | None:
        turn = await TurnProcess.start(lambda fd: [sys.executable, "-c", "import time; time.sleep(60)"], "")
        await turn.end(grace=5)
        turn.answer("once")  # the child is gone: nothing to answer, no error
        return turn.proc.returncode

    assert asyncio.run(go()) == -15
    assert json.dumps(failure_text("")) == '"the turn failed with no message"'
