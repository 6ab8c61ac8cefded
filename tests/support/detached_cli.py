"""A provider CLI that starts a detached helper holding its terminal, then fails mid-turn.

Enough of Claude Code's stream-json for a launch: ``system/init`` at start,
then, on the first user line, a ``setsid`` child (``sleep``) whose stdout and
stderr are this process's PTY, its pid written to ``$DETACHED_PID_FILE``, and
a piece of streamed text. Then, by ``$DETACHED_MODE``:

- ``die``: exit with code 3 in the middle of the turn (the helper keeps the PTY open);
- ``hang``: never finish the turn; an interrupt request makes it exit with code 0
  when ``$DETACHED_ON_INTERRUPT`` is ``exit``, and is ignored otherwise;
  end of stdin makes it exit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


def emit(obj: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> int:
    args = sys.argv[1:]
    session = args[args.index("--session-id") + 1] if "--session-id" in args else "detached-session"
    emit({"type": "system", "subtype": "init", "session_id": session, "model": "fake-1"})
    if not sys.stdin.readline():
        return 0
    helper = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, start_new_session=True)  # PTY as stdout/stderr
    with open(os.environ["DETACHED_PID_FILE"], "w") as fh:
        fh.write(str(helper.pid))
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "working on it"}}
    emit({"type": "stream_event", "event": delta})
    if os.environ.get("DETACHED_MODE") == "die":
        print("fatal: the detached test CLI gives up mid-turn", file=sys.stderr, flush=True)
        os._exit(3)
    for line in sys.stdin:
        if '"interrupt"' in line and os.environ.get("DETACHED_ON_INTERRUPT") == "exit":
            os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
